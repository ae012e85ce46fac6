package crosscheck

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/valnet/valnet/scenarios"
	"testing"
	"time"

	"github.com/valnet/valnet/internal/golden"
	"github.com/valnet/valnet/results"
)

// threeCases: one that agrees, one whose block interval is 20 % apart,
// one that halts on both sides, its real side on an overloaded host.
const threeCases = `
name: three
description: Three cases of the tiny scenario.
cases:
  - name: agree
    scenario: tiny.scenario.yaml
  - name: apart
    description: the model's blocks are slower
    scenario: tiny.scenario.yaml
    set: [run.heights=5]
  - name: halted
    scenario: tiny.scenario.yaml
`

// threeCanned are the fake's summaries for threeCases.
var threeCanned = map[string]sum{
	"agree/model":  healthy,
	"agree/real":   with(healthy, func(x *sum) { x.p50, x.p95 = 1050, 1250 }),
	"apart/model":  with(healthy, func(x *sum) { x.p50 = 1200 }),
	"apart/real":   healthy,
	"halted/model": with(healthy, halts(halt(5, 15500))),
	"halted/real":  with(healthy, func(x *sum) { x.halts, x.overloaded = []results.Halt{halt(5, 15000)}, true }),
}

func prepareThree(t *testing.T, out string, edit func(*Config)) *Check {
	t.Helper()
	g, err := ParseGrid("testdata/three.yaml", "testdata", []byte(threeCases))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Grid: g, Model: "process", Real: "inprocess", Repeat: 1, OutDir: out}
	if edit != nil {
		edit(&cfg)
	}
	c, err := Prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runThree runs c through the fake with threeCanned's summaries; it
// returns the outcome, the fake (its calls) and the progress lines.
func runThree(t *testing.T, c *Check) (*Outcome, *fakeRunner, *bytes.Buffer) {
	t.Helper()
	f := &fakeRunner{canned: threeCanned}
	var progress bytes.Buffer
	o, err := c.Run(context.Background(), f, &progress, (&clock{}).now)
	if err != nil {
		t.Fatal(err)
	}
	return o, f, &progress
}

// clock advances 10 s each time it is read.
type clock struct{ t time.Time }

func (c *clock) now() time.Time {
	c.t = c.t.Add(10 * time.Second)
	return c.t
}

// readJSON reads crosscheck.json.
func readJSON(t *testing.T, dir string) fileJSON {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestRunComparesEveryCase runs three cases through the fake: the runs
// go model then real with the same seed, the verdicts and exit code
// follow the goals, the overloaded host is marked, and crosscheck.md is
// the golden table.
func TestRunComparesEveryCase(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cc")
	c := prepareThree(t, out, nil)
	o, f, progress := runThree(t, c)
	want := []string{"agree/model/r1 seed 1", "agree/real/r1 seed 1", "apart/model/r1 seed 1", "apart/real/r1 seed 1",
		"halted/model/r1 seed 1", "halted/real/r1 seed 1"}
	if !slices.Equal(f.calls, want) {
		t.Errorf("calls %q\nwant  %q", f.calls, want)
	}
	if o.ExitCode() != ExitFailed || o.Ran != 6 || o.Resumed != 0 {
		t.Errorf("exit %d, ran %d, resumed %d", o.ExitCode(), o.Ran, o.Resumed)
	}
	if !strings.Contains(progress.String(), "valnet crosscheck: case 3/3 (halted) real side (inprocess) repeat 1/1, elapsed 2m40s, ~10s left\n") {
		t.Errorf("progress:\n%s", progress.String())
	}
	js := readJSON(t, out)
	var verdicts []string
	for _, cj := range js.Cases {
		verdicts = append(verdicts, cj.Verdict)
	}
	if !slices.Equal(verdicts, []string{VerdictPass, VerdictFail, VerdictPass}) || js.Verdict != VerdictFail || !js.Complete {
		t.Errorf("verdicts %v, overall %s, complete %v", verdicts, js.Verdict, js.Complete)
	}
	if h := js.Cases[2]; !slices.Equal(h.HostOverloaded, []Side{Real}) || !h.Values[Real].HostOverloaded || h.Values[Model].HostOverloaded {
		t.Errorf("halted: overloaded %v", h.HostOverloaded)
	}
	if a := js.Cases[1]; a.Goals[2].Goal != GoalIntervalP50 || a.Goals[2].Verdict != VerdictFail || *a.Goals[2].Diff != 20 ||
		a.Plans[Model].Source != filepath.Join("testdata", "tiny.scenario.yaml") || a.Backends[Model] != "process" || !slices.Equal(a.Set, []string{"run.heights=5"}) {
		t.Errorf("apart: %+v", a)
	}
	if r := js.Cases[0].Runs[Real]; len(r) != 1 || r[0].Dir != "agree/real/r1" || r[0].StopReason != "heights" || r[0].Seed != 1 {
		t.Errorf("agree's real runs: %+v", r)
	}
	md, err := os.ReadFile(filepath.Join(out, MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/three.md.golden", md, *update)

	// The same command again resumes: nothing runs, the files are the same.
	f2 := &fakeRunner{}
	o, err = prepareThree(t, out, nil).Run(context.Background(), f2, progress, (&clock{}).now)
	if err != nil {
		t.Fatal(err)
	}
	if len(f2.calls) != 0 || o.Resumed != 6 || o.ExitCode() != ExitFailed {
		t.Errorf("rerun: calls %v, resumed %d, exit %d", f2.calls, o.Resumed, o.ExitCode())
	}
	again, _ := os.ReadFile(filepath.Join(out, MarkdownFile))
	if !bytes.Equal(again, md) {
		t.Errorf("the resumed crosscheck.md differs:\n%s", again)
	}
}

// TestRunExitCodes: every goal met is 0, a failed or interrupted run 2.
func TestRunExitCodes(t *testing.T) {
	agree := map[string]sum{}
	for k := range threeCanned {
		agree[k] = healthy
	}
	tests := []struct {
		name                string
		canned              map[string]sum
		failAt, interruptAt int
		exit                int
		verdict             string
		ran                 int
	}{
		{name: "all met", canned: agree, exit: ExitOK, verdict: VerdictPass, ran: 6},
		{name: "a goal fails", canned: threeCanned, exit: ExitFailed, verdict: VerdictFail, ran: 6},
		{name: "a run fails", canned: agree, failAt: 3, exit: ExitBadInput, verdict: VerdictIncomplete, ran: 5},
		{name: "interrupted", canned: agree, interruptAt: 2, exit: ExitBadInput, verdict: VerdictIncomplete, ran: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "cc")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f := &fakeRunner{canned: tc.canned, failAt: tc.failAt, interruptAt: tc.interruptAt, cancel: cancel}
			o, err := prepareThree(t, out, nil).Run(ctx, f, &bytes.Buffer{}, (&clock{}).now)
			if err != nil {
				t.Fatal(err)
			}
			if o.ExitCode() != tc.exit || o.Verdict() != tc.verdict || o.Ran != tc.ran {
				t.Errorf("exit %d verdict %s ran %d, want %d %s %d", o.ExitCode(), o.Verdict(), o.Ran, tc.exit, tc.verdict, tc.ran)
			}
			if tc.exit != ExitBadInput {
				return
			}
			// The same command again does what is left, and only that.
			f2 := &fakeRunner{canned: tc.canned}
			o, err = prepareThree(t, out, nil).Run(context.Background(), f2, &bytes.Buffer{}, (&clock{}).now)
			if err != nil {
				t.Fatal(err)
			}
			if o.ExitCode() != ExitOK || o.Ran != 6-tc.ran || o.Resumed != tc.ran || len(f2.calls) != 6-tc.ran {
				t.Errorf("rerun: exit %d ran %d resumed %d calls %v", o.ExitCode(), o.Ran, o.Resumed, f2.calls)
			}
		})
	}
}

// TestRunRepeatsAndSeeds: repeat r runs with seed S + r - 1 on both sides,
// into CASE/SIDE/rR; --only selects cases.
func TestRunRepeatsAndSeeds(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cc")
	seed := int64(10)
	c := prepareThree(t, out, func(cfg *Config) {
		cfg.Repeat, cfg.Seed, cfg.Only = 2, &seed, regexp.MustCompile("^ag")
	})
	f := &fakeRunner{canned: threeCanned}
	o, err := c.Run(context.Background(), f, &bytes.Buffer{}, (&clock{}).now)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"agree/model/r1 seed 10", "agree/real/r1 seed 10", "agree/model/r2 seed 11", "agree/real/r2 seed 11"}
	if !slices.Equal(f.calls, want) || len(o.Cases) != 1 || o.Cases[0].Values[Model].Runs != 2 {
		t.Errorf("calls %q (want %q), %d cases", f.calls, want, len(o.Cases))
	}
	if js := readJSON(t, out); js.Identity.Only != "^ag" || *js.Identity.BaseSeed != 10 || js.Repeat != 2 {
		t.Errorf("identity %+v", js.Identity)
	}
}

// TestClaimRefusesAnotherCrosscheck: a directory holding one crosscheck
// is not resumed by another.
func TestClaimRefusesAnotherCrosscheck(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cc")
	if _, err := prepareThree(t, out, nil).Run(context.Background(), &fakeRunner{canned: threeCanned}, &bytes.Buffer{}, (&clock{}).now); err != nil {
		t.Fatal(err)
	}
	seed := int64(3)
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Model = "inprocess" }, "(model backend process, not inprocess)"},
		{func(c *Config) { c.Seed = &seed }, "(base seed each case's run.seed, not 3)"},
		{func(c *Config) { c.Only = regexp.MustCompile("a") }, `(--only "", not "a")`},
	} {
		err := prepareThree(t, out, tc.edit).ClaimDir()
		if err == nil || !strings.Contains(err.Error(), "holds another crosscheck "+tc.want) {
			t.Errorf("got %v, want %s", err, tc.want)
		}
	}
}

// TestPrepareProblems: flags and cases are checked before anything runs,
// every problem at once, a case's problems at the case.
func TestPrepareProblems(t *testing.T) {
	grid := `name: p
cases:
  - name: bad-value
    scenario: tiny.scenario.yaml
    set:
      - validators[v].count=many
  - name: no-file
    scenario: missing.yaml
  - name: fine
    scenario: tiny.scenario.yaml
`
	g, err := ParseGrid("testdata/p.yaml", "testdata", []byte(grid))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Grid: g, Model: "simx", Real: "", Repeat: 0},
			"--repeat 0: give at least 1\n--model simx: unknown backend; allowed: " + strings.Join(scenarios.Backends(), ", ") + "\n--real: give a backend (" + strings.Join(scenarios.Backends(), ", ") + ")"},
		{Config{Grid: g, Model: "inprocess", Real: "inprocess", Repeat: 1, Only: regexp.MustCompile("x")},
			"--only x matches no case of grid p (cases: bad-value, no-file, fine)"},
		{Config{Grid: g, Model: "inprocess", Real: "process", Repeat: 1},
			"testdata/p.yaml:3:5: case bad-value: --set validators[v].count=many: expected an integer, got \"many\"\n" +
				"testdata/p.yaml:7:5: case no-file: reading scenario: open testdata/missing.yaml: no such file or directory"},
	}
	for _, tc := range tests {
		_, err := Prepare(tc.cfg)
		if err == nil || err.Error() != tc.want {
			t.Errorf("got  %v\nwant %s", err, tc.want)
		}
	}
}

// TestCaseRepeatOverridesTheChecks: a case's repeat key runs that case
// so many times a side, the others the check's --repeat; the table says
// so.
func TestCaseRepeatOverridesTheChecks(t *testing.T) {
	g, err := ParseGrid("testdata/three.yaml", "testdata", []byte(strings.Replace(threeCases,
		"  - name: halted\n", "  - name: halted\n    repeat: 2\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "cc")
	c, err := Prepare(Config{Grid: g, Model: "process", Real: "inprocess", Repeat: 1, OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	o, f, progress := runThree(t, c)
	want := []string{"agree/model/r1 seed 1", "agree/real/r1 seed 1", "apart/model/r1 seed 1", "apart/real/r1 seed 1",
		"halted/model/r1 seed 1", "halted/real/r1 seed 1", "halted/model/r2 seed 2", "halted/real/r2 seed 2"}
	if !slices.Equal(f.calls, want) {
		t.Errorf("calls %q\nwant  %q", f.calls, want)
	}
	if o.Ran != 8 || !strings.Contains(progress.String(), "(halted) real side (inprocess) repeat 2/2") {
		t.Errorf("ran %d; progress:\n%s", o.Ran, progress.String())
	}
	var table bytes.Buffer
	if err := c.WriteMarkdown(&table, o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "1 run (halted: 2) per case and side; repeat r runs with seed") {
		t.Errorf("table:\n%s", table.String())
	}
	js := readJSON(t, out)
	repeats := map[string]int{}
	for _, cj := range js.Cases {
		repeats[cj.Name] = cj.Repeat
	}
	if want := map[string]int{"agree": 1, "apart": 1, "halted": 2}; !maps.Equal(repeats, want) || js.Repeat != 1 {
		t.Errorf("crosscheck.json: repeat %d, cases' repeats %v; want 1 and %v", js.Repeat, repeats, want)
	}
}
