package sweep

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// HoldRule is how the runs of one probe make its verdict (threshold.json's
// "rule"): a capacity limit should hold on every run, not on average, so
// one failed run fails the probe. A probe whose runs disagree is "mixed":
// it counts as failed and is reported, since it says the threshold is
// within the run-to-run noise there.
const HoldRule = "all-runs"

// ThresholdRun is one run of a probe, judged against the target.
type ThresholdRun struct {
	Result
	// Value is the target's metric in this run; null when the run has no
	// value for it (no samples: e.g. a rate over no counted heights), and
	// then the run does not hold: the target could not be shown to hold.
	Value *float64 `json:"target_value"`
	Held  bool     `json:"held"`
	// Reused: the run was found finished in the out dir, not run again.
	Reused bool `json:"reused,omitempty"`
}

// ThresholdProbe is one probed value and its runs.
type ThresholdProbe struct {
	Value    string         `json:"value"` // as the scenario would say it
	Runs     []ThresholdRun `json:"runs"`
	Held     bool           `json:"held"`
	HeldRuns int            `json:"held_runs"`
	Mixed    bool           `json:"mixed"` // some runs held, some did not
}

// Threshold is one `valnet threshold` search: the largest (or smallest)
// value of Key in Grid for which Target holds, Repeat runs per probe.
type Threshold struct {
	Key       string // the --vary path
	Grid      Grid
	Target    Target
	Direction Direction
	Seeds     []int64 // one per repeat; the same seeds at every value
	OutDir    string
	// RunPoint runs the scenario once with Key set to value.
	RunPoint RunPointFunc
	// ConfirmPoint runs it on ConfirmBackend (--confirm); nil: no
	// confirmation.
	ConfirmPoint   RunPointFunc
	ConfirmBackend string
	// Finished reads a run directory left by an earlier search, if that run
	// finished (ok false: run it again); LoadFinished.
	Finished func(dir string) (res Result, ok bool, err error)
	// Out gets every probe as it finishes and the result line.
	Out io.Writer
	// Status, if set, gets a line as each run starts.
	Status io.Writer
	// Stamp identifies what the runs depend on (scenario and its text,
	// backend, key, base seed): a directory made by another search is
	// refused.
	Stamp Stamp
	// Warnings are what the command should say before it starts (a target
	// finer than the runs resolve).
	Warnings []string
}

// RunPointFunc runs the scenario once with key=value and seed into dir
// (a new directory): RunPoint with a Runner.
type RunPointFunc func(ctx context.Context, key, value string, seed int64, dir string) (Result, error)

// ProbeDir is where the repeat-th run (from 1) of value goes under out:
// out/VALUE/rN, e.g. runs/t/550ms/r1 (one key per search directory; grid
// values are plain text: 550ms, 12, 0.25).
func ProbeDir(out, value string, repeat int) string {
	return filepath.Join(out, probeRunDir(value, repeat))
}

// probeRunDir is ProbeDir relative to the search directory (VALUE/rN),
// as threshold.json records it.
func probeRunDir(value string, repeat int) string {
	return filepath.Join(value, "r"+strconv.Itoa(repeat))
}

// Search runs the search, writing threshold.json under OutDir after every
// probe (so an interrupted search keeps what it did). The error is the
// reason a search could not complete (a run could not be done, ctx ended);
// the report is returned with it, verdict Incomplete.
func (t *Threshold) Search(ctx context.Context) (*ThresholdReport, error) {
	if err := t.Claim(); err != nil {
		return nil, err
	}
	rep := t.newReport()
	probe := func(ctx context.Context, v float64) (bool, error) {
		p, err := t.probe(ctx, t.Grid.Format(v))
		if err != nil {
			return false, err
		}
		rep.Probes = append(rep.Probes, p)
		t.printProbe(len(rep.Probes), p)
		return p.Held, rep.write(t.OutDir)
	}
	s, err := Bisect(ctx, t.Grid, t.Direction, probe)
	rep.conclude(t, s, err)
	fmt.Fprintln(t.Out, rep.Line(t.Key))
	if err == nil && t.ConfirmPoint != nil && rep.Verdict == Found {
		err = t.confirm(ctx, rep, s)
	}
	if werr := rep.write(t.OutDir); werr != nil && err == nil {
		err = werr
	}
	return rep, err
}

// Confirmation is threshold.json's "confirm": the two values that bracket
// the threshold, run again on another backend with the same seeds.
type Confirmation struct {
	Backend string           `json:"backend"`
	Probes  []ThresholdProbe `json:"probes"` // the held value, then the failed one
	// Agrees: on the confirming backend too the held value holds and the
	// failed one fails.
	Agrees bool `json:"agrees"`
}

// confirm reruns the bracketing values on ConfirmBackend into
// OutDir/confirm-BACKEND and says whether they agree.
func (t *Threshold) confirm(ctx context.Context, rep *ThresholdReport, s Search) error {
	c := &Confirmation{Backend: t.ConfirmBackend}
	rep.Confirm = c
	fmt.Fprintf(t.Out, "confirming on %s: the two values that bracket it, %d run(s) each\n", t.ConfirmBackend, len(t.Seeds))
	sub := *t
	sub.RunPoint = t.ConfirmPoint
	sub.OutDir = filepath.Join(t.OutDir, "confirm-"+t.ConfirmBackend)
	want := []bool{true, false}
	c.Agrees = true
	for i, idx := range []int{s.Held, s.Failed} {
		p, err := sub.probe(ctx, t.Grid.Format(s.Probes[idx].Value))
		if err != nil {
			return fmt.Errorf("--confirm %s: %w", t.ConfirmBackend, err)
		}
		for j := range p.Runs {
			p.Runs[j].Dir = filepath.Join("confirm-"+t.ConfirmBackend, p.Runs[j].Dir)
		}
		c.Probes = append(c.Probes, p)
		c.Agrees = c.Agrees && p.Held == want[i]
		fmt.Fprintf(t.Out, "  %s=%s  %s: %s on %s, %s on %s\n", t.Key, p.Value, t.Target.Metric,
			probeVerdict(rep.Probes[idx]), t.Stamp.Backend, probeVerdict(p), t.ConfirmBackend)
		if err := rep.write(t.OutDir); err != nil {
			return err
		}
	}
	if c.Agrees {
		fmt.Fprintf(t.Out, "confirmed on %s: the same bracket\n", t.ConfirmBackend)
	} else {
		fmt.Fprintf(t.Out, "NOT confirmed on %s: the real runs bracket the threshold elsewhere; trust them over the model\n", t.ConfirmBackend)
	}
	return nil
}

// Claim makes OutDir this search's (Stamp.claim). Search claims it too
// (claiming twice is harmless); a command claims first to announce only
// a search that goes ahead.
func (t *Threshold) Claim() error { return t.Stamp.claim(t.OutDir) }

// probe runs (or reuses) every repeat at one value.
func (t *Threshold) probe(ctx context.Context, value string) (ThresholdProbe, error) {
	p := ThresholdProbe{Value: value}
	for i, seed := range t.Seeds {
		dir := ProbeDir(t.OutDir, value, i+1)
		run, reused, err := t.Finished(dir)
		if err != nil {
			return p, err
		}
		if reused && run.Seed != seed {
			reused = false // made with another seed: run it again
		}
		if !reused {
			if run, err = t.runOnce(ctx, value, i, seed, dir); err != nil {
				return p, err
			}
		}
		run.Dir = probeRunDir(value, i+1) // threshold.json's dirs are relative to the out dir, as sweep.json's
		r := ThresholdRun{Result: run, Reused: reused}
		if v, ok := run.Metrics[t.Target.Metric]; ok {
			r.Value, r.Held = &v, t.Target.Holds(v)
		}
		p.Runs = append(p.Runs, r)
		if r.Held {
			p.HeldRuns++
		}
	}
	p.Held = p.HeldRuns == len(p.Runs)
	p.Mixed = p.HeldRuns > 0 && !p.Held
	return p, nil
}

// runOnce runs repeat i into dir, removing what an unfinished run left
// there (the directory is this search's: claimed by its stamp).
func (t *Threshold) runOnce(ctx context.Context, value string, i int, seed int64, dir string) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("interrupted before %s=%s, run %d: %w", t.Key, value, i+1, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return Result{}, err
	}
	if t.Status != nil {
		fmt.Fprintf(t.Status, "valnet: %s=%s run %d/%d (seed %d) into %s\n", t.Key, value, i+1, len(t.Seeds), seed, dir)
	}
	run, err := t.RunPoint(ctx, t.Key, value, seed, dir)
	if err == nil && !run.Finished() {
		err = fmt.Errorf("the run stopped early (%s)", run.StopReason)
		if ctx.Err() != nil {
			err = fmt.Errorf("interrupted: %w", ctx.Err())
		}
	}
	if err != nil {
		return run, fmt.Errorf("%s=%s, run %d of %d (seed %d, %s): %w", t.Key, value, i+1, len(t.Seeds), seed, dir, err)
	}
	return run, nil
}

// probeValues are the target metric's values of a probe's runs ("n/a" for
// a run without one).
func probeValues(p ThresholdProbe) string {
	vals := make([]string, len(p.Runs))
	for i, r := range p.Runs {
		vals[i] = "n/a"
		if r.Value != nil {
			vals[i] = strconv.FormatFloat(*r.Value, 'g', 4, 64)
		}
	}
	return strings.Join(vals, " ")
}

// probeVerdict is "0.1333 0.0667 failed (0 of 2 runs held)": the values
// behind the verdict, and how many runs made it.
func probeVerdict(p ThresholdProbe) string {
	verdict := "failed"
	if p.Held {
		verdict = "held"
	}
	return fmt.Sprintf("%s %s (%d of %d runs held)", probeValues(p), verdict, p.HeldRuns, len(p.Runs))
}

func (t *Threshold) printProbe(n int, p ThresholdProbe) {
	reused, overloaded := 0, 0
	for _, r := range p.Runs {
		if r.HostOverloaded {
			overloaded++
		}
		if r.Reused {
			reused++
		}
	}
	verdict := "held"
	switch {
	case p.Mixed:
		verdict = fmt.Sprintf("failed (mixed: %d of %d runs held)", p.HeldRuns, len(p.Runs))
	case !p.Held:
		verdict = "failed"
	}
	note := ""
	if reused > 0 {
		note = fmt.Sprintf("  [%d of %d runs reused from %s]", reused, len(p.Runs), t.OutDir)
	}
	if overloaded > 0 {
		note += fmt.Sprintf("  [host overloaded in %d of %d runs: their values reflect this machine]", overloaded, len(p.Runs))
	}
	fmt.Fprintf(t.Out, "probe %d  %s=%s  %s: %s  %s%s\n", n, t.Key, p.Value, t.Target.Metric, probeValues(p), verdict, note)
}
