package crosscheck

import (
	"context"
	"fmt"
	"io"
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
	Cases []CaseResult
	sweep.Tally
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

// Run does every run not finished yet, case by case, repeat by repeat,
// the model side then the real one, and writes crosscheck.json after each
// run and all files at the end (also when ctx ends: what finished is
// kept). progress gets one line per run; now is the clock. The loop is
// sweep's (sweep.Loop).
func (c *Check) Run(ctx context.Context, r sweep.Runner, progress io.Writer, now func() time.Time) (*Outcome, error) {
	if err := c.ClaimDir(); err != nil {
		return nil, err
	}
	out := &Outcome{Cases: make([]CaseResult, len(c.Cases))}
	var slots []sweep.Slot
	caseOf := map[*sweep.RunRecord]*CaseResult{}
	for i, pc := range c.Cases {
		cr := &out.Cases[i]
		*cr = CaseResult{PreparedCase: pc, Runs: map[Side][]sweep.RunRecord{}, summaries: map[Side][]*results.Summary{}}
		repeats := c.Repeats(pc)
		for _, s := range Sides {
			cr.Runs[s] = make([]sweep.RunRecord, repeats)
			cr.summaries[s] = make([]*results.Summary, repeats)
		}
		for rep := 1; rep <= repeats; rep++ {
			for _, s := range Sides {
				rec := &cr.Runs[s][rep-1]
				*rec = sweep.RunRecord{Repeat: rep, Result: sweep.Result{Seed: c.Seed(pc, rep), Dir: RunDir(pc, s, rep)}}
				caseOf[rec] = cr
				summary := &cr.summaries[s][rep-1]
				slots = append(slots, sweep.Slot{
					Rec:   rec,
					Plan:  cr.Plans[s],
					Label: fmt.Sprintf("case %d/%d (%s) %s side (%s) repeat %d/%d", i+1, len(c.Cases), cr.Name, s, c.Backend(s), rep, repeats),
					Finished: func(dir string) error {
						sum, err := sweep.ReadSummary(dir)
						switch {
						case err != nil:
							return err
						case sum == nil:
							return fmt.Errorf("the run finished but left no summary.json")
						}
						*summary = sum
						return nil
					},
				})
			}
		}
	}
	loop := &sweep.Loop{Command: "crosscheck", OutDir: c.OutDir, Runner: r, Progress: progress, Now: now,
		Save:     func() error { return c.writeJSON(out) },
		AfterRun: func(s sweep.Slot) { caseOf[s.Rec].judge(c) }}
	todo, err := loop.Resume(slots, &out.Tally)
	if err != nil {
		return nil, err
	}
	for i := range out.Cases {
		out.Cases[i].judge(c)
	}
	if err := loop.Save(); err != nil {
		return nil, err
	}
	if err := loop.Run(ctx, slots, todo, &out.Tally); err != nil {
		return out, err
	}
	return out, c.WriteFiles(out)
}
