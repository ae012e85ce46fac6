package results

import (
	"bytes"
	"fmt"
	"github.com/valnet/valnet/results/eventlog"
	"html/template"
	"io"
	"strconv"
	"strings"
	"time"
)

// WriteHTMLReport writes report.html: one self-contained page (inline CSS,
// charts as inline SVG, no script, no external reference) built from the
// events of a run and their summary s (Summarize(events), computed once by
// the caller for every report of the run). It shows the run header and
// verdict (the same ResultLine as the text table), the chain numbers,
// commit round per height, block interval over time with fault windows
// shaded, a validator × height heat map of absent and nil precommits,
// signing latency distributions, and the validator, expectation and fault
// tables. Every string taken from the events is escaped by html/template.
// A chart that cannot be drawn leaves a note in its place.
func WriteHTMLReport(w io.Writer, s *Summary, events []eventlog.Event) error {
	return summarizeEvents(events).writeHTMLReport(w, s)
}

// WriteHTMLReport writes report.html of the events added (see the function
// WriteHTMLReport), its charts from the rows and samples the Summarizer
// keeps; it calls Summary first.
func (z *Summarizer) WriteHTMLReport(w io.Writer) error { return z.writeHTMLReport(w, z.Summary()) }

func (z *Summarizer) writeHTMLReport(w io.Writer, s *Summary) error {
	z.Summary()
	var buf bytes.Buffer
	if err := htmlTemplate.Execute(&buf, newHTMLData(s, z.chartData())); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

var htmlTemplate = template.Must(template.New("report").Parse(htmlTemplateText))

// htmlData is what the template shows; every value is derived from the
// Summary or, for the charts, from the events.
type htmlData struct {
	Title       string
	S           *Summary
	Result      string // ResultLine
	ResultClass string // pass | fail | error
	Duration    string
	Chain       []htmlKV
	Rounds      chart
	Interval    chart
	Heatmap     chart
	HeatmapList []htmlKV // validator -> heights with absent/nil precommits
	Latency     chart
	LatencyLog  bool
	Remote      bool
	Validators  []htmlValidator
	Devices     *deviceTables    // nil without shared devices
	Threshold   *thresholdTables // nil without threshold signers
	PeerNodes   *peerNodeTables  // nil without non-validator nodes
	Expect      []htmlExpectation
	Faults      []htmlFault
	Models      []htmlKV // validators whose signer is a model: name -> label
	Overloaded  string   // OverloadedNotice when the host was overloaded
	Warned      bool     // some expectation carries a warning

	// A model run: ModelLabel, its calibration and notes, and
	// unavailableText ("" when the run can tell every value).
	Model, Calibration, NotRecorded string
	ModelNotes                      []string
}

type htmlKV struct{ K, V string }

type htmlValidator struct {
	Name, Address, Signer              string
	Missed, Nil, Proposals, Quorum     string
	Proposal, Prevote, Precommit       string
	SignErrors                         int
	Bad                                bool // missed or nil precommits, sign errors
	SignerSide, Transport, SigsMatched string
	HasRemote                          bool
	// Why votes were missed: the counts, late votes as text (n/a when the
	// run cannot tell them).
	MissedN, LongestRun    int
	Causes                 MissedByCause
	LatePrevotes, LatePrec string
}

type htmlExpectation struct {
	OK                              bool
	Subject, Bounds, Value, Warning string
}

type htmlFault struct {
	Action, Target, Start, End, Length, Detail string
}

func newHTMLData(s *Summary, cd *chartData) *htmlData {
	d := &htmlData{S: s, Result: ResultLine(s)}
	d.Title = "valnet report: " + orDash(s.Scenario)
	switch {
	case strings.HasPrefix(d.Result, "RESULT: PASS"):
		d.ResultClass = "pass"
	case strings.HasPrefix(d.Result, "RESULT: FAIL"):
		d.ResultClass = "fail"
	default:
		d.ResultClass = "error"
	}
	d.Duration = s.DurationText()
	if overloaded(s) {
		d.Overloaded = overloadedLine(s)
	}
	if s.Model != nil {
		d.Title += " (MODEL)"
		d.Model, d.Calibration, d.ModelNotes = ModelLabel(s.Model), s.Model.Calibration, s.Model.Notes
		d.NotRecorded = unavailableText(s.Unavailable)
	}
	d.Chain = chainRows(s)
	d.Devices = newDeviceTables(s)
	d.Threshold = newThresholdTables(s)
	d.PeerNodes = newPeerNodeTables(s)

	d.Rounds = guardChart(func() chart { return roundsChart(s, cd) })
	d.Interval = guardChart(func() chart { return intervalChart(s, cd) })
	d.Heatmap = guardChart(func() chart { return heatmapChart(s, cd) })
	d.HeatmapList = heatmapList(s, cd)
	d.Latency = guardChart(func() (c chart) {
		c, d.LatencyLog = latencyChart(s, cd)
		return c
	})

	for _, v := range s.Validators {
		l := v.SignLatencyMS
		row := htmlValidator{
			Name: v.Name, Address: v.Address, Signer: orDash(v.Signer),
			Missed:    fmt.Sprintf("%d/%d", v.MissedPrecommits, v.PrecommitsCounted),
			Nil:       strconv.Itoa(v.NilPrecommits),
			Quorum:    s.quorumText(&v),
			Proposals: fmt.Sprintf("%d/%d", v.Proposals.Made, v.Proposals.Expected),
			Proposal:  p50p99(l.Proposal), Prevote: p50p99(l.Prevote), Precommit: p50p99(l.Precommit),
			SignErrors: v.SignErrors,
			Bad:        v.MissedPrecommits > 0 || v.NilPrecommits > 0 || v.SignErrors > 0,
			SignerSide: "-", Transport: "-", SigsMatched: "-",
			MissedN: v.MissedPrecommits, LongestRun: v.ConsecutiveMissedMax, Causes: v.MissedByCause,
			LatePrevotes: s.naOr("late_prevotes", strconv.Itoa(v.LatePrevotes)), LatePrec: s.naOr("late_precommits", strconv.Itoa(v.LatePrecommits)),
		}
		if v.SignerLatencyMS != nil {
			d.Remote, row.HasRemote = true, true
			row.SignerSide = p50p99(v.SignerLatencyMS.All)
			row.SigsMatched = "0"
		}
		if o := v.TransportOverheadMS; o != nil {
			d.Remote, row.HasRemote = true, true
			row.Transport, row.SigsMatched = p50p99(*o), strconv.Itoa(o.Count)
		}
		d.Validators = append(d.Validators, row)
		if strings.Contains(v.Signer, "model:") {
			d.Models = append(d.Models, htmlKV{v.Name, v.Signer})
		}
	}

	for _, e := range shownExpectations(s.Expectations) {
		d.Expect = append(d.Expect, htmlExpectation{OK: e.OK, Subject: expectationSubject(e), Bounds: formatBounds(e.Min, e.Max),
			Value: expectationValue(e), Warning: e.Warning})
		d.Warned = d.Warned || e.Warning != ""
	}

	for _, f := range s.Faults {
		hf := htmlFault{Action: f.Action, Target: orDash(f.Target), Start: formatSeconds(f.StartMS), End: "still active at the end", Length: "-", Detail: f.Detail}
		if f.EndMS > 0 {
			hf.End = formatSeconds(f.EndMS)
			hf.Length = (time.Duration(f.EndMS-f.StartMS) * time.Millisecond).String()
		}
		d.Faults = append(d.Faults, hf)
	}
	return d
}

// chainRows: the Chain block of the text table, as label/value rows.
func chainRows(s *Summary) []htmlKV {
	rows := []htmlKV{
		{"heights committed", heightsText(s.Heights)},
		{"heights with round change", roundsText(s.Rounds)},
		{"block interval", intervalText(s.BlockIntervalMS)},
	}
	for _, hl := range s.Halts {
		rows = append(rows, htmlKV{"halt", haltText(hl)})
	}
	rows = append(rows, htmlKV{"double signs", strconv.Itoa(s.DoubleSigns)})
	for _, ds := range s.DoubleSignDetails {
		rows = append(rows, htmlKV{"", fmt.Sprintf("%s h%d r%d %s: %s", ds.Validator, ds.Height, ds.Round, ds.Phase, formatBlockIDs(ds.BlockIDs))})
	}
	if n := len(s.NodeErrors); n > 0 {
		rows = append(rows, htmlKV{"node errors", fmt.Sprintf("%d, events may be missing", n)})
		for i, e := range s.NodeErrors {
			if i == 20 {
				rows = append(rows, htmlKV{"", fmt.Sprintf("… and %d more", n-i)})
				break
			}
			rows = append(rows, htmlKV{"", orDash(e.Node) + ": " + e.Error})
		}
	}
	if s.Load != nil {
		rows = append(rows, htmlKV{"load", loadText(s.Load)})
	}
	if s.Host != nil {
		rows = append(rows, htmlKV{"host", hostText(s.Host)})
	}
	rows = append(rows, htmlKV{"stop reason", s.StopReason})
	if s.Error != "" {
		rows = append(rows, htmlKV{"error", s.Error})
	}
	rows = append(rows, htmlKV{"duration", s.DurationText()})
	return rows
}

// heatmapList names, per validator, the heights whose precommit was absent
// or nil: the heat map as selectable text.
func heatmapList(s *Summary, cd *chartData) []htmlKV {
	if len(cd.c.heights) == 0 {
		return nil
	}
	first, cells, _ := precommitCells(s, cd.c)
	const maxListed = 40
	var out []htmlKV
	for i, v := range s.Validators {
		var parts []string
		for _, st := range []cellState{cellAbsent, cellNil} {
			var hs []string
			n := 0
			for j, c := range cells[i] {
				if c != st {
					continue
				}
				if n < maxListed {
					hs = append(hs, strconv.FormatInt(first+int64(j), 10))
				}
				n++
			}
			if n == 0 {
				continue
			}
			name := "absent"
			if st == cellNil {
				name = "nil"
			}
			txt := name + " at " + strings.Join(hs, ", ")
			if n > maxListed {
				txt += fmt.Sprintf(" … (%d in all)", n)
			}
			parts = append(parts, txt)
		}
		if len(parts) > 0 {
			out = append(out, htmlKV{v.Name, strings.Join(parts, "; ")})
		}
	}
	return out
}

func formatSeconds(ms int64) string {
	return strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64) + " s"
}
