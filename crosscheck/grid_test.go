package crosscheck

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/valnet/valnet/internal/golden"
	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/scenarios"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestBadGrids checks the exact messages, positions included, for each
// testdata/*.bad.yaml against its .bad.want (-update rewrites them).
func TestBadGrids(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.bad.yaml")
	if len(files) < 5 {
		t.Fatalf("only %d testdata/*.bad.yaml", len(files))
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".bad.yaml"), func(t *testing.T) {
			g, err := ReadGrid(file)
			if err == nil {
				t.Fatalf("read without errors: %+v", g)
			}
			if _, ok := scenarios.AsErrors(err); !ok {
				t.Errorf("not scenarios.Errors (no positions): %v", err)
			}
			golden.Check(t, strings.TrimSuffix(file, ".yaml")+".want", []byte(err.Error()+"\n"), *update)
		})
	}
	wants, _ := filepath.Glob("testdata/*.bad.want")
	for _, w := range wants {
		if _, err := os.Stat(strings.TrimSuffix(w, ".want") + ".yaml"); err != nil {
			t.Errorf("%s has no .yaml: a test that stopped running", w)
		}
	}
}

// TestGoodGrids: every testdata/*.good.yaml reads, and every case of it
// resolves on the inprocess backend.
func TestGoodGrids(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.good.yaml")
	if len(files) < 2 {
		t.Fatalf("only %d testdata/*.good.yaml", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			g, err := ReadGrid(file)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Prepare(Config{Grid: g, Model: "inprocess", Real: "process", Repeat: 1}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestGridKeys reads goals.good.yaml, which has every key, exactly.
func TestGridKeys(t *testing.T) {
	g, err := ReadGrid("testdata/goals.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if g.Name != "goals" || g.Description != "Every key, with goals set." || g.File != "testdata/goals.good.yaml" {
		t.Errorf("grid %q %q %q", g.Name, g.Description, g.File)
	}
	if want := (Goals{MissedRatePP: 10, RoundChangesPer20: 2, BlockIntervalPct: 20, HaltDurationPct: 0}); g.Goals != want {
		t.Errorf("goals %+v, want %+v", g.Goals, want)
	}
	if len(g.Cases) != 3 {
		t.Fatalf("%d cases", len(g.Cases))
	}
	c := g.Cases[1]
	var set []string
	for _, s := range c.Set {
		set = append(set, s.String())
	}
	want := []string{"run.heights=4",
		"chain.timeouts={propose: 300ms, propose_delta: 100ms, prevote: 100ms, prevote_delta: 50ms, precommit: 100ms, precommit_delta: 50ms, commit: 100ms}",
		"validators[slow].signer.latency={dist: uniform, min: 900ms, max: 1100ms}"}
	if c.Name != "slow.1_s" || c.Scenario != "slow-signer" || !slices.Equal(set, want) || c.Pos != (scenarios.Pos{File: "testdata/goals.good.yaml", Line: 16, Col: 5}) {
		t.Errorf("case %+v\nset %q", c, set)
	}
	if g.Cases[0].Description != "the builtin baseline" || g.Cases[2].Scenario != filepath.Join("testdata", "tiny.scenario.yaml") {
		t.Errorf("cases %+v", g.Cases)
	}
}

// TestGridNameFromFile: without name:, the file's name is the grid's.
func TestGridNameFromFile(t *testing.T) {
	g, err := ParseGrid("dir/my-grid.yaml", "dir", []byte("cases: [{name: a, scenario: x.yaml}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if g.Name != "my-grid" || g.Goals != DefaultGoals || g.Cases[0].Scenario != filepath.Join("dir", "x.yaml") {
		t.Errorf("%+v", g)
	}
}

// TestDefaultGrid: the built-in grid covers the list, one axis
// at a time around a base, and every case resolves on both real backends.
func TestDefaultGrid(t *testing.T) {
	g, err := ReadGrid("")
	if err != nil {
		t.Fatal(err)
	}
	if g.Name != DefaultGridName || g.File != "builtin:default" || g.Goals != DefaultGoals {
		t.Errorf("grid %q from %q, goals %+v", g.Name, g.File, g.Goals)
	}
	c, err := Prepare(Config{Grid: g, Model: "process", Real: "inprocess", Repeat: 1})
	if err != nil {
		t.Fatal(err)
	}
	has := func(check func(pc PreparedCase) bool) bool { return slices.ContainsFunc(c.Cases, check) }
	validators := func(n int) func(PreparedCase) bool {
		return func(pc PreparedCase) bool {
			p := pc.Plans[Real]
			return len(p.Validators) == n && p.Network.Default.IsZero() && p.Timeouts.Commit.String() == "1s" && len(p.Faults) == 0 && p.Load == nil &&
				!slices.ContainsFunc(p.Validators, func(v scenarios.ValidatorPlan) bool { return v.Signer.Latency != nil })
		}
	}
	for _, n := range []int{4, 10, 25} {
		if !has(validators(n)) {
			t.Errorf("no case of %d validators at default timeouts without faults", n)
		}
	}
	if !has(func(pc PreparedCase) bool {
		return len(pc.Plans[Real].Validators) == 4 && pc.Plans[Real].Timeouts.Commit.String() == "100ms"
	}) {
		t.Error("no case at short timeouts")
	}
	for _, lat := range []string{"0s", "300ms", "600ms", "1s", "2s"} {
		if !has(func(pc PreparedCase) bool {
			for _, v := range pc.Plans[Real].Validators {
				if v.Name == "slow" && latencyOf(v.Signer.Latency) == lat {
					return true
				}
			}
			return false
		}) {
			t.Errorf("no case with a slow signer at %s", lat)
		}
	}
	for _, lat := range []string{"50ms", "150ms"} {
		if !has(func(pc PreparedCase) bool {
			return latencyOf(pc.Plans[Real].Network.Default.Latency) == lat
		}) {
			t.Errorf("no case with a link latency of %s", lat)
		}
	}
	for _, sc := range []string{"partition-heal", "crash-restart", "capacity-load"} {
		if !has(func(pc PreparedCase) bool { return pc.Scenario == sc }) {
			t.Errorf("no case of %s", sc)
		}
	}
	for _, pc := range c.Cases {
		for _, s := range Sides {
			if p := pc.Plans[s]; p.Run.Heights > 40 || p.Run.Backend != c.Backend(s) {
				t.Errorf("case %s, %s side: %d heights on %s", pc.Name, s, p.Run.Heights, p.Run.Backend)
			}
		}
	}
}

// latencyOf is a fixed latency as a duration, 0s for none.
func latencyOf(l *scenarios.LatencyPlan) string {
	if l == nil {
		return "0s"
	}
	if l.Dist != latency.Fixed {
		return l.Spec.String()
	}
	return l.Value.String()
}

// TestIntegGridResolves: the grid make integ runs is valid on both sides.
func TestIntegGridResolves(t *testing.T) {
	g, err := ReadGrid("integ.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Prepare(Config{Grid: g, Model: DefaultModel, Real: DefaultReal, Repeat: 1}); err != nil {
		t.Fatal(err)
	}
}
