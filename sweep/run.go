package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/valnet/valnet/scenarios"
)

// RunRecord is one run of a point in sweep.json: its Result, or why the
// run could not be done.
type RunRecord struct {
	Repeat int `json:"repeat"`
	Result
	Error string `json:"error,omitempty"`
	// Resumed: finished by an earlier invocation and read back.
	Resumed bool `json:"resumed,omitempty"`
}

// PointResult is one point and its runs so far.
type PointResult struct {
	Point
	Runs []RunRecord
}

// Outcome is what a sweep invocation did.
type Outcome struct {
	Points []PointResult
	Tally
}

// Complete reports whether every run of every point finished.
func (o *Outcome) Complete() bool {
	for _, p := range o.Points {
		if finished(p.Runs) < len(p.Runs) {
			return false
		}
	}
	return !o.Interrupted && len(o.Failed) == 0
}

func finished(runs []RunRecord) int {
	n := 0
	for _, r := range runs {
		if r.Finished() {
			n++
		}
	}
	return n
}

// Files of a sweep directory.
const (
	JSONFile     = "sweep.json"
	CSVFile      = "sweep.csv"
	MarkdownFile = "sweep.md"
	HTMLFile     = "sweep.html"
)

// unfinishedSuffix is where an unfinished run directory is moved before
// its run is done again (prepareOutDir refuses a directory with a run).
const unfinishedSuffix = ".unfinished"

// Run does every run not finished yet, in point order, and writes the
// sweep's files after each run (sweep.json) and at the end (all of them,
// also when ctx ends: what finished is kept). progress gets one line per
// run; now is the clock (time.Now). The loop is crosscheck's too (Loop).
func (s *Sweep) Run(ctx context.Context, r Runner, progress io.Writer, now func() time.Time) (*Outcome, error) {
	if err := s.ClaimDir(); err != nil {
		return nil, err
	}
	out := &Outcome{}
	var slots []Slot
	for _, p := range s.Points {
		out.Points = append(out.Points, PointResult{Point: p, Runs: make([]RunRecord, s.Repeat)})
	}
	for i := range out.Points {
		pr := &out.Points[i]
		for rep := 1; rep <= s.Repeat; rep++ {
			pr.Runs[rep-1] = RunRecord{Repeat: rep, Result: Result{Seed: s.Seed(pr.Point, rep), Dir: RunDir(pr.Point, rep)}}
			slots = append(slots, Slot{
				Rec:   &pr.Runs[rep-1],
				Plan:  pr.Plan,
				Label: fmt.Sprintf("point %d/%d (%s) repeat %d/%d", i+1, len(out.Points), describeSet(pr.Set), rep, s.Repeat),
			})
		}
	}
	loop := &Loop{Command: "sweep", OutDir: s.OutDir, Runner: r, Progress: progress, Now: now,
		Save: func() error { return s.writeJSON(out) }}
	// What earlier invocations finished is read first, so the estimate
	// of time left counts only what is still to do.
	todo, err := loop.Resume(slots, &out.Tally)
	if err != nil {
		return nil, err
	}
	if err := loop.Save(); err != nil {
		return nil, err
	}
	if err := loop.Run(ctx, slots, todo, &out.Tally); err != nil {
		return out, err
	}
	return out, s.WriteFiles(out)
}

// setupError is RunFresh's failure before the run started (moving an
// unfinished run aside, making the directory): never an interruption.
type setupError struct{ error }

// RunFresh runs plan once with seed into dir, a run directory of a
// resumable command (sweep, crosscheck): a directory left there by an
// unfinished run is moved aside first (DIR.unfinished, replacing an
// older one), since the runner refuses a directory that holds a run.
func RunFresh(ctx context.Context, r Runner, plan *scenarios.Plan, seed int64, dir string) (Result, error) {
	if _, err := os.Stat(dir); err == nil {
		aside := dir + unfinishedSuffix
		if err := os.RemoveAll(aside); err == nil {
			err = os.Rename(dir, aside)
		}
		if err != nil {
			return Result{Seed: seed, Dir: dir}, setupError{fmt.Errorf("moving the unfinished run aside: %w", err)}
		}
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return Result{Seed: seed, Dir: dir}, setupError{err}
	}
	return r.Run(ctx, plan, seed, dir)
}

// ClaimDir makes the sweep directory, or checks that the one there holds
// this very sweep (then it is resumed). Run claims it too (claiming twice
// is harmless); a command claims first to announce only a sweep that goes
// ahead.
func (s *Sweep) ClaimDir() error {
	_, err := ClaimOutDir(s.OutDir, JSONFile, "sweep", func(data []byte) (string, error) {
		var old struct{ Identity }
		if err := json.Unmarshal(data, &old); err != nil {
			return "", err
		}
		return s.Identity.diff(old.Identity), nil
	})
	return err
}

// diff names what differs between two sweeps, "" when they are the same.
func (id Identity) diff(old Identity) string {
	seed := func(p *int64) string {
		if p == nil {
			return "the scenario's run.seed"
		}
		return fmt.Sprint(*p)
	}
	switch {
	case id.Scenario != old.Scenario:
		return fmt.Sprintf("scenario %s, not %s", old.Scenario, id.Scenario)
	case id.Backend != old.Backend:
		return fmt.Sprintf("backend %s, not %s", old.Backend, id.Backend)
	case !slices.Equal(id.Keys, old.Keys):
		return fmt.Sprintf("keys %s, not %s", strings.Join(old.Keys, " "), strings.Join(id.Keys, " "))
	case seed(id.BaseSeed) != seed(old.BaseSeed):
		return fmt.Sprintf("base seed %s, not %s", seed(old.BaseSeed), seed(id.BaseSeed))
	}
	for _, k := range id.Keys {
		if !slices.Equal(id.Values[k], old.Values[k]) {
			return fmt.Sprintf("%s=%s, not %s", k, strings.Join(old.Values[k], ","), strings.Join(id.Values[k], ","))
		}
	}
	if id.ScenarioSHA256 != old.ScenarioSHA256 {
		return "the scenario's text changed since"
	}
	return ""
}

// describeSet is a point's settings for the progress line.
func describeSet(set []scenarios.Setting) string {
	parts := make([]string, len(set))
	for i, s := range set {
		parts[i] = s.String()
	}
	return "set " + strings.Join(parts, " ")
}

// ETA is ", ~2m10s left" from the mean duration of the runs done so far
// by this invocation (done runs took spent, left are to do), or "" before
// any: the end of sweep's and crosscheck's progress lines.
func ETA(spent time.Duration, done, left int) string {
	if done == 0 || left <= 0 {
		return ""
	}
	return fmt.Sprintf(", ~%s left", round(spent/time.Duration(done)*time.Duration(left)))
}

func round(d time.Duration) time.Duration { return d.Round(time.Second) }
