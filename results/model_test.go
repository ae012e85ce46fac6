package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/valnet/valnet/results/eventlog"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/valnet/valnet/internal/action"
)

// asModel is evs as a model run would write them: run_start carries a
// model, and without voteEvents the stream has no vote events. extra
// expectations are added to run_start's.
func asModel(evs []eventlog.Event, voteEvents bool, extra ...eventlog.Expectation) []eventlog.Event {
	out := make([]eventlog.Event, 0, len(evs))
	for _, ev := range evs {
		switch {
		case ev.Kind == eventlog.KindVote && !voteEvents:
			continue
		case ev.Kind == eventlog.KindRunStart:
			ev.Backend = "sim"
			ev.Model = &eventlog.ModelInfo{Name: "valnet-sim", Calibration: "default", VoteEvents: voteEvents,
				Notes: []string{"gossip is one hop with a fixed delay", "blocks carry no transactions"}}
			ev.Expect = append(slices.Clone(ev.Expect), extra...)
		}
		out = append(out, ev)
	}
	return out
}

// modelExpect are expectations on values read off vote events, and one
// that is not.
func modelExpect() []eventlog.Expectation {
	f := func(v float64) *float64 { return &v }
	return []eventlog.Expectation{
		{Metric: "late_prevotes", Max: f(5)},
		{Metric: "quorum_critical", Validator: "v1", Min: f(1)},
		{Metric: "consecutive_missed_max", Validator: "v3", Max: f(2)},
	}
}

// modelEvents is the golden fixture as a model run without vote events.
func modelEvents(t testing.TB) []eventlog.Event {
	return asModel(readFixture(t), false, modelExpect()...)
}

// reports renders every report of a summary.
func reports(t *testing.T, s *Summary, evs []eventlog.Event) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, write := range map[string]func(io.Writer) error{
		"summary.json": func(w io.Writer) error { return WriteSummaryJSON(w, s) },
		"table.txt":    func(w io.Writer) error { return WriteTable(w, s) },
		"summary.md":   func(w io.Writer) error { return WriteMarkdown(w, s) },
		"junit.xml":    func(w io.Writer) error { return WriteJUnit(w, s) },
		"report.html":  func(w io.Writer) error { return WriteHTMLReport(w, s, evs) },
		"missed.csv":   func(w io.Writer) error { return WriteMissedCSV(w, s) },
	} {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = buf.String()
	}
	return out
}

const modelLabel = "MODEL: valnet-sim (virtual time, not real nodes)"

// A model run with vote events is judged exactly as real nodes: the same
// numbers, the same causes; only the MODEL label differs.
func TestModelWithVoteEventsIsJudgedAsReal(t *testing.T) {
	real := Summarize(readFixture(t))
	model := Summarize(asModel(readFixture(t), true))
	if model.Model == nil || model.Unavailable != nil {
		t.Fatalf("model = %+v, unavailable = %v", model.Model, model.Unavailable)
	}
	model.Model, model.Backend = nil, real.Backend
	a, _ := json.Marshal(real)
	b, _ := json.Marshal(model)
	if !bytes.Equal(a, b) {
		t.Errorf("a model run with vote events summarizes differently from the same events of real nodes:\n%s\n%s", a, b)
	}
	if !slices.Equal(real.Missed, model.Missed) {
		t.Errorf("missed causes differ:\n%v\n%v", real.Missed, model.Missed)
	}
}

func TestModelRunReports(t *testing.T) {
	tests := []struct {
		name        string
		events      []eventlog.Event
		model       bool
		notRecorded bool // vote_events false
	}{
		{"real nodes", readFixture(t), false, false},
		{"model with vote events", asModel(readFixture(t), true, modelExpect()...), true, false},
		{"model without vote events", modelEvents(t), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(tt.events)
			got := reports(t, s, tt.events)
			for name, text := range got {
				if name == "missed.csv" {
					continue
				}
				if name == "summary.json" {
					if has := strings.Contains(text, `"model": {`); has != tt.model {
						t.Errorf("summary.json has a model: %v, want %v", has, tt.model)
					}
					continue
				}
				if has := strings.Contains(text, modelLabel); has != tt.model {
					t.Errorf("%s: says %q: %v, want %v", name, modelLabel, has, tt.model)
				}
				if has := strings.Contains(text, NotRecorded); has != tt.notRecorded {
					t.Errorf("%s: says %q: %v, want %v", name, NotRecorded, has, tt.notRecorded)
				}
			}
			if tt.model {
				for _, want := range []string{`<suite name="valnet fixture (MODEL)"`, `<property name="model_vote_events" value="` + map[bool]string{true: "false", false: "true"}[tt.notRecorded] + `">`,
					`<property name="model_note" value="gossip is one hop with a fixed delay">`} {
					if want = strings.Replace(want, "<suite", "<testsuite", 1); !strings.Contains(got["junit.xml"], want) {
						t.Errorf("junit.xml lacks %s", want)
					}
				}
				for name, want := range map[string]string{
					"summary.md":  "## ❌ valnet fixture (MODEL):",
					"report.html": "<title>valnet report: fixture (MODEL)</title>",
					"table.txt":   "  model simplifies: blocks carry no transactions\n",
				} {
					if !strings.Contains(got[name], want) {
						t.Errorf("%s lacks %q", name, want)
					}
				}
			}
		})
	}
}

func TestModelWithoutVoteEvents(t *testing.T) {
	evs := modelEvents(t)
	s := Summarize(evs)
	// The fixture's halt (h5, whose proposer's signer failed) is no-proposal
	// only if some node received +2/3 of the prevotes, which no event
	// shows here: its cause cannot be told, so no halts_<cause> can.
	want := slices.Clone(VoteEventValues)
	for _, c := range HaltCauses {
		want = append(want, HaltMetric(c))
	}
	if !slices.Equal(s.Unavailable, want) {
		t.Errorf("unavailable = %v, want %v", s.Unavailable, want)
	}
	if h := s.Halts[0]; h.Cause != HaltUnknown || h.Detail != cannotTellVotes+"40 of 40 voting power cast a prevote at h5 r0; whether any node received +2/3 of them is not recorded" {
		t.Errorf("halt: %s: %s", h.Cause, h.Detail)
	}

	// Each name is a summary.json key, and a metric where one exists.
	js := reports(t, s, evs)["summary.json"]
	for _, name := range VoteEventValues {
		if _, isMetric := metrics[name]; !strings.Contains(js, `"`+name+`": `) || !isMetric && name != "quorum_heights" {
			t.Errorf("%s: a summary key %v, a metric %v", name, strings.Contains(js, `"`+name+`": `), isMetric)
		}
	}

	// Expectations: one error per expectation on a value the run cannot
	// tell (not one per validator), the others judged.
	var got []string
	for _, e := range s.Expectations {
		got = append(got, ExpectationName(e)+": "+expectationValue(e))
	}
	for _, want := range []string{
		"late_prevotes <= 5: error: cannot tell: late_prevotes needs vote receipt events, which this model run did not record (vote_events: false)",
		"quorum_critical[v1] >= 1: error: cannot tell: quorum_critical needs vote receipt events, which this model run did not record (vote_events: false)",
		"consecutive_missed_max[v3] <= 2: 2",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("expectations lack %q:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if n := len(s.Expectations); n != len(fixtureConfig().expect)+4 /* missed_precommits: one per validator */ +len(modelExpect())-1 {
		t.Errorf("%d expectation results:\n%s", n, strings.Join(got, "\n"))
	}

	// The metric values: absent, not 0; the others there.
	mv := MetricValues(s)
	for ref, want := range map[string]bool{"late_prevotes(v4)": false, "late_precommits(v1)": false, "quorum_critical(v1)": false,
		"missed_precommits(v3)": true, "halts": true, "halts_unresumed": true, "halts_no_proposal": false} {
		if _, ok := mv[ref]; ok != want {
			t.Errorf("MetricValues[%s] present %v, want %v", ref, ok, want)
		}
		if _, ok, err := MetricValue(s, ref); ok != want || err != nil {
			t.Errorf("MetricValue(%s) = ok %v, %v; want ok %v", ref, ok, err, want)
		}
	}
	var na *UnavailableError
	if _, err := s.Metric("late_precommits", "v2", ""); !errors.As(err, &na) {
		t.Errorf("Metric(late_precommits, v2): %v, want an UnavailableError", err)
	}
	if _, err := s.Metric("late_precommits", "nobody", ""); err == nil || !strings.Contains(err.Error(), "not in the run") {
		t.Errorf("Metric(late_precommits, nobody): %v, want the unknown validator", err)
	}

	// The missed precommit signed in time keeps its cause (network: signed
	// before the decision yet absent), but its detail no longer reads as
	// evidence that the proposer never received it.
	for _, m := range s.Missed {
		if m.Height == 4 && m.Validator == "v3" {
			if m.Cause != CauseNetwork || !strings.HasSuffix(m.Detail, "; whether v2 (proposer of 5) received it is not recorded (vote_events: false)") {
				t.Errorf("h4 v3: %s: %s", m.Cause, m.Detail)
			}
		}
	}

	// The reports: n/a in the cells, never the zeros.
	r := reports(t, s, evs)
	for name, want := range map[string][]string{
		"table.txt":   {"  v1         local                                  1/7     0    n/a         n/a     1/2 "},
		"summary.md":  {"| v1 | local | 1/7 | signer-failed 1 | 0 | n/a | n/a | 1/2 |"},
		"report.html": {`<td class="num">1</td><td class="num">n/a</td><td class="num">n/a</td></tr>`, `<dd id="not-recorded">n/a (not recorded): late_prevotes`},
	} {
		for _, w := range want {
			if !strings.Contains(r[name], w) {
				t.Errorf("%s lacks %q:\n%s", name, w, r[name])
			}
		}
	}
}

// Halts whose cause turns on which votes the nodes received are unknown
// in a model run without vote events ("cannot tell"), and then every
// halts_<cause> is; a cause read off signatures and faults stays.
func TestModelHaltCauses(t *testing.T) {
	everyone := map[string][]string{"v1": all4, "v2": all4, "v3": all4, "v4": all4}
	partition := cat([]eventlog.Event{{Time: at(1500), Kind: eventlog.KindFault, Action: action.Partition, State: eventlog.FaultStart, Detail: "partition [v1 v2] | [v3 v4]"}},
		enterRound(2100, 3, 0, all4...),
		prevotes(2600, 3, 0, map[string][]string{"v1": {"v2"}, "v2": {"v1"}, "v3": {"v4"}, "v4": {"v3"}}, all4...))
	lost := cat(enterRound(2100, 3, 0, all4...), prevotes(2600, 3, 0, map[string][]string{}, all4...))
	down := cat([]eventlog.Event{faultAt(1500, "v3", action.NodeKill, eventlog.FaultStart), faultAt(1600, "v4", action.NodeStop, eventlog.FaultStart)},
		enterRound(2100, 3, 0, "v1", "v2"), prevotes(2600, 3, 0, everyone, "v1", "v2"))
	tests := []struct {
		name    string
		events  []eventlog.Event
		cause   string
		detail  string // prefix
		needsVo bool
	}{
		{"a 2/2 partition", partition, HaltUnknown,
			"cannot tell without vote events (vote_events: false): partition [v1 v2] | [v3 v4] was in force; whether any node received prevotes of more than 2/3 of the power at h3 r0 is not recorded", true},
		{"every prevote cast, none delivered", lost, HaltUnknown,
			"cannot tell without vote events (vote_events: false): 40 of 40 voting power cast a prevote at h3 r0; whether any node received +2/3 of them is not recorded", true},
		{"half the validators down", down, HaltValidatorsDown, "validators down at h3: v3 (node-kill), v4 (node-stop)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := func(v float64) *float64 { return &v }
			evs := asModel(stuckRun(tt.events...), false, eventlog.Expectation{Metric: "halts_partition", Max: f(0)}, eventlog.Expectation{Metric: "halts", Max: f(0)})
			s := Summarize(evs)
			if len(s.Halts) != 1 {
				t.Fatalf("halts = %+v", s.Halts)
			}
			h := s.Halts[0]
			if h.Cause != tt.cause || !strings.HasPrefix(h.Detail, tt.detail) {
				t.Errorf("cause %s: %s\nwant %s: %s", h.Cause, h.Detail, tt.cause, tt.detail)
			}
			if got := slices.Contains(s.Unavailable, "halts_partition"); got != tt.needsVo {
				t.Errorf("unavailable %v, want halts_* in it: %v", s.Unavailable, tt.needsVo)
			}
			if slices.Contains(s.Unavailable, "halts") {
				t.Errorf("halts unavailable: the blocks tell it")
			}
			e := s.Expectations
			if len(e) != 2 || (e[0].Error != "") != tt.needsVo || e[1].Error != "" || e[1].Value != 1 {
				t.Errorf("expectations = %+v", e)
			}
			// The live status line explains a stall the same way.
			if st := stallText(evs, 2, at(2000), 10*1e9); !strings.Contains(st, "likely cause "+tt.cause+": "+tt.detail) {
				t.Errorf("stall text %q", st)
			}
		})
	}
}

// The golden reports of a model run without vote events: the fixture's
// events less its vote events, with a model in run_start.
func TestModelGolden(t *testing.T) {
	evs := modelEvents(t)
	r := reports(t, Summarize(evs), evs)
	for _, name := range []string{"summary.json", "table.txt", "summary.md", "junit.xml", "missed.csv"} {
		t.Run(name, func(t *testing.T) { checkGolden(t, "model-"+name, []byte(r[name])) })
	}
}
