package suite

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/runner"
	"github.com/valnet/valnet/scenarios"
)

// Scenarios on the sim backend: real runs through runner.Run, in
// virtual time, so a suite of them takes a second.
const (
	passing = `name: passing
run: {backend: sim, heights: 5}
validators:
  - {name: v, count: 4}
expect:
  - {metric: heights_committed, min: 5}
`
	failing = `name: failing
run: {backend: sim, heights: 5}
validators:
  - {name: v, count: 4}
expect:
  - {metric: heights_committed, min: 5}
  - {metric: heights_committed, max: 1}
`
	badKey = `name: bad-key
run: {backend: sim, heigths: 5}
validators:
  - {name: v, count: 4}
`
	badValue = `name: bad-value
run: {backend: sim, heights: -3}
validators:
  - {name: v, count: 4}
`
)

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type junitDoc struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Cases []struct {
			Name    string    `xml:"name,attr"`
			Failure *struct{} `xml:"failure"`
			Error   *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func readJUnit(t *testing.T, dir string) junitDoc {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc junitDoc
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("junit.xml: %v\n%s", err, data)
	}
	return doc
}

func readRecord(t *testing.T, dir string) Record {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, RecordFile))
	if err != nil {
		t.Fatal(err)
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestSuiteRunsEveryScenario: files, a built-in and a directory, each
// into its own run directory; the suite's exit code is the worst.
func TestSuiteRunsEveryScenario(t *testing.T) {
	for _, parallel := range []int{1, 2} {
		t.Run("parallel-"+string(rune('0'+parallel)), func(t *testing.T) {
			work := t.TempDir()
			a := write(t, work, "a.yaml", passing)
			dir := filepath.Join(work, "more")
			write(t, dir, "b.yaml", failing)
			write(t, dir, "c.yml", passing)
			write(t, dir, "notes.txt", "not a scenario")
			entries, err := Expand(context.Background(), []string{a, "baseline", dir}, scenarios.Overrides{Backend: scenarios.BackendSim})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name)
			}
			if got := strings.Join(names, ","); got != "passing,baseline,failing,passing" {
				t.Fatalf("entries %s", got)
			}
			out := filepath.Join(work, "suite")
			var progress strings.Builder
			o, err := Run(context.Background(), entries, Options{OutDir: out, Parallel: parallel, Progress: &progress})
			if err != nil {
				t.Fatal(err)
			}
			if o.ExitCode() != results.ExitFailed {
				t.Errorf("exit %d, want 1 (one scenario's expectation failed)", o.ExitCode())
			}
			rec := readRecord(t, out)
			if rec.ExitCode == nil || *rec.ExitCode != 1 || rec.Finished == nil || len(rec.Runs) != 4 {
				t.Fatalf("suite.json %+v", rec)
			}
			wantCodes := []int{0, 0, 1, 0}
			for i, r := range rec.Runs {
				if r.State != StateDone || r.ExitCode == nil || *r.ExitCode != wantCodes[i] || !r.Model {
					t.Errorf("run %d %+v, want done, exit %d, model", i, r, wantCodes[i])
				}
				if _, err := os.Stat(filepath.Join(r.Dir, runner.SummaryFile)); err != nil {
					t.Errorf("run %d: %v", i, err)
				}
			}
			// Its two expectations, and valnet's default one for each of
			// its four validators (sign_errors_unexplained).
			if rec.Runs[2].FailedExpectations != 1 || rec.Runs[2].Expectations != 6 {
				t.Errorf("failing: %+v", rec.Runs[2])
			}
			if filepath.Base(rec.Runs[0].Dir) != "1-passing" || filepath.Base(rec.Runs[3].Dir) != "4-passing" {
				t.Errorf("run dirs %s, %s", rec.Runs[0].Dir, rec.Runs[3].Dir)
			}
			doc := readJUnit(t, out)
			if len(doc.Suites) != 4 || doc.Failures != 1 || doc.Errors != 0 {
				t.Fatalf("junit: %d suites, %d failures, %d errors", len(doc.Suites), doc.Failures, doc.Errors)
			}
			for _, s := range doc.Suites {
				if len(s.Cases) == 0 || s.Cases[0].Name != results.SuiteRan || s.Cases[0].Error != nil {
					t.Errorf("suite %s: first case %+v, want a passing %q", s.Name, s.Cases, results.SuiteRan)
				}
				if !strings.Contains(s.Name, "(MODEL)") {
					t.Errorf("suite %s: a sim run not named a MODEL", s.Name)
				}
			}
			md, _ := os.ReadFile(filepath.Join(out, MarkdownFile))
			for _, want := range []string{"❌ valnet suite: 4 scenarios, 3 passed, 1 failed, 0 could not run", "| `failing` | sim (MODEL) | ❌ failed |", "## ✅ valnet baseline (MODEL)"} {
				if !strings.Contains(string(md), want) {
					t.Errorf("suite.md lacks %q:\n%s", want, md)
				}
			}
			if n := strings.Count(progress.String(), ": exit "); n != 4 {
				t.Errorf("progress: %d runs ended, want 4:\n%s", n, progress.String())
			}
		})
	}
}

// TestSuiteBadFilesFailBeforeAnything: every problem of every file, with
// its position, and nothing runs.
func TestSuiteBadFilesFailBeforeAnything(t *testing.T) {
	work := t.TempDir()
	good := write(t, work, "good.yaml", passing)
	k := write(t, work, "bad-key.yaml", badKey)
	v := write(t, work, "bad-value.yaml", badValue)
	empty := filepath.Join(work, "empty")
	os.Mkdir(empty, 0o755)
	_, err := Expand(context.Background(), []string{good, k, "no-such-builtin", v, empty}, scenarios.Overrides{})
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 4 {
		t.Fatalf("err %v, want 4 problems", err)
	}
	msg := err.Error()
	for _, want := range []string{"4 of the suite's scenarios cannot run (nothing ran)", k + ":2:", "heigths", v + ":2:", "no-such-builtin", empty, "no scenario files"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
}

// TestSuiteRunThatCannotBeDone: a run whose runner fails is recorded
// (exit 2, junit's "ran" an error) and the others still run.
func TestSuiteRunThatCannotBeDone(t *testing.T) {
	work := t.TempDir()
	entries, err := Expand(context.Background(), []string{write(t, work, "a.yaml", passing), write(t, work, "b.yaml", failing)}, scenarios.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	broken := func(ctx context.Context, plan *scenarios.Plan, o runner.Options) (*runner.Outcome, error) {
		calls++
		if plan.Name == "passing" {
			return nil, errors.New("the engine went away")
		}
		return runner.Run(ctx, plan, o)
	}
	out := filepath.Join(work, "suite")
	o, err := Run(context.Background(), entries, Options{OutDir: out, Run: broken})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 || o.ExitCode() != results.ExitError {
		t.Fatalf("calls %d, exit %d; want 2 runs and exit 2", calls, o.ExitCode())
	}
	doc := readJUnit(t, out)
	if doc.Suites[0].Cases[0].Error == nil || doc.Suites[0].Cases[0].Error.Message != "the engine went away" {
		t.Errorf("junit of the broken run: %+v", doc.Suites[0].Cases)
	}
	if rec := readRecord(t, out); *rec.Runs[0].ExitCode != 2 || rec.Runs[0].Error == "" || *rec.Runs[1].ExitCode != 1 {
		t.Errorf("suite.json %+v", rec.Runs)
	}
}

// TestSuiteInterrupted: once the context ends no run starts; those left
// are recorded as not run (exit 2).
func TestSuiteInterrupted(t *testing.T) {
	work := t.TempDir()
	entries, err := Expand(context.Background(), []string{write(t, work, "a.yaml", passing), write(t, work, "b.yaml", passing)}, scenarios.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	first := func(ctx context.Context, plan *scenarios.Plan, o runner.Options) (*runner.Outcome, error) {
		defer cancel() // Ctrl-C during the first run
		return runner.Run(ctx, plan, o)
	}
	out := filepath.Join(work, "suite")
	o, err := Run(ctx, entries, Options{OutDir: out, Run: first})
	if err != nil {
		t.Fatal(err)
	}
	rec := readRecord(t, out)
	if !rec.Interrupted || rec.Runs[1].State != StateNotRun || *rec.Runs[1].ExitCode != 2 || o.ExitCode() != results.ExitError {
		t.Errorf("suite.json %+v, exit %d", rec, o.ExitCode())
	}
}

// TestSuiteInterruptedAtTheEnd: a Ctrl-C while the last run ends (its
// summary complete) still makes the suite's exit 2.
func TestSuiteInterruptedAtTheEnd(t *testing.T) {
	work := t.TempDir()
	entries, err := Expand(context.Background(), []string{write(t, work, "a.yaml", passing)}, scenarios.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	late := func(ctx context.Context, plan *scenarios.Plan, o runner.Options) (*runner.Outcome, error) {
		out, err := runner.Run(context.Background(), plan, o) // runs to its end
		cancel()                                              // Ctrl-C as it returns
		return out, err
	}
	out := filepath.Join(work, "suite")
	o, err := Run(ctx, entries, Options{OutDir: out, Run: late})
	if err != nil {
		t.Fatal(err)
	}
	rec := readRecord(t, out)
	if o.ExitCode() != results.ExitError || !rec.Interrupted || *rec.ExitCode != 2 || *rec.Runs[0].ExitCode != 0 {
		t.Errorf("exit %d, suite.json %+v", o.ExitCode(), rec)
	}
	if md, _ := os.ReadFile(filepath.Join(out, MarkdownFile)); !strings.Contains(string(md), "❌ valnet suite: 1 scenarios, 1 passed, 0 failed, 0 could not run (interrupted: exit 2)") {
		t.Errorf("suite.md:\n%s", md)
	}
}

// TestSuiteOutDirMustBeNew: a suite does not write into a directory that
// holds something.
func TestSuiteOutDirMustBeNew(t *testing.T) {
	work := t.TempDir()
	write(t, work, "x", "")
	if _, err := Run(context.Background(), nil, Options{OutDir: work}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("err %v", err)
	}
}
