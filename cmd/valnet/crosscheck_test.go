package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/valnet/valnet/crosscheck"
	"github.com/valnet/valnet/internal/nettest"
	"github.com/valnet/valnet/runner"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/sweep"
)

const tinyGrid = "../../crosscheck/testdata/tiny.good.yaml"

// TestCrosscheckBadInput: every problem found before a run is exit 2,
// with its message.
func TestCrosscheckBadInput(t *testing.T) {
	out := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--grid", "../../crosscheck/testdata/unknown-keys.bad.yaml"},
			`unknown-keys.bad.yaml:2:1: case: unknown key; did you mean "cases"?`},
		{[]string{"--grid", "nowhere.yaml"}, "--grid: open nowhere.yaml: no such file or directory"},
		{[]string{"--model", "nope"}, "--model nope: unknown backend; allowed: " + strings.Join(scenarios.Backends(), ", ")},
		{[]string{"--grid", tinyGrid, "--model", "inprocess", "--only", "("}, "--only (: error parsing regexp"},
		{[]string{"--grid", tinyGrid, "--model", "inprocess", "--only", "^nothing$"}, "--only ^nothing$ matches no case of grid tiny (cases: plain, slow-20ms)"},
		{[]string{"--grid", tinyGrid, "--model", "inprocess", "--repeat", "0"}, "--repeat 0: give at least 1"},
		{[]string{"--grid", tinyGrid, "--model", "inprocess", "--out", out, "extra"}, `unknown command "extra"`},
	}
	if err := os.WriteFile(filepath.Join(out, "other"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests = append(tests, struct {
		args []string
		want string
	}{[]string{"--grid", tinyGrid, "--model", "inprocess", "--out", out}, "is not empty and holds no crosscheck.json"})
	for _, tc := range tests {
		code, stdout, stderr := runCLI(t, append([]string{"crosscheck"}, tc.args...)...)
		if code != exitBadInput || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want 2 and %q", tc.args, code, stderr, stdout, tc.want)
		}
	}
}

// TestCrosscheckRealInprocess runs one tiny case on two real in-process
// networks and checks what the CLI reports against the runs' own
// summaries. Both sides are real, so what must agree is what two healthy
// networks at default timeouts do agree on: nobody misses, no round
// changes, no halt, block interval p50 within the tiny grid's ±60 %. The
// exit code is the verdict's.
func TestCrosscheckRealInprocess(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cc")
	for _, s := range []string{"model", "real"} {
		nettest.ShowLogsOnFailure(t, filepath.Join(out, "plain", s, "r1", runner.NodesDir), "node.log")
	}
	args := []string{"crosscheck", "--grid", tinyGrid, "--only", "^plain$", "--model", "inprocess", "--real", "inprocess", "--out", out, "--seed", "3"}
	code, stdout, stderr := runCLI(t, args...)
	if code != exitOK && code != exitFailed {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	data, err := os.ReadFile(filepath.Join(out, crosscheck.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Verdict string `json:"verdict"`
		Cases   []struct {
			Verdict string                                     `json:"verdict"`
			Values  map[crosscheck.Side]crosscheck.Values      `json:"values"`
			Goals   []crosscheck.GoalResult                    `json:"goals"`
			Runs    map[crosscheck.Side][]struct{ Dir string } `json:"runs"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Cases) != 1 {
		t.Fatalf("%d cases", len(f.Cases))
	}
	c := f.Cases[0]
	if want := map[int]string{exitOK: "pass", exitFailed: "fail"}[code]; f.Verdict != want || c.Verdict != want {
		t.Errorf("exit %d with verdict %s (case %s)", code, f.Verdict, c.Verdict)
	}
	for _, side := range crosscheck.Sides {
		s, err := sweep.ReadSummary(filepath.Join(out, c.Runs[side][0].Dir))
		if err != nil || s == nil {
			t.Fatalf("%s side: %v", side, err)
		}
		v := c.Values[side]
		if s.Seed != 3 || s.Backend != "inprocess" || v.HeightsCommitted != float64(s.Heights.Committed) || s.Heights.Committed < 3 ||
			*v.BlockIntervalP50 != s.BlockIntervalMS.P50 || *v.BlockIntervalP95 != s.BlockIntervalMS.P95 || v.MissedRate["v-1"] != 0 {
			t.Errorf("%s side: values %+v, summary seed %d heights %+v interval %+v", side, v, s.Seed, s.Heights, s.BlockIntervalMS)
		}
	}
	for _, g := range c.Goals {
		want := map[string]string{crosscheck.GoalMissedRate: "pass", crosscheck.GoalRoundChanges: "pass",
			crosscheck.GoalIntervalP50: "pass", crosscheck.GoalHalts: "n.a."}[g.Goal]
		if want != "" && g.Verdict != want {
			t.Errorf("goal %s: %s, want %s (%+v)", g.Goal, g.Verdict, want, g)
		}
	}
	if !strings.Contains(stdout, "| `plain` |") || !strings.Contains(stdout, "crosscheck directory: "+out) {
		t.Errorf("stdout:\n%s", stdout)
	}

	// The same command again resumes: no run, the same verdict.
	code2, _, stderr := runCLI(t, args...)
	if code2 != code || strings.Contains(stderr, "valnet crosscheck: case") {
		t.Errorf("rerun: exit %d (first %d), stderr:\n%s", code2, code, stderr)
	}
}

// TestCrosscheckFlagsAreDocumented: docs/crosscheck.md's options table
// lists exactly the command's flags.
func TestCrosscheckFlagsAreDocumented(t *testing.T) {
	data, err := os.ReadFile("../../docs/crosscheck.md")
	if err != nil {
		t.Fatal(err)
	}
	_, options, _ := strings.Cut(string(data), "\n## Options\n")
	options, _, _ = strings.Cut(options, "\n## ")
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `--([a-z-]+)").FindAllStringSubmatch(options, -1) {
		documented[m[1]] = true
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+--([a-z-]+)`).FindAllStringSubmatch(newCrosscheckCmd().Flags().FlagUsages(), -1) {
		flags[m[1]] = true
	}
	if len(flags) < 7 {
		t.Fatalf("read only %d flags off the usage", len(flags))
	}
	for f := range flags {
		if !documented[f] {
			t.Errorf("--%s is not in docs/crosscheck.md's options", f)
		}
	}
	for f := range documented {
		if !flags[f] {
			t.Errorf("docs/crosscheck.md documents --%s, which valnet crosscheck does not take", f)
		}
	}
}
