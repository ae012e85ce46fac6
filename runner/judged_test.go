package runner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/valnet/valnet/results"
)

// The rule of make integ's timing checks (runJudged in
// integ_retry_test.go): a timing of a real network is judged only on a
// host that kept up. It is here, untagged, so make test checks the rule.

// judgedAttempts: the first run, and one more if the host was overloaded.
const judgedAttempts = 2

// judged is runJudged's rule over any way to run: run(1), run(2) once
// more if the first was overloaded, a failure if both were or one has no
// host measure (it could not be judged).
func judged(t testing.TB, run func(attempt int) *Outcome) *Outcome {
	t.Helper()
	var overloaded []string
	for attempt := 1; attempt <= judgedAttempts; attempt++ {
		out := run(attempt)
		if out == nil || out.Summary == nil {
			t.Fatalf("run %d has no summary", attempt)
			return nil
		}
		h := out.Summary.Host
		if h == nil {
			t.Fatalf("run %d (%s) has no host measure: its timing cannot be judged", attempt, out.OutDir)
			return nil
		}
		if !h.Overloaded {
			if attempt > 1 {
				t.Logf("run %d judged on a host that kept up (%s), after: %s", attempt, hostFigures(h), strings.Join(overloaded, "; "))
			}
			return out
		}
		overloaded = append(overloaded, fmt.Sprintf("run %d: %s", attempt, hostFigures(h)))
		t.Logf("run %d: host overloaded (%s): its timing says nothing of valnet", attempt, hostFigures(h))
	}
	t.Fatalf("the host was overloaded on every run, so no timing could be judged: %s", strings.Join(overloaded, "; "))
	return nil
}

// hostFigures are the host monitor's figures that decide overload.
func hostFigures(h *results.HostSummary) string {
	f := fmt.Sprintf("CPU busy p95 %.2f, scheduling lag p99 %.1f ms, tick lag max %.1f ms, %d of %d s saturated",
		h.CPUBusyP95, h.SchedLagP99MS, h.TickLagMaxMS, h.SaturatedSeconds, h.Samples)
	if h.OverloadedWhy != "" {
		f += " (" + h.OverloadedWhy + ")"
	}
	return f
}

// judgeTB records what judged reports instead of ending the test.
type judgeTB struct {
	testing.TB
	failed string
	logs   []string
}

func (j *judgeTB) Helper() {}
func (j *judgeTB) Logf(format string, args ...any) {
	j.logs = append(j.logs, fmt.Sprintf(format, args...))
}
func (j *judgeTB) Fatalf(format string, args ...any) {
	j.failed = fmt.Sprintf(format, args...)
	panic(j)
}

// TestJudged: a host that kept up is judged at once; an overloaded run is
// run once more; overloaded twice, or without a host measure, fails with
// the figures: never a silent pass.
func TestJudged(t *testing.T) {
	host := func(over bool) *Outcome {
		return &Outcome{OutDir: "d", Summary: &results.Summary{Host: &results.HostSummary{
			Samples: 20, CPUBusyP95: 0.99, TickLagMaxMS: 180, SaturatedSeconds: 15, Overloaded: over}}}
	}
	for _, c := range []struct {
		name     string
		runs     []*Outcome
		attempts int
		fail     string // in the failure; "" for none
	}{
		{"kept up", []*Outcome{host(false)}, 1, ""},
		{"overloaded once", []*Outcome{host(true), host(false)}, 2, ""},
		{"overloaded twice", []*Outcome{host(true), host(true)}, 2,
			"overloaded on every run, so no timing could be judged: run 1: CPU busy p95 0.99, scheduling lag p99 0.0 ms, tick lag max 180.0 ms, 15 of 20 s saturated; run 2:"},
		{"no host measure", []*Outcome{{Summary: &results.Summary{}}}, 1, "has no host measure"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb := &judgeTB{TB: t}
			attempts := 0
			var got *Outcome
			func() {
				defer func() {
					if r := recover(); r != nil && r != tb {
						panic(r)
					}
				}()
				got = judged(tb, func(attempt int) *Outcome {
					attempts++
					if attempt != attempts {
						t.Fatalf("attempt %d called as %d", attempts, attempt)
					}
					return c.runs[attempt-1]
				})
			}()
			if attempts != c.attempts {
				t.Errorf("%d runs, want %d", attempts, c.attempts)
			}
			switch {
			case c.fail == "" && (tb.failed != "" || got != c.runs[len(c.runs)-1]):
				t.Errorf("failed %q, returned %v; want the last run", tb.failed, got)
			case c.fail != "" && !strings.Contains(tb.failed, c.fail):
				t.Errorf("failure %q, want it to say %q", tb.failed, c.fail)
			}
		})
	}
}
