package crosscheck

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/sweep"
)

// CaseResult is one case, its runs on both sides so far and, once every
// run of both sides finished, the goals judged.
type CaseResult struct {
	PreparedCase
	Runs      map[Side][]sweep.RunRecord
	summaries map[Side][]*results.Summary // per repeat; nil until finished
	// Values and Goals are set when the case is complete.
	Values map[Side]Values
	Goals  []GoalResult
}

// Complete reports whether every run of both sides finished.
func (cr *CaseResult) Complete() bool {
	for _, s := range Sides {
		for i, r := range cr.Runs[s] {
			if !r.Finished() || cr.summaries[s][i] == nil {
				return false
			}
		}
	}
	return true
}

// Verdict is the case's: fail when a goal failed, pass when every goal
// passed or is n.a., incomplete when a run is missing.
func (cr *CaseResult) Verdict() string {
	if cr.Goals == nil {
		return VerdictIncomplete
	}
	for _, g := range cr.Goals {
		if g.Verdict == VerdictFail {
			return VerdictFail
		}
	}
	return VerdictPass
}

// VerdictIncomplete is a case whose runs did not all finish.
const VerdictIncomplete = "incomplete"

// Overloaded lists the sides some run of which ran on an overloaded host.
func (cr *CaseResult) Overloaded() []Side {
	var out []Side
	for _, s := range Sides {
		for _, r := range cr.Runs[s] {
			if r.Finished() && r.HostOverloaded {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// judge compares the case once complete.
func (cr *CaseResult) judge(c *Check) {
	if !cr.Complete() {
		return
	}
	cr.Values = map[Side]Values{}
	for _, s := range Sides {
		runs := make([]Run, len(cr.Runs[s]))
		for i, r := range cr.Runs[s] {
			runs[i] = Run{RunRecord: r, Summary: cr.summaries[s][i]}
		}
		cr.Values[s] = SideValues(c.Backend(s), runs)
	}
	cr.Goals = Compare(cr.Values[Model], cr.Values[Real], c.Grid.Goals)
}

// Outcome is what a crosscheck invocation did.
type Outcome struct {
	Cases       []CaseResult
	Ran         int     // runs done by this invocation
	Resumed     int     // runs read back from an earlier one
	Failed      []error // runs that could not be done
	Interrupted bool    // ctx ended before every run was done
}

// Exit codes of valnet crosscheck.
const (
	ExitOK       = 0 // every goal met (or n.a.) in every case
	ExitFailed   = 1 // some goal failed
	ExitBadInput = 2 // bad input, or a run could not be done or was interrupted
)

// ExitCode is 2 when a run could not be done, was interrupted or a case is
// incomplete, else 1 when some goal failed, else 0.
func (o *Outcome) ExitCode() int {
	if o.Interrupted || len(o.Failed) > 0 {
		return ExitBadInput
	}
	code := ExitOK
	for i := range o.Cases {
		switch o.Cases[i].Verdict() {
		case VerdictIncomplete:
			return ExitBadInput
		case VerdictFail:
			code = ExitFailed
		}
	}
	return code
}

// Run does every run not finished yet, case by case, the model side then
// the real one, repeat by repeat, and writes crosscheck.json after each
// run and all files at the end (also when ctx ends: what finished is
// kept). progress gets one line per run; now is the clock.
func (c *Check) Run(ctx context.Context, r sweep.Runner, progress io.Writer, now func() time.Time) (*Outcome, error) {
	if err := c.ClaimDir(); err != nil {
		return nil, err
	}
	out := &Outcome{}
	todo := 0
	for _, pc := range c.Cases {
		cr := CaseResult{PreparedCase: pc, Runs: map[Side][]sweep.RunRecord{}, summaries: map[Side][]*results.Summary{}}
		for _, s := range Sides {
			cr.Runs[s] = make([]sweep.RunRecord, c.Repeat)
			cr.summaries[s] = make([]*results.Summary, c.Repeat)
			for rep := 1; rep <= c.Repeat; rep++ {
				rec := sweep.RunRecord{Repeat: rep, Result: sweep.Result{Seed: c.Seed(pc, rep), Dir: RunDir(pc, s, rep)}}
				res, ok, err := sweep.LoadFinished(filepath.Join(c.OutDir, rec.Dir))
				switch {
				case err != nil:
					return nil, fmt.Errorf("reading the earlier run in %s: %w", rec.Dir, err)
				case ok && res.Seed != rec.Seed:
					return nil, fmt.Errorf("%s ran with seed %d, this crosscheck gives it seed %d; choose another --out", rec.Dir, res.Seed, rec.Seed)
				case ok:
					sum, err := sweep.ReadSummary(filepath.Join(c.OutDir, rec.Dir))
					if err != nil {
						return nil, fmt.Errorf("reading the earlier run in %s: %w", rec.Dir, err)
					}
					res.Dir = rec.Dir
					rec.Result, rec.Resumed = res, true
					cr.summaries[s][rep-1] = sum
					out.Resumed++
				default:
					todo++
				}
				cr.Runs[s][rep-1] = rec
			}
		}
		cr.judge(c)
		out.Cases = append(out.Cases, cr)
	}
	if err := c.writeJSON(out); err != nil {
		return nil, err
	}
	start := now()
	var (
		spent    time.Duration
		attempts int
	)
	total := len(c.Cases)
run:
	for i := range out.Cases {
		cr := &out.Cases[i]
		for rep := 1; rep <= c.Repeat; rep++ {
			for _, s := range Sides {
				rec := &cr.Runs[s][rep-1]
				if rec.Finished() {
					continue
				}
				if ctx.Err() != nil {
					out.Interrupted = true
					break run
				}
				fmt.Fprintf(progress, "valnet crosscheck: case %d/%d (%s) %s side (%s) repeat %d/%d, elapsed %s%s\n",
					i+1, total, cr.Name, s, c.Backend(s), rep, c.Repeat, now().Sub(start).Round(time.Second), sweep.ETA(spent, attempts, todo-attempts))
				t0 := now()
				c.runOne(ctx, r, cr, s, rec)
				spent += now().Sub(t0)
				attempts++
				switch {
				case rec.Error != "":
					out.Failed = append(out.Failed, fmt.Errorf("%s: %s", rec.Dir, rec.Error))
				case !rec.Finished():
					out.Interrupted = true // stopped by ctx
				default:
					out.Ran++
				}
				cr.judge(c)
				if err := c.writeJSON(out); err != nil {
					return out, err
				}
				if out.Interrupted {
					break run
				}
			}
		}
	}
	return out, c.WriteFiles(out)
}

// runOne runs one repeat of one side into rec (sweep.RunFresh), then
// reads its summary.
func (c *Check) runOne(ctx context.Context, r sweep.Runner, cr *CaseResult, s Side, rec *sweep.RunRecord) {
	dir := filepath.Join(c.OutDir, rec.Dir)
	res, err := sweep.RunFresh(ctx, r, cr.Plans[s], rec.Seed, dir)
	res.Seed, res.Dir = rec.Seed, rec.Dir
	rec.Result, rec.Resumed = res, false
	if err != nil && ctx.Err() == nil {
		rec.Error = err.Error()
		return
	}
	if !rec.Finished() {
		return
	}
	sum, err := sweep.ReadSummary(dir)
	switch {
	case err != nil:
		rec.Error = err.Error()
	case sum == nil:
		rec.Error = "the run finished but left no summary.json"
	default:
		cr.summaries[s][rec.Repeat-1] = sum
	}
}
