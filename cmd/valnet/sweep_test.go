package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valnet/valnet/internal/nettest"
	"github.com/valnet/valnet/runner"
	"github.com/valnet/valnet/sweep"
)

// sweepScenario: four validators under short timeouts, three heights.
const sweepScenario = `
name: sweep-real
chain:
  timeouts: {propose: 300ms, propose_delta: 100ms, prevote: 100ms, prevote_delta: 50ms,
             precommit: 100ms, precommit_delta: 50ms, commit: 100ms}
run: {heights: 3, max_duration: 2m}
validators:
  - name: v
    count: 3
  - name: slow
expect:
  - {metric: heights_committed, min: 3}
`

// TestSweepRealNetworks sweeps two points of one real in-process network
// each, then runs the same command again, which resumes and runs nothing.
func TestSweepRealNetworks(t *testing.T) {
	src := write(t, "sweep-real.yaml", sweepScenario)
	out := filepath.Join(t.TempDir(), "sw")
	args := []string{"sweep", src, "--set", "validators[slow].signer.latency=0,30ms", "--out", out, "--seed", "5"}
	for _, p := range []string{"latency=0/r1", "latency=30ms/r1"} {
		nettest.ShowLogsOnFailure(t, filepath.Join(out, p, runner.NodesDir), "node.log")
	}
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "point 2/2 (set validators[slow].signer.latency=30ms) repeat 1/1, elapsed ") {
		t.Errorf("no progress line for point 2:\n%s", stderr)
	}
	if !strings.Contains(stdout, "All 2 runs finished.") || !strings.Contains(stdout, "sweep directory: "+out) {
		t.Errorf("stdout:\n%s", stdout)
	}
	data, err := os.ReadFile(filepath.Join(out, sweep.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Backend string   `json:"backend"`
		Keys    []string `json:"keys"`
		Points  []struct {
			Set  map[string]string `json:"set"`
			Runs []struct {
				Seed    int64              `json:"seed"`
				Dir     string             `json:"dir"`
				Metrics map[string]float64 `json:"metrics"`
			} `json:"runs"`
			Mean map[string]float64 `json:"mean"`
		} `json:"points"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if f.Backend != "inprocess" || len(f.Points) != 2 || f.Points[1].Set["validators[slow].signer.latency"] != "30ms" {
		t.Fatalf("sweep.json: %s", data)
	}
	for _, p := range f.Points {
		if len(p.Runs) != 1 || p.Runs[0].Seed != 5 || p.Runs[0].Metrics["heights_committed"] < 3 || p.Mean["heights_committed"] != p.Runs[0].Metrics["heights_committed"] {
			t.Errorf("point %v: %+v", p.Set, p)
		}
		if _, ok := p.Runs[0].Metrics["missed_precommits_rate(slow)"]; !ok {
			t.Errorf("point %v has no missed_precommits_rate(slow)", p.Set)
		}
	}
	// The run directory holds the scenario as it ran, with the setting.
	kept, err := os.ReadFile(filepath.Join(out, "latency=30ms", "r1", runner.ScenarioFile))
	if err != nil || !strings.Contains(string(kept), "--set validators[slow].signer.latency=30ms") || !strings.Contains(string(kept), "latency: 30ms") {
		t.Errorf("kept scenario (%v):\n%s", err, kept)
	}
	html, err := os.ReadFile(filepath.Join(out, sweep.HTMLFile))
	if err != nil || strings.Count(string(html), "<svg") < 3 {
		t.Errorf("sweep.html holds %d charts (%v)", strings.Count(string(html), "<svg"), err)
	}

	code, stdout, stderr = runCLI(t, args...)
	if code != 0 || strings.Contains(stderr, "point 1/2") || !strings.Contains(stdout, "All 2 runs finished.") {
		t.Errorf("the rerun did not just resume: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}

func TestSweepBadInput(t *testing.T) {
	src := write(t, "sweep-real.yaml", sweepScenario)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"unknown key", []string{"--set", "validators[slow].signer.latncy=1s"},
			[]string{`--set validators[slow].signer.latncy=1s: unknown key "latncy" under validators[slow].signer; did you mean "latency"?`}},
		{"unknown validator", []string{"--set", "validators[slo].signer.latency=1s"},
			[]string{`--set validators[slo].signer.latency=1s: no validator named "slo"`, `did you mean "slow"?`}},
		{"bad values, all reported", []string{"--set", "chain.timeouts.commit=1s,1", "--set", "run.heights=x,3"},
			[]string{"--set chain.timeouts.commit=1: 1 has no unit", `--set run.heights=x: expected an integer, got "x"`}},
		{"no --set", nil, []string{"give at least one --set"}},
		{"no values", []string{"--set", "run.heights="}, []string{"--set run.heights=: empty value"}},
		{"unknown metric", []string{"--set", "run.heights=3", "--metric", "missed(slow)"}, []string{`--metric missed(slow): unknown metric "missed"`}},
		{"repeat 0", []string{"--set", "run.heights=3", "--repeat", "0"}, []string{"--repeat 0: give at least 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "sw")
			code, stdout, stderr := runCLI(t, append([]string{"sweep", src, "--out", out}, tt.args...)...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("bad input created the sweep directory")
			}
		})
	}
}

// A refused --out is refused before the sweep is announced.
func TestSweepRefusedDirNotAnnounced(t *testing.T) {
	src := write(t, "sweep-real.yaml", sweepScenario)
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "stray"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "sweep", src, "--out", out, "--set", "run.heights=3")
	if code != exitBadInput || !strings.Contains(stderr, "is not empty") || strings.Contains(stderr, "sweeping") {
		t.Errorf("exit %d, want 2, the refusal and no announcement:\n%s", code, stderr)
	}
}
