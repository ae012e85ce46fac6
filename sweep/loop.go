package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/valnet/valnet/scenarios"
)

// The run loop of the resumable commands (sweep, crosscheck): each lays
// its runs out as slots in the order it wants them run, and this loop
// reads back what earlier invocations finished, runs the rest one at a
// time with a progress line and an estimate of the time left, writes the
// command's file after every run and stops at the first interruption.
// One loop, so the two commands cannot come to mean different things by
// "resumed", "could not be done" or "interrupted".

// A Slot is one run of a resumable command: a point's repeat, or a
// case's side's repeat.
type Slot struct {
	Rec  *RunRecord // Repeat, Seed and Dir (relative to the out dir) set
	Plan *scenarios.Plan
	// Label is the progress line's middle: "point 2/5 (set x=1) repeat 1/3".
	Label string
	// Finished, when set, is called for a run that finished, this time
	// or earlier, with its directory; it reads what the command keeps of
	// it (crosscheck: the summary). Its error makes the run one that
	// could not be done (or, on resume, an error of the invocation).
	Finished func(dir string) error
}

// Tally is what one invocation of the loop did.
type Tally struct {
	Ran         int     // runs done by this invocation
	Resumed     int     // runs read back from an earlier one
	Failed      []error // runs that could not be done
	Interrupted bool    // ctx ended before every run was done
}

// Loop runs slots for one command.
type Loop struct {
	Command  string // "sweep", "crosscheck": the progress lines' and errors' word
	OutDir   string
	Runner   Runner
	Progress io.Writer
	Now      func() time.Time // the clock of the elapsed and ETA figures
	// Save writes the command's file; called after Resume and after each run.
	Save func() error
	// AfterRun, when set, is called after each run, before Save (crosscheck
	// judges the run's case).
	AfterRun func(Slot)
}

// Resume reads back every slot an earlier invocation finished (a run
// directory whose summary says so, with this slot's seed) and returns how
// many slots are still to run.
func (l *Loop) Resume(slots []Slot, t *Tally) (todo int, err error) {
	for _, s := range slots {
		dir := filepath.Join(l.OutDir, s.Rec.Dir)
		res, ok, err := LoadFinished(dir)
		switch {
		case err != nil:
			return 0, fmt.Errorf("reading the earlier run in %s: %w", s.Rec.Dir, err)
		case ok && res.Seed != s.Rec.Seed:
			return 0, fmt.Errorf("%s ran with seed %d, this %s gives it seed %d; choose another --out", s.Rec.Dir, res.Seed, l.Command, s.Rec.Seed)
		case !ok:
			todo++
			continue
		}
		if s.Finished != nil {
			if err := s.Finished(dir); err != nil {
				return 0, fmt.Errorf("reading the earlier run in %s: %w", s.Rec.Dir, err)
			}
		}
		res.Dir = s.Rec.Dir
		s.Rec.Result, s.Rec.Resumed = res, true
		t.Resumed++
	}
	return todo, nil
}

// Run runs every slot not finished, in order, until ctx ends; todo is
// Resume's count (for the estimate of time left).
func (l *Loop) Run(ctx context.Context, slots []Slot, todo int, t *Tally) error {
	start := l.Now()
	var (
		spent    time.Duration
		attempts int
	)
	for _, s := range slots {
		if s.Rec.Finished() {
			continue
		}
		if ctx.Err() != nil {
			t.Interrupted = true
			return nil
		}
		fmt.Fprintf(l.Progress, "valnet %s: %s, elapsed %s%s\n",
			l.Command, s.Label, round(l.Now().Sub(start)), ETA(spent, attempts, todo-attempts))
		t0 := l.Now()
		l.runOne(ctx, s)
		spent += l.Now().Sub(t0)
		attempts++
		switch {
		case s.Rec.Error != "":
			t.Failed = append(t.Failed, fmt.Errorf("%s: %s", s.Rec.Dir, s.Rec.Error))
		case !s.Rec.Finished():
			t.Interrupted = true // stopped by ctx
		default:
			t.Ran++
		}
		if l.AfterRun != nil {
			l.AfterRun(s)
		}
		if err := l.Save(); err != nil {
			return err
		}
		if t.Interrupted {
			return nil
		}
	}
	return nil
}

// runOne runs one slot into its record (RunFresh). An error is kept
// unless ctx ended it; a setup error (before the run started) is kept
// always, since it is no interruption.
func (l *Loop) runOne(ctx context.Context, s Slot) {
	dir := filepath.Join(l.OutDir, s.Rec.Dir)
	res, err := RunFresh(ctx, l.Runner, s.Plan, s.Rec.Seed, dir)
	res.Seed, res.Dir = s.Rec.Seed, s.Rec.Dir
	s.Rec.Result, s.Rec.Resumed = res, false
	var setup setupError
	if err != nil && (ctx.Err() == nil || errors.As(err, &setup)) {
		s.Rec.Error = err.Error()
		return
	}
	if s.Rec.Finished() && s.Finished != nil {
		if err := s.Finished(dir); err != nil {
			s.Rec.Error = err.Error()
		}
	}
}
