package crosscheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/valnet/valnet/internal/atomicfile"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/runner"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/sweep"
)

// fakeRunner stands in for runner.Run: it writes the summary.json that
// canned gives for the run's case and side (read off the run directory,
// CASE/SIDE/rN) and returns what sweep.LoadFinished reads of it, as a
// real run's result is. Knobs: failAt makes the n-th call fail (after
// leaving an events.jsonl, as a run that could not be done does);
// interruptAt cancels the context during the n-th call, whose run then
// ends interrupted.
type fakeRunner struct {
	canned      map[string]sum // "case/side"
	failAt      int
	interruptAt int
	cancel      context.CancelFunc
	calls       []string // "case/side/rN seed S"
}

var _ sweep.Runner = (*fakeRunner)(nil)

func (f *fakeRunner) Run(ctx context.Context, plan *scenarios.Plan, seed int64, dir string) (sweep.Result, error) {
	rep := filepath.Base(dir)
	side := filepath.Base(filepath.Dir(dir))
	name := filepath.Base(filepath.Dir(filepath.Dir(dir)))
	f.calls = append(f.calls, fmt.Sprintf("%s/%s/%s seed %d", name, side, rep, seed))
	n := len(f.calls)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return sweep.Result{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, runner.EventsFile), []byte("{}\n"), 0o644); err != nil {
		return sweep.Result{}, err
	}
	if n == f.failAt {
		return sweep.Result{Seed: seed, Dir: dir, StopReason: eventlog.StopError}, errors.New("the fake backend could not start")
	}
	c, ok := f.canned[name+"/"+side]
	if !ok {
		return sweep.Result{}, fmt.Errorf("no canned summary for %s/%s", name, side)
	}
	s := c.summary()
	s.Scenario, s.Backend, s.Seed = plan.Name, plan.Run.Backend, seed
	if n == f.interruptAt {
		f.cancel()
		s.StopReason = eventlog.StopInterrupted
	}
	if err := atomicfile.WriteWith(filepath.Join(dir, runner.SummaryFile), 0o644, func(w io.Writer) error { return results.WriteSummaryJSON(w, s) }); err != nil {
		return sweep.Result{}, err
	}
	res, _, err := sweep.LoadFinished(dir)
	return res, err
}

// sum is a canned run, written short: heights, round changes, block
// intervals, per validator missed of counted precommits, halts.
type sum struct {
	committed, roundChanges, unknownRound int
	p50, p95                              float64 // 0: no interval
	missed                                map[string][2]int
	halts                                 []results.Halt
	overloaded                            bool
}

func (x sum) summary() *results.Summary {
	s := &results.Summary{StopReason: eventlog.StopHeights, OK: true,
		Heights: results.HeightStats{First: 1, Last: int64(x.committed), Committed: x.committed},
		Rounds:  results.RoundStats{HeightsWithRoundChange: x.roundChanges, UnknownCommitRound: x.unknownRound},
		Halts:   x.halts}
	if x.p50 > 0 {
		s.BlockIntervalMS = results.IntervalStats{Count: x.committed - 1, P50: x.p50, P95: x.p95, Max: x.p95}
	}
	for _, name := range []string{"v-1", "v-2", "v-3", "slow"} {
		m, ok := x.missed[name]
		if !ok && x.missed != nil {
			continue
		}
		if x.missed == nil {
			m = [2]int{0, x.committed}
		}
		s.Validators = append(s.Validators, results.ValidatorSummary{Name: name, MissedPrecommits: m[0], MissedBlocks: m[0], PrecommitsCounted: m[1]})
	}
	if x.overloaded {
		s.Host = &results.HostSummary{Cores: 2, Samples: 20, SaturatedSeconds: 10, Overloaded: true}
	}
	return s
}
