package sweep

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/valnet/valnet/internal/atomicfile"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/runner"
	"github.com/valnet/valnet/scenarios"
)

// fakeRunner stands in for runner.Run: it writes a summary.json whose
// numbers follow from the plan (hsm's missed precommits = its signer
// latency in ms / 100, the block interval = 1000 ms + that latency +
// the commit timeout in ms / 10 + the seed), so outputs can be checked
// exactly. Knobs: failAt makes the n-th call fail (after leaving an
// events.jsonl behind, as a real run that could not be done does);
// interruptAt cancels the sweep's context during the n-th call, whose run
// then ends interrupted.
type fakeRunner struct {
	failAt      int
	interruptAt int
	cancel      context.CancelFunc
	calls       []fakeCall
}

type fakeCall struct {
	Dir  string
	Seed int64
}

var _ Runner = (*fakeRunner)(nil)

func (f *fakeRunner) Run(ctx context.Context, plan *scenarios.Plan, seed int64, dir string) (Result, error) {
	f.calls = append(f.calls, fakeCall{Dir: dir, Seed: seed})
	n := len(f.calls)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Result{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, runner.EventsFile), []byte("{}\n"), 0o644); err != nil {
		return Result{}, err
	}
	if n == f.failAt {
		return Result{Seed: seed, Dir: dir, StopReason: eventlog.StopError}, errors.New("the fake backend could not start")
	}
	var latencyMS float64
	for _, v := range plan.Validators {
		if v.Name == "hsm" && v.Signer.Latency != nil {
			latencyMS = float64(v.Signer.Latency.Spec.Value) / float64(time.Millisecond)
		}
	}
	s := &results.Summary{
		Scenario: plan.Name, Seed: seed, StopReason: eventlog.StopHeights,
		BlockIntervalMS: results.IntervalStats{Count: 4, P50: 1000 + latencyMS + float64(plan.Timeouts.Commit/time.Millisecond)/10 + float64(seed)},
	}
	for _, v := range plan.Validators {
		vs := results.ValidatorSummary{Name: v.Name, PrecommitsCounted: 10}
		if v.Name == "hsm" {
			vs.MissedPrecommits = int(latencyMS / 100)
		}
		s.Validators = append(s.Validators, vs)
	}
	s.OK = s.Validators[0].MissedPrecommits <= 2
	if n == f.interruptAt {
		f.cancel()
		s.StopReason = eventlog.StopInterrupted
	}
	err := atomicfile.WriteWith(filepath.Join(dir, runner.SummaryFile), 0o644, func(w io.Writer) error { return results.WriteSummaryJSON(w, s) })
	return fromSummary(s, seed, dir), err
}

// fakeClock advances 10 s each time it is read.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time {
	c.t = c.t.Add(10 * time.Second)
	return c.t
}
