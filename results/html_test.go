package results

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/results/eventlog"
	"html"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// htmlReport renders the report of events, failing the test on error.
func htmlReport(t testing.TB, events []eventlog.Event) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHTMLReport(&buf, Summarize(events), events); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// richEvents is the fixture plus what it lacks: remote signers (v3, v4 sign
// through one, seen from both sides), a model signer (v3), two fault
// windows (one never ends) and hostile strings in labels and details.
func richEvents(t testing.TB) []eventlog.Event {
	evs := slices.Clone(readFixture(t))
	start := evs[0].Time
	evs[0].Validators = slices.Clone(evs[0].Validators)
	evs[0].Validators[2].Signer = "remote(tmkms)+model:yubihsm2 <script>alert(1)</script>"
	evs[0].Validators[3].Signer = "remote(horcrux)+latency(fixed 200ms, precommit)"
	var out []eventlog.Event
	for _, ev := range evs {
		out = append(out, ev)
		if ev.Kind == eventlog.KindSign && ev.Error == "" && (ev.Validator == "v3" || ev.Validator == "v4") {
			sig := ev
			sig.Side = eventlog.SideSigner
			sig.LatencyMS = max(ev.LatencyMS*0.8-0.02, 0.01)
			out[len(out)-1] = sig // the signer answers before the node sees it
			out = append(out, ev)
		}
	}
	fault := func(ms int, action, target, state, detail string) eventlog.Event {
		return eventlog.Event{Time: start.Add(time.Duration(ms) * time.Millisecond), Kind: eventlog.KindFault, Action: action, Validator: target, State: state, Detail: detail}
	}
	out = append(out,
		fault(3000, "signer-delay", "v4", eventlog.FaultStart, "delay 2s <script>x</script>"),
		fault(9000, "signer-delay", "v4", eventlog.FaultEnd, ""),
		fault(12500, "signer-outage", "v1", eventlog.FaultStart, "signer unreachable"))
	slices.SortStableFunc(out, func(a, b eventlog.Event) int { return a.Time.Compare(b.Time) })
	return out
}

var reSVG = regexp.MustCompile(`(?s)<svg\b.*?</svg>`)

// sectionOf returns the markup of <section id="id">…</section>.
func sectionOf(t *testing.T, page, id string) string {
	t.Helper()
	i := strings.Index(page, `<section id="`+id+`">`)
	if i < 0 {
		t.Fatalf("no section %q", id)
	}
	j := strings.Index(page[i:], "</section>")
	if j < 0 {
		t.Fatalf("section %q not closed", id)
	}
	return page[i : i+j]
}

// checkSelfContained asserts what makes the page work offline and safely.
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "<object", "<embed", "@import", "@font-face", "url(", "data:"} {
		if strings.Contains(strings.ToLower(page), bad) {
			t.Errorf("report contains %q", bad)
		}
	}
	if m := regexp.MustCompile(`(?i)<[a-z][^>]*\s(src|href|xlink:href|action)\s*=`).FindString(page); m != "" {
		t.Errorf("report has a tag referencing a resource: %q", m)
	}
	// "http" only in the SVG namespace declarations.
	rest := regexp.MustCompile(`xmlns(:xlink)?="http://www\.w3\.org/(2000/svg|1999/xlink)"`).ReplaceAllString(page, "")
	if i := strings.Index(strings.ToLower(rest), "http"); i >= 0 {
		t.Errorf("report references %q", rest[max(i-40, 0):min(i+60, len(rest))])
	}
	// Generic font families only: nothing to find or load.
	generic := []string{"sans-serif", "serif", "monospace", "system-ui", "ui-monospace"}
	for _, m := range regexp.MustCompile(`font-family:\s*([^;"}]*)`).FindAllStringSubmatch(page, -1) {
		for _, f := range strings.Split(m[1], ",") {
			if !slices.Contains(generic, strings.TrimSpace(f)) {
				t.Errorf("font family %q in %q: want generic families only", f, m[0])
			}
		}
	}
	for _, svg := range reSVG.FindAllString(page, -1) {
		for _, m := range regexp.MustCompile(`font-family:[^;"]*`).FindAllString(svg, -1) {
			if m != "font-family:sans-serif" {
				t.Errorf("chart font %q, want sans-serif", m)
			}
		}
	}
	// Every SVG is well-formed XML with selectable text.
	for i, svg := range reSVG.FindAllString(page, -1) {
		dec := xml.NewDecoder(strings.NewReader(svg))
		for {
			_, err := dec.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Errorf("svg %d is not well-formed: %v", i, err)
				break
			}
		}
		if !strings.Contains(svg, "<text") {
			t.Errorf("svg %d has no <text>", i)
		}
		if strings.Contains(svg, "<?xml") || strings.Contains(svg, "<!--") {
			t.Errorf("svg %d keeps its XML prelude", i)
		}
	}
}

// TestHTMLReportFixture checks the report of the fixture run against its
// summary and text table (not against fixed numbers: the fixture grows as
// the summary does).
func TestHTMLReportFixture(t *testing.T) {
	evs := readFixture(t)
	s := Summarize(evs)
	page := htmlReport(t, evs)
	text := html.UnescapeString(page)
	checkSelfContained(t, page)

	if !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.HasSuffix(strings.TrimSpace(page), "</html>") {
		t.Errorf("not a whole HTML document")
	}
	for _, id := range []string{"run", "result", "chain", "rounds", "interval", "precommits", "latency", "validators", "expectations", "faults", "footer"} {
		if !strings.Contains(page, `id="`+id+`"`) {
			t.Errorf("no element with id %q", id)
		}
	}
	// Header: run identity and the same verdict as the text table.
	header := html.UnescapeString(page[strings.Index(page, `<header id="run">`):strings.Index(page, "</header>")])
	for _, want := range []string{"<dd>" + s.Scenario + "</dd>", "<dd>" + s.Backend + "</dd>", "<dd>" + s.ChainID + "</dd>",
		"<dd>" + strconv.FormatInt(s.Seed, 10) + "</dd>", "<dd>" + s.StopReason + "</dd>",
		"<dd>" + (time.Duration(s.DurationMS) * time.Millisecond).String() + "</dd>",
		`<div class="result ` + strings.ToLower(strings.Fields(ResultLine(s))[1]) + `" id="result">` + ResultLine(s) + `</div>`} {
		if !strings.Contains(header, want) {
			t.Errorf("header lacks %q", want)
		}
	}
	// Chain: every value of the text table's Chain block.
	var table bytes.Buffer
	if err := WriteTable(&table, s); err != nil {
		t.Fatal(err)
	}
	chain := html.UnescapeString(sectionOf(t, page, "chain"))
	block := strings.SplitN(strings.SplitN(table.String(), "\nChain\n", 2)[1], "\n\n", 2)[0]
	for _, line := range strings.Split(block, "\n") {
		f := regexp.MustCompile(`^  (.*?)\s{2,}(.*)$`).FindStringSubmatch(line)
		if f == nil {
			continue
		}
		if !strings.Contains(chain, "<td>"+f[2]+"</td>") {
			t.Errorf("chain section lacks %s: %q", f[1], f[2])
		}
	}
	// Each chart section holds exactly one inline SVG chart.
	for _, id := range []string{"rounds", "interval", "precommits", "latency"} {
		sec := sectionOf(t, page, id)
		if n := strings.Count(sec, "<svg "); n != 1 {
			t.Errorf("section %s has %d <svg>, want 1", id, n)
		}
		if !strings.Contains(sec, `class="chart" role="img"`) {
			t.Errorf("section %s: svg not marked as a chart", id)
		}
	}
	if n := strings.Count(page, "<svg "); n != 4 {
		t.Errorf("%d svg charts, want 4", n)
	}
	// Heat map: its legend counts agree with the summary, and the
	// validators with absent precommits are listed.
	absent, nils := 0, 0
	for _, v := range s.Validators {
		absent += v.MissedPrecommits
		nils += v.NilPrecommits
	}
	pc := sectionOf(t, page, "precommits")
	for _, want := range []string{fmt.Sprintf(">absent (%d)<", absent), fmt.Sprintf(">nil (%d)<", nils), ">present (", ">unknown ("} {
		if !strings.Contains(pc, want) {
			t.Errorf("precommits section lacks %q", want)
		}
	}
	for _, v := range s.Validators {
		if v.MissedPrecommits > 0 && !regexp.MustCompile(`<code>`+v.Name+`</code>: [^<]*absent at `).MatchString(pc) {
			t.Errorf("precommits list lacks %s's absences", v.Name)
		}
	}
	// Latency spans 0.05..200 ms: log scale, one panel per phase.
	lat := sectionOf(t, page, "latency")
	for _, want := range []string{">proposal<", ">prevote<", ">precommit<", "Logarithmic x axis", ">1000<"} {
		if !strings.Contains(lat, want) {
			t.Errorf("latency section lacks %q", want)
		}
	}
	// Validators: the text table's columns; one row each.
	vals := html.UnescapeString(sectionOf(t, page, "validators"))
	for _, want := range []string{"<th>validator</th>", "<th>signer</th>", "<th>missed</th>", "<th>nil</th>", "<th>quorum-critical</th>", "<th>proposals</th>",
		"<th>proposal</th>", "<th>prevote</th>", "<th>precommit</th>", "<th>sign errors</th>"} {
		if !strings.Contains(vals, want) {
			t.Errorf("validators section lacks %q", want)
		}
	}
	for _, v := range s.Validators {
		row := fmt.Sprintf(`<code title="%s">%s</code></td><td>%s</td><td class="num">%d/%d</td><td class="num">%d</td><td class="num">%d/%d</td><td class="num">%d/%d</td><td class="num">%s</td><td class="num">%s</td><td class="num">%s</td><td class="num">%d</td>`,
			v.Address, v.Name, orDash(v.Signer), v.MissedPrecommits, v.PrecommitsCounted, v.NilPrecommits, v.QuorumCritical, s.QuorumHeights, v.Proposals.Made, v.Proposals.Expected,
			p50p99(v.SignLatencyMS.Proposal), p50p99(v.SignLatencyMS.Prevote), p50p99(v.SignLatencyMS.Precommit), v.SignErrors)
		if !strings.Contains(vals, row) {
			t.Errorf("validators table lacks the row %s", row)
		}
	}
	if strings.Contains(vals, "transport overhead") {
		t.Errorf("remote-signer columns without a remote signer")
	}
	if n := strings.Count(vals, "<tr"); n != len(s.Validators)+1 {
		t.Errorf("validators table has %d rows, want header + %d", n, len(s.Validators))
	}
	// Expectations: one row each, failures marked.
	exp := html.UnescapeString(sectionOf(t, page, "expectations"))
	failed := len(s.Failed())
	if n := strings.Count(exp, `<td class="pass">PASS</td>`); n != len(s.Expectations)-failed {
		t.Errorf("%d passed expectations, want %d", n, len(s.Expectations)-failed)
	}
	for _, e := range s.Failed() {
		row := `<tr class="failed"><td class="fail">FAIL</td><td><code>` + e.Metric
		if !strings.Contains(exp, row) {
			t.Errorf("failed expectation %s not marked", e.Metric)
		}
	}
	// Faults: one row per window.
	faults := sectionOf(t, page, "faults")
	if n := strings.Count(faults, "<tr>") - 1; len(s.Faults) == 0 && !strings.Contains(faults, "No scenario faults") || len(s.Faults) > 0 && n != len(s.Faults) {
		t.Errorf("faults table: %d rows for %d faults", n, len(s.Faults))
	}
	if strings.Contains(text, "Simulated signers are models") {
		t.Errorf("model note without a model signer")
	}
}

func TestHTMLReportRemoteSignersFaultsModels(t *testing.T) {
	page := htmlReport(t, richEvents(t))
	checkSelfContained(t, page)

	vals := sectionOf(t, page, "validators")
	for _, want := range []string{"<th>signer side</th>", "<th>transport overhead</th>", "<th>signatures matched</th>"} {
		if !strings.Contains(vals, want) {
			t.Errorf("validators section lacks %q", want)
		}
	}
	lat := sectionOf(t, page, "latency")
	for _, want := range []string{"signer side", "node side", "stroke-dasharray", "Dashed: the same signatures as the remote signer saw them"} {
		if !strings.Contains(lat, want) {
			t.Errorf("latency section lacks %q", want)
		}
	}
	faults := sectionOf(t, page, "faults")
	for _, want := range []string{"signer-delay", "3.000 s", "9.000 s", "6s", "signer-outage", "still active at the end"} {
		if !strings.Contains(faults, want) {
			t.Errorf("faults section lacks %q", want)
		}
	}
	// Fault windows are shaded and labelled on both time-related charts.
	for _, id := range []string{"rounds", "interval"} {
		sec := sectionOf(t, page, id)
		for _, want := range []string{">signer-delay v4<", ">signer-outage v1<", ">fault: signer-delay<", ">fault: signer-outage<"} {
			if !strings.Contains(sec, want) {
				t.Errorf("section %s lacks %q", id, want)
			}
		}
	}
	foot := page[strings.Index(page, `<footer`):]
	if !strings.Contains(foot, "Simulated signers are models") || !strings.Contains(foot, "<code>v3</code>") || strings.Contains(foot, "<code>v4</code>") {
		t.Errorf("footer should name v3 (and only v3) as a model signer:\n%s", foot)
	}
}

func TestHTMLReportEscapes(t *testing.T) {
	evs := richEvents(t)
	evs[0].Scenario = `"><img src=x onerror=alert(1)>`
	evs[0].Validators[0].Name = "<b>x</b>"
	for i := range evs {
		if evs[i].Validator == "v1" {
			evs[i].Validator = "<b>x</b>"
		}
		if evs[i].Proposer == "v1" {
			evs[i].Proposer = "<b>x</b>"
		}
	}
	page := htmlReport(t, evs)
	checkSelfContained(t, page) // no <script, <img, src= anywhere
	for _, raw := range []string{"<b>x</b>", "<script>", `"><img`} {
		if strings.Contains(page, raw) {
			t.Errorf("unescaped %q in the report", raw)
		}
	}
	for _, want := range []string{"&lt;b&gt;x&lt;/b&gt;", "&lt;script&gt;alert(1)&lt;/script&gt;", "delay 2s &lt;script&gt;x&lt;/script&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("escaped %q missing", want)
		}
	}
	// The escaped name also labels the heat map row (inside the SVG).
	if !strings.Contains(sectionOf(t, page, "precommits"), "&lt;b&gt;x&lt;/b&gt;</text>") {
		t.Errorf("heat map row label not escaped text")
	}
}

// TestHTMLReportLargeRun: 25 validators × 1000 heights stays a few hundred
// KB (CDFs downsampled, heat map drawn as runs).
func TestHTMLReportLargeRun(t *testing.T) {
	evs := gen(benchConfig())
	page := htmlReport(t, evs)
	checkSelfContained(t, page)
	if n := strings.Count(page, "<svg "); n != 4 {
		t.Errorf("%d charts, want 4", n)
	}
	const limit = 400 << 10
	if len(page) > limit {
		t.Errorf("report is %d KB, want <= %d KB", len(page)>>10, limit>>10)
	}
	t.Logf("report of %d events: %d KB", len(evs), len(page)>>10)
	// 25 validators > 10: the latency lines are coloured by signer label.
	lat := sectionOf(t, page, "latency")
	if !strings.Contains(lat, ">local<") || !strings.Contains(lat, ">local+latency(fixed 150ms, precommit)<") {
		t.Errorf("latency legend should list signer labels")
	}
}

func TestHTMLReportDegenerateRuns(t *testing.T) {
	start := eventlog.Event{Time: t0, Kind: eventlog.KindRunStart, Scenario: "empty", Validators: []eventlog.ValidatorInfo{{Name: "v1", Signer: "local"}}}
	oneBlock := eventlog.Event{Time: t0.Add(time.Second), Kind: eventlog.KindBlock, Height: 1}
	cases := map[string][]eventlog.Event{
		"no events":        nil,
		"run_start only":   {start},
		"nothing happened": {start, {Time: t0.Add(time.Second), Kind: eventlog.KindRunEnd, StopReason: eventlog.StopInterrupted}},
		"one block":        {start, oneBlock, {Time: t0.Add(2 * time.Second), Kind: eventlog.KindRunEnd, StopReason: eventlog.StopHeights}},
		"no run_start":     {oneBlock, {Time: t0.Add(3 * time.Second), Kind: eventlog.KindBlock, Height: 2, LastCommitAbsent: []string{"ghost"}}},
		"zero latencies": {start, {Time: t0, Kind: eventlog.KindSign, Validator: "v1", Phase: phase.Prevote, Height: 1},
			{Time: t0, Kind: eventlog.KindSign, Validator: "v1", Phase: phase.Prevote, Height: 2, LatencyMS: 500}},
	}
	for name, evs := range cases {
		t.Run(name, func(t *testing.T) {
			page := htmlReport(t, evs)
			checkSelfContained(t, page)
			if !strings.Contains(page, `id="result"`) || !strings.Contains(page, "</html>") {
				t.Errorf("incomplete page")
			}
			if strings.Contains(page, "could not be drawn") {
				t.Errorf("a chart failed: %s", page[strings.Index(page, "could not be drawn")-100:][:300])
			}
		})
	}
	if page := htmlReport(t, cases["nothing happened"]); !strings.Contains(page, "RESULT: ERROR (interrupted)") || !strings.Contains(page, "no committed heights") {
		t.Errorf("interrupted empty run: want ERROR verdict and chart notes")
	}
}

// TestHTMLReportChartThatCannotBeDrawn: input gonum/plot rejects (a
// latency that is not a number; plotter.NewLine refuses NaN and Inf) costs
// that chart only: a note in its place, the rest of the report intact, no
// panic out of WriteHTMLReport.
func TestHTMLReportChartThatCannotBeDrawn(t *testing.T) {
	for _, bad := range []float64{math.NaN(), math.Inf(1)} {
		t.Run(strconv.FormatFloat(bad, 'g', -1, 64), func(t *testing.T) {
			evs := []eventlog.Event{runStart("v1"),
				withLatency(signEv("v1", phase.Prevote, 1, 0, "B"), 1, 0),
				withLatency(signEv("v1", phase.Prevote, 2, 0, "B"), bad, 0),
				block(1, 1000, 0, nil, nil), block(2, 2000, 0, nil, nil), runEnd(3000, eventlog.StopHeights)}
			page := htmlReport(t, evs)
			lat := sectionOf(t, page, "latency")
			if !strings.Contains(lat, "chart could not be drawn") || strings.Contains(lat, "<svg") {
				t.Errorf("latency section should hold a note instead of a chart:\n%s", lat)
			}
			if n := strings.Count(page, "<svg "); n != 3 {
				t.Errorf("%d charts, want the other 3", n)
			}
			if !strings.Contains(page, "</html>") {
				t.Errorf("incomplete page")
			}
		})
	}
}

// TestGuardChart: a panic while building or drawing a chart (gonum
// panics on some degenerate ranges, e.g. a log axis reaching 0) is that
// chart's note.
func TestGuardChart(t *testing.T) {
	got := guardChart(func() chart {
		p := newPlot("log axis through 0")
		p.X.Scale = plot.LogScale{}
		p.X.Min, p.X.Max = 0, 10
		return renderChart(chartWidth, vg.Inch, "log", func(dc draw.Canvas) { p.Draw(dc) })
	})
	if got.SVG != "" || !strings.Contains(got.Note, "chart could not be drawn: Values must be greater than 0 for a log scale") {
		t.Errorf("got %+v", got)
	}
	if got := guardChart(func() chart { return chart{Note: "no data"} }); got.Note != "no data" {
		t.Errorf("a chart that did not panic changed: %+v", got)
	}
}

func TestHTMLReportIsDeterministic(t *testing.T) {
	evs := richEvents(t)
	if htmlReport(t, evs) != htmlReport(t, evs) {
		t.Errorf("two reports of the same events differ")
	}
}

func TestCDFPoints(t *testing.T) {
	var xs []float64
	for i := range 5000 {
		xs = append(xs, float64(i%997)*0.37)
	}
	for _, k := range []int{24, 200, 100000} {
		pts := cdfPoints(xs, k)
		if len(pts) > k+2 && k < 997 {
			t.Errorf("k=%d: %d points", k, len(pts))
		}
		if pts[0].Y != 0 || pts[len(pts)-1].Y != 1 || pts[len(pts)-1].X != 996*0.37 {
			t.Errorf("k=%d: CDF from %v to %v, want from y 0 to (max, 1)", k, pts[0], pts[len(pts)-1])
		}
		for i := 1; i < len(pts); i++ {
			if pts[i].X < pts[i-1].X || pts[i].Y < pts[i-1].Y {
				t.Fatalf("k=%d: not monotonic at %d: %v %v", k, i, pts[i-1], pts[i])
			}
		}
	}
	if pts := cdfPoints([]float64{2, 1, 2, 2}, 10); len(pts) != 3 || pts[1].Y != 0.25 || pts[2].Y != 1 {
		t.Errorf("cdf of 1,2,2,2: %v", pts)
	}
}
