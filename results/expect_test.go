package results

import (
	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/results/eventlog"
	"reflect"
	"testing"
)

func fp(v float64) *float64 { return &v }

// expectRun: v1 missed 2 precommits, v2 none; 3 heights; v1 precommits take
// 100 ms, v2's 5 ms; v2 never proposed.
func expectRun(reason string, expect ...eventlog.Expectation) []eventlog.Event {
	start := runStart("v1", "v2")
	start.Expect = expect
	return []eventlog.Event{
		start,
		newRound("n1", 1, 0, "v1"),
		withLatency(signEv("v1", phase.Proposal, 1, 0, "A"), 2, 0),
		withLatency(signEv("v1", phase.Precommit, 1, 0, "A"), 100, 0),
		withLatency(signEv("v2", phase.Precommit, 1, 0, "A"), 5, 0),
		block(1, 0, 0, nil, nil),
		block(2, 1000, 0, []string{"v1"}, nil),
		block(3, 2000, 0, []string{"v1"}, nil),
		step("n1", 3, 0, "commit"),
		runEnd(3000, reason),
	}
}

func TestEvaluate(t *testing.T) {
	type result struct {
		validator string
		value     float64
		ok        bool
		note, err string
	}
	tests := []struct {
		name string
		exp  eventlog.Expectation
		want []result
	}{
		{"chain metric, max inclusive", eventlog.Expectation{Metric: "heights_committed", Max: fp(3)}, []result{{"", 3, true, "", ""}}},
		{"chain metric, min violated", eventlog.Expectation{Metric: "heights_committed", Min: fp(4)}, []result{{"", 3, false, "", ""}}},
		{"both bounds", eventlog.Expectation{Metric: "heights_committed", Min: fp(3), Max: fp(3)}, []result{{"", 3, true, "", ""}}},
		{"named validator", eventlog.Expectation{Metric: "missed_precommits", Validator: "v2", Max: fp(0)}, []result{{"v2", 0, true, "", ""}}},
		{
			name: "per-validator metric without validator expands",
			exp:  eventlog.Expectation{Metric: "missed_precommits", Max: fp(1)},
			want: []result{{"v1", 2, false, "", ""}, {"v2", 0, true, "", ""}},
		},
		{
			name: "phase selects samples; no samples is a note, judged as 0",
			exp:  eventlog.Expectation{Metric: "sign_latency_max_ms", Phase: phase.Proposal, Max: fp(10)},
			want: []result{{"v1", 2, true, "", ""}, {"v2", 0, true, "no samples", ""}},
		},
		{
			name: "no phase means all phases together",
			exp:  eventlog.Expectation{Metric: "sign_latency_p99_ms", Validator: "v1", Max: fp(50)},
			want: []result{{"v1", 100, false, "", ""}},
		},
		{"proposals_missed", eventlog.Expectation{Metric: "proposals_missed", Validator: "v1", Max: fp(0)}, []result{{"v1", 0, true, "", ""}}},
		{"unknown metric", eventlog.Expectation{Metric: "heights_comitted", Min: fp(1)}, []result{{"", 0, false, "", `unknown metric "heights_comitted"`}}},
		{"unknown validator", eventlog.Expectation{Metric: "nil_precommits", Validator: "v9", Max: fp(0)}, []result{{"v9", 0, false, "", `validator "v9" is not in the run`}}},
		{"phase on unphased metric", eventlog.Expectation{Metric: "missed_precommits", Validator: "v1", Phase: phase.Prevote, Max: fp(9)}, []result{{"v1", 0, false, "", `metric "missed_precommits" takes no phase`}}},
		{"unknown phase", eventlog.Expectation{Metric: "sign_latency_p50_ms", Validator: "v1", Phase: "vote", Max: fp(9)}, []result{{"v1", 0, false, "", `unknown phase "vote" (want proposal, prevote or precommit)`}}},
		{"validator on chain metric", eventlog.Expectation{Metric: "double_signs", Validator: "v1", Max: fp(0)}, []result{{"v1", 0, false, "", `metric "double_signs" is a chain metric and takes no validator`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(expectRun(eventlog.StopHeights, tt.exp))
			var got []result
			for _, r := range s.Expectations {
				got = append(got, result{r.Validator, r.Value, r.OK, r.Note, r.Error})
				if r.Metric != tt.exp.Metric || r.Phase != tt.exp.Phase {
					t.Errorf("result %+v does not echo the expectation", r)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
			failed := 0
			for _, w := range tt.want {
				if !w.ok {
					failed++
				}
			}
			if s.OK != (failed == 0) || len(s.Failed()) != failed {
				t.Errorf("summary ok = %v, failed = %d", s.OK, len(s.Failed()))
			}
		})
	}
}

func TestTopLevelOK(t *testing.T) {
	pass := eventlog.Expectation{Metric: "heights_committed", Min: fp(1)}
	fail := eventlog.Expectation{Metric: "heights_committed", Min: fp(100)}
	tests := []struct {
		reason string
		exp    []eventlog.Expectation
		want   bool
	}{
		{eventlog.StopHeights, []eventlog.Expectation{pass}, true},
		{eventlog.StopMaxDuration, []eventlog.Expectation{pass}, false}, // never reached run.heights
		{eventlog.StopHeights, nil, true},
		{eventlog.StopHeights, []eventlog.Expectation{pass, fail}, false},
		{eventlog.StopInterrupted, []eventlog.Expectation{pass}, false},
		{eventlog.StopError, []eventlog.Expectation{pass}, false},
	}
	for _, tt := range tests {
		if got := Summarize(expectRun(tt.reason, tt.exp...)).OK; got != tt.want {
			t.Errorf("stop=%s expectations=%d: ok = %v, want %v", tt.reason, len(tt.exp), got, tt.want)
		}
	}
}

func TestMetric(t *testing.T) {
	s := Summarize(expectRun(eventlog.StopHeights))
	if v, err := s.Metric("missed_precommits", "v1", ""); err != nil || v != 2 {
		t.Errorf("missed_precommits v1 = %v, %v", v, err)
	}
	if _, err := s.Metric("missed_precommits", "", ""); err == nil {
		t.Error("per-validator metric without validator: want error")
	}
	if v, err := s.Metric("heights_committed", "", ""); err != nil || v != 3 {
		t.Errorf("heights_committed = %v, %v", v, err)
	}
}
