package results_test

import (
	"github.com/valnet/valnet/internal/phase"
	"strings"
	"testing"

	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
)

// TestEveryScenarioMetricIsImplemented evaluates every metric a scenario may
// name on the fixture, in the shape scenarios allows (validator for
// per-validator metrics, a phase for phased ones), and checks that the
// PerValidator/Phased flags agree with what results accepts.
func TestEveryScenarioMetricIsImplemented(t *testing.T) {
	evs, err := eventlog.ReadFile("testdata/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	s := results.Summarize(evs)
	validator := s.Validators[0].Name

	for _, m := range scenarios.Metrics {
		t.Run(m.Name, func(t *testing.T) {
			v := ""
			if m.PerValidator {
				v = validator
			}
			if _, err := s.Metric(m.Name, v, ""); err != nil {
				t.Fatalf("not implemented: %v", err)
			}
			_, err := s.Metric(m.Name, v, phase.Precommit)
			if m.Phased && err != nil {
				t.Errorf("phased metric refuses a phase: %v", err)
			}
			if !m.Phased && err == nil {
				t.Error("metric accepts a phase but scenarios says it is not phased")
			}
			_, err = s.Metric(m.Name, validator, "")
			if m.PerValidator != (err == nil) {
				t.Errorf("PerValidator=%v but a validator gives err=%v", m.PerValidator, err)
			}

			// And through an expectation, as a run records it.
			exp := eventlog.Expectation{Metric: m.Name}
			zero := 0.0
			exp.Min = &zero
			for _, r := range evaluate(t, evs, exp) {
				if strings.Contains(r.Error, "unknown metric") {
					t.Errorf("expectation: %s", r.Error)
				}
				if r.Error != "" {
					t.Errorf("expectation error: %s", r.Error)
				}
			}
		})
	}
}

// evaluate re-summarizes evs with exp as the only expectation.
func evaluate(t *testing.T, evs []eventlog.Event, exp eventlog.Expectation) []results.ExpectationResult {
	t.Helper()
	cp := append([]eventlog.Event(nil), evs...)
	for i := range cp {
		if cp[i].Kind == eventlog.KindRunStart {
			cp[i].Expect = []eventlog.Expectation{exp}
			break
		}
	}
	rs := results.Summarize(cp).Expectations
	if len(rs) == 0 {
		t.Fatal("expectation not evaluated")
	}
	return rs
}
