package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/valnet/valnet/internal/atomicfile"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/runner"
	"github.com/valnet/valnet/scenarios"
)

// The suite directory's files.
const (
	RecordFile   = "suite.json"
	JUnitFile    = "junit.xml"
	MarkdownFile = "suite.md"
)

// Run states in suite.json.
const (
	StatePending = "pending"
	StateRunning = "running"
	StateDone    = "done"
	StateNotRun  = "not_run" // interrupted before it started
)

// Record is suite.json: the suite as it goes (rewritten whole at every
// change, so a crash leaves what was done).
type Record struct {
	Dir         string      `json:"dir"`
	Started     time.Time   `json:"started"`
	Finished    *time.Time  `json:"finished,omitempty"`
	Parallel    int         `json:"parallel"`
	ExitCode    *int        `json:"exit_code,omitempty"` // the worst of the runs', once all are done
	Interrupted bool        `json:"interrupted,omitempty"`
	Runs        []RunRecord `json:"runs"`
}

// RunRecord is one scenario of the suite in suite.json.
type RunRecord struct {
	Scenario   string `json:"scenario"`
	Source     string `json:"source"`
	Dir        string `json:"dir"`
	Backend    string `json:"backend"`
	Model      bool   `json:"model,omitempty"` // the sim: a MODEL, no real nodes
	State      string `json:"state"`
	ExitCode   *int   `json:"exit_code,omitempty"`
	OK         bool   `json:"ok"`
	StopReason string `json:"stop_reason,omitempty"`
	Result     string `json:"result,omitempty"`
	Error      string `json:"error,omitempty"`
	// Expectations and FailedExpectations count the run's expect: results.
	Expectations       int   `json:"expectations"`
	FailedExpectations int   `json:"failed_expectations"`
	DurationMS         int64 `json:"duration_ms"`
}

// Options are how a suite runs.
type Options struct {
	OutDir   string
	Parallel int // runs at once; < 1: 1
	// Base is every run's runner.Options (seed, live status, ...); OutDir
	// is each run's own.
	Base runner.Options
	// Progress gets a line as each run starts and ends; nil: none.
	Progress io.Writer
	// Run runs one plan; nil: runner.Run (tests give a fake).
	Run func(ctx context.Context, plan *scenarios.Plan, opts runner.Options) (*runner.Outcome, error)
}

// Outcome is a finished suite.
type Outcome struct {
	Record      *Record
	Runs        []results.SuiteRun
	interrupted bool
}

// ExitCode is the suite's: the worst of its runs' (2 > 1 > 0), and 2
// when it was interrupted.
func (o *Outcome) ExitCode() int {
	if o.interrupted {
		return results.ExitError
	}
	return results.SuiteExitCode(o.Runs)
}

// Run runs entries into opts.OutDir (a new or empty directory), one run
// directory each (NN-name), at most opts.Parallel at once, and writes
// suite.json, junit.xml and suite.md. A run that cannot be done is
// recorded (exit 2) and the others go on; once ctx ends, no further run
// starts. The error is for the suite directory itself.
func Run(ctx context.Context, entries []Entry, opts Options) (*Outcome, error) {
	if err := claim(opts.OutDir); err != nil {
		return nil, err
	}
	run := opts.Run
	if run == nil {
		run = runner.Run
	}
	parallel := max(opts.Parallel, 1)
	s := &state{dir: opts.OutDir, progress: opts.Progress,
		rec:  &Record{Dir: opts.OutDir, Started: time.Now().UTC(), Parallel: parallel},
		runs: make([]results.SuiteRun, len(entries))}
	width := len(fmt.Sprint(len(entries)))
	for i, e := range entries {
		dir := filepath.Join(opts.OutDir, fmt.Sprintf("%0*d-%s", width, i+1, e.Name))
		s.rec.Runs = append(s.rec.Runs, RunRecord{Scenario: e.Name, Source: e.Source(), Dir: dir,
			Backend: e.Plan.Run.Backend, Model: e.Plan.Run.Backend == scenarios.BackendSim, State: StatePending})
		s.runs[i] = results.SuiteRun{Name: e.Name, Source: e.Source(), Dir: dir}
	}
	if err := s.write(); err != nil {
		return nil, err
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				o := opts.Base
				o.OutDir = s.rec.Runs[i].Dir
				s.started(i, len(entries))
				out, err := run(ctx, entries[i].Plan, o)
				s.finished(i, len(entries), out, err)
			}
		}()
	}
	interrupted := false
	for i := range entries {
		if ctx.Err() != nil {
			interrupted = true
			s.notRun(i)
			continue
		}
		select {
		case next <- i:
		case <-ctx.Done():
			interrupted = true
			s.notRun(i)
		}
	}
	close(next)
	wg.Wait()
	// A Ctrl-C that came while the last runs stopped or wrote their
	// reports still ends the suite as interrupted (exit 2), as valnet run
	// exits for one run.
	interrupted = interrupted || ctx.Err() != nil
	now := time.Now().UTC()
	s.mu.Lock()
	o := &Outcome{Record: s.rec, Runs: s.runs, interrupted: interrupted}
	code := o.ExitCode()
	s.rec.Finished, s.rec.ExitCode, s.rec.Interrupted = &now, &code, interrupted
	s.mu.Unlock()
	return o, s.write()
}

// claim makes the suite directory: a new or empty one.
func claim(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return err
	case len(entries) > 0:
		return fmt.Errorf("--out %s is not empty: a suite goes into a new or empty directory", dir)
	}
	return nil
}

// state is the suite as it runs; mu guards rec and runs.
type state struct {
	mu       sync.Mutex
	dir      string
	progress io.Writer
	rec      *Record
	runs     []results.SuiteRun
}

func (s *state) started(i, n int) {
	s.mu.Lock()
	r := &s.rec.Runs[i]
	r.State = StateRunning
	if s.progress != nil {
		fmt.Fprintf(s.progress, "valnet suite: %d/%d %s (backend %s) into %s\n", i+1, n, r.Scenario, r.Backend, r.Dir)
	}
	s.mu.Unlock()
	s.writeOrSay()
}

func (s *state) finished(i, n int, out *runner.Outcome, err error) {
	s.mu.Lock()
	r, sr := &s.rec.Runs[i], &s.runs[i]
	r.State = StateDone
	if out != nil && out.Summary != nil {
		sum := out.Summary
		sr.Summary = sum
		r.OK, r.StopReason, r.Result, r.DurationMS = sum.OK, sum.StopReason, results.ResultLine(sum), sum.DurationMS
		r.Expectations = len(sum.Expectations)
		for _, e := range sum.Expectations {
			if !e.OK {
				r.FailedExpectations++
			}
		}
	}
	if err != nil {
		r.Error, sr.Error = err.Error(), err.Error()
		r.OK = false
	}
	code := sr.ExitCode()
	r.ExitCode = &code
	if s.progress != nil {
		what := r.Result
		if err != nil {
			what = "could not run: " + err.Error()
		}
		fmt.Fprintf(s.progress, "valnet suite: %d/%d %s: exit %d: %s\n", i+1, n, r.Scenario, code, what)
	}
	s.mu.Unlock()
	s.writeOrSay()
}

func (s *state) notRun(i int) {
	s.mu.Lock()
	const why = "interrupted before it started"
	s.rec.Runs[i].State, s.rec.Runs[i].Error = StateNotRun, why
	code := results.ExitError
	s.rec.Runs[i].ExitCode = &code
	s.runs[i].Error = why
	s.mu.Unlock()
}

// writeOrSay writes the suite's files; a failure to is said, and the
// suite goes on (its last write reports it).
func (s *state) writeOrSay() {
	if err := s.write(); err != nil && s.progress != nil {
		fmt.Fprintf(s.progress, "valnet suite: %v\n", err)
	}
}

// write writes suite.json, junit.xml and suite.md as they stand.
func (s *state) write() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := atomicfile.WriteJSON(filepath.Join(s.dir, RecordFile), 0o644, s.rec); err != nil {
		return err
	}
	var done []results.SuiteRun
	for i, r := range s.rec.Runs {
		if r.State == StateDone || r.State == StateNotRun {
			done = append(done, s.runs[i])
		}
	}
	if err := atomicfile.WriteWith(filepath.Join(s.dir, JUnitFile), 0o644, func(w io.Writer) error {
		return results.WriteSuiteJUnit(w, done)
	}); err != nil {
		return err
	}
	return atomicfile.WriteWith(filepath.Join(s.dir, MarkdownFile), 0o644, func(w io.Writer) error {
		return results.WriteSuiteMarkdown(w, done, s.rec.Interrupted)
	})
}
