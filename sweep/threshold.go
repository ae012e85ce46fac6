package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	Run
	Value float64 `json:"target_value"` // the target's metric in this run
	Held  bool    `json:"held"`
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
	Scenario  string // as given: a file or builtin name
	Backend   string // "" = the scenario's
	Key       string // the --vary path
	Grid      Grid
	Target    Target
	Direction Direction
	Seeds     []int64 // one per repeat; the same seeds at every value
	OutDir    string
	// RunPoint runs the scenario once with Key set to value.
	RunPoint RunPointFunc
	// Finished reads a run directory left by an earlier search, if that run
	// finished (ok false: run it again).
	Finished func(dir string) (Run, bool)
	// Out gets every probe as it finishes and the result line.
	Out io.Writer
	// Stamp identifies what the runs depend on (scenario text, key,
	// backend, seeds): a directory made by another search is refused.
	Stamp Stamp
}

// RunPointFunc runs the scenario once with key=value and seed into dir.
type RunPointFunc func(ctx context.Context, key, value string, seed int64, dir string) (Run, error)

// ProbeDir is where the repeat-th run (from 1) of value goes under out.
func ProbeDir(out, key, value string, repeat int) string {
	return filepath.Join(out, PointDirName(map[string]string{key: value}), "r"+strconv.Itoa(repeat))
}

// Search runs the search, writing threshold.json under OutDir after every
// probe (so an interrupted search keeps what it did). The error is the
// reason a search could not complete (a run could not be done, ctx ended);
// the report is returned with it, verdict Incomplete.
func (t *Threshold) Search(ctx context.Context) (*ThresholdReport, error) {
	if err := t.Stamp.claim(t.OutDir); err != nil {
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
	if werr := rep.write(t.OutDir); werr != nil && err == nil {
		err = werr
	}
	return rep, err
}

// probe runs (or reuses) every repeat at one value.
func (t *Threshold) probe(ctx context.Context, value string) (ThresholdProbe, error) {
	p := ThresholdProbe{Value: value}
	for i, seed := range t.Seeds {
		dir := ProbeDir(t.OutDir, t.Key, value, i+1)
		run, reused := t.Finished(dir)
		if reused && run.Seed != seed {
			reused = false // made with another seed: run it again
		}
		if !reused {
			if err := ctx.Err(); err != nil {
				return p, err
			}
			var err error
			if run, err = t.RunPoint(ctx, t.Key, value, seed, dir); err != nil {
				return p, fmt.Errorf("%s=%s, run %d of %d (seed %d, %s): %w", t.Key, value, i+1, len(t.Seeds), seed, dir, err)
			}
		}
		v, held, err := t.Target.Holds(run.Metrics)
		if err != nil {
			return p, fmt.Errorf("%s=%s, run %d (%s): %w", t.Key, value, i+1, dir, err)
		}
		p.Runs = append(p.Runs, ThresholdRun{Run: run, Value: v, Held: held, Reused: reused})
		if held {
			p.HeldRuns++
		}
	}
	p.Held = p.HeldRuns == len(p.Runs)
	p.Mixed = p.HeldRuns > 0 && !p.Held
	return p, nil
}

func (t *Threshold) printProbe(n int, p ThresholdProbe) {
	vals := make([]string, len(p.Runs))
	reused := 0
	for i, r := range p.Runs {
		vals[i] = strconv.FormatFloat(r.Value, 'g', 4, 64)
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
	fmt.Fprintf(t.Out, "probe %d  %s=%s  %s: %s  %s%s\n", n, t.Key, p.Value, t.Target.Metric, strings.Join(vals, " "), verdict, note)
}

// ErrInterrupted is what Search returns when ctx ended before it was done.
var ErrInterrupted = errors.New("interrupted")
