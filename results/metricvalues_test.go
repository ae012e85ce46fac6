package results_test

import (
	"strings"
	"testing"

	"github.com/valnet/valnet/internal/metricref"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
)

// TestMetricValues checks that every metric scenarios names is in
// MetricValues for every validator (and phase), with the value
// expectations see, and that the rates divide by the heights counted.
func TestMetricValues(t *testing.T) {
	evs, err := eventlog.ReadFile("testdata/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	s := results.Summarize(evs)
	got := results.MetricValues(s)
	for _, m := range scenarios.Metrics {
		var refs []metricref.Ref
		if !m.PerValidator {
			refs = append(refs, metricref.Ref{Metric: m.Name})
		}
		for _, v := range s.Validators {
			if m.PerValidator {
				refs = append(refs, metricref.Ref{Metric: m.Name, Validator: v.Name})
			}
			if m.Phased {
				refs = append(refs, metricref.Ref{Metric: m.Name, Validator: v.Name, Phase: "precommit"})
			}
		}
		for _, r := range refs {
			want, err := s.Metric(r.Metric, r.Validator, r.Phase)
			if err != nil {
				t.Fatal(err)
			}
			v, present := got[r.String()]
			_, ok, err := results.MetricValue(s, r.String())
			switch {
			case err != nil:
				t.Errorf("MetricValue(%s): %v", r, err)
			case present != ok:
				t.Errorf("%s: in MetricValues %v, MetricValue ok %v", r, present, ok)
			case present && v != want:
				t.Errorf("%s = %v, Summary.Metric says %v", r, v, want)
			}
		}
	}
	for _, v := range s.Validators {
		r := "missed_precommits_rate(" + v.Name + ")"
		if v.PrecommitsCounted == 0 {
			t.Fatalf("fixture validator %s has no counted heights", v.Name)
		}
		if want := float64(v.MissedPrecommits) / float64(v.PrecommitsCounted); got[r] != want {
			t.Errorf("%s = %v, want %v", r, got[r], want)
		}
	}
}

func TestMetricValueBad(t *testing.T) {
	evs, err := eventlog.ReadFile("testdata/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	s := results.Summarize(evs)
	v := s.Validators[0].Name
	for ref, want := range map[string]string{
		"missed_precommits":                    "needs a validator",
		"missed_precommits(nobody)":            `validator "nobody" is not in the run`,
		"heights_committed(" + v + ")":         "chain metric",
		"missed_precommits(" + v + ",prevote)": "takes no phase",
		"no_such_metric":                       "unknown metric",
		"missed(":                              "write name(VALIDATOR)",
	} {
		if _, _, err := results.MetricValue(s, ref); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("MetricValue(%s): %v, want %q", ref, err, want)
		}
	}
}
