package sim

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valnet/valnet/scenarios"
)

// TestSpentVotesAreExact: dropping spent votes on arrival (spent.go)
// gives the same run, byte for byte, as handling every copy, on sparse
// topologies where copies abound: busy nodes, a lagging signer, zones
// with jitter, round changes, a partition, load; and runs with node
// faults, where it must stay off.
func TestSpentVotesAreExact(t *testing.T) {
	cal, err := os.ReadFile("testdata/busy-calibration.yaml")
	if err != nil {
		t.Fatal(err)
	}
	busy := filepath.Join(t.TempDir(), "busy.yaml")
	if err := os.WriteFile(busy, bytes.Replace(cal, []byte("vote_cost: 3ms"), []byte("vote_cost: 2ms"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, yaml string
		off        bool // node faults: nothing may be dropped
	}{
		{"random-busy-60", `run: {heights: 8, seed: 4, sim: {calibration: BUSY}}
network: {topology: {random: 4}, latency: 20ms, jitter: 5ms}
validators: [{name: v, count: 60}]`, false},
		// vote events recorded (up to VoteEventsMax validators)
		{"random-votes-30", `run: {heights: 10, seed: 8, sim: {calibration: BUSY}}
network: {topology: {random: 3}, latency: 25ms, jitter: 10ms}
validators: [{name: v, count: 30}]`, false},
		{"random-lagging-40", `run: {heights: 12, seed: 6, sim: {calibration: BUSY}}
network: {topology: {random: 3}, latency: 30ms, jitter: 10ms}
validators:
  - {name: slow, signer: {latency: 800ms}}
  - {name: v, count: 39}`, false},
		{"random-rounds-50", `run: {heights: 12, seed: 9}
chain:
  timeouts: {propose: 80ms, propose_delta: 40ms, prevote: 20ms, prevote_delta: 10ms, precommit: 20ms, precommit_delta: 10ms, commit: 50ms}
network: {topology: {random: 5}, latency: 40ms, jitter: 35ms}
validators: [{name: v, count: 50}]`, false},
		{"random-zones-partition-45", `run: {heights: 14, seed: 5}
network:
  topology: {random: 4}
  jitter: 5ms
  zones:
    us-east-1: [v-1, v-2, v-3, v-4, v-5, v-6, v-7, v-8, v-9, v-10, v-11, v-12, v-13, v-14, v-15]
    ap-southeast-2: [v-16, v-17, v-18, v-19, v-20, v-21, v-22, v-23, v-24, v-25, v-26, v-27, v-28, v-29, v-30]
    eu-central-1: [v-31, v-32, v-33, v-34, v-35, v-36, v-37, v-38, v-39, v-40, v-41, v-42, v-43, v-44, v-45]
validators: [{name: v, count: 45}]
faults:
  - {action: partition, at: {height: 5}, duration: 4s, groups: [[v-1, v-2, v-3, v-4, v-5, v-6, v-7, v-8, v-9, v-10, v-11, v-12, v-13, v-14, v-15, v-16, v-17, v-18, v-19, v-20], [v-21, v-22, v-23, v-24, v-25, v-26, v-27, v-28, v-29, v-30, v-31, v-32, v-33, v-34, v-35, v-36, v-37, v-38, v-39, v-40, v-41, v-42, v-43, v-44, v-45]]}`, false},
		{"random-load-40", `run: {heights: 8, seed: 2}
network: {topology: {random: 3}, bandwidth: 20mbit, latency: 15ms}
validators: [{name: v, count: 40}]
load: {rate: 400/s, size: 2KiB}`, false},
		{"random-restarts-40", `run: {heights: 20, seed: 12}
network: {topology: {random: 3}, latency: 10ms}
validators: [{name: v, count: 40}]
faults:
  - {action: node-kill, target: v-4, at: {height: 5}}
  - {action: node-start, target: v-4, at: {height: 12}}
  - {action: node-restart, target: v-9, at: {height: 15}}`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			y := "name: " + c.name + "\n" + strings.Replace(c.yaml, "run: {", "run: {backend: sim, max_duration: 1h, ", 1)
			plan, err := scenarios.Parse(c.name+".yaml", []byte(strings.ReplaceAll(y, "BUSY", busy)))
			if err != nil {
				t.Fatal(err)
			}
			with, n := spentRun(t, plan, true)
			without, m := spentRun(t, plan, false)
			switch {
			case c.off && n != 0:
				t.Fatalf("%d spent votes dropped in a run with node faults", n)
			case !c.off && n == 0:
				t.Fatal("no spent vote was dropped: the case tests nothing")
			case m != 0:
				t.Fatalf("%d spent votes dropped with dropSpent off", m)
			}
			if !bytes.Equal(with, without) {
				i := firstDiffAt(with, without)
				t.Fatalf("dropping %d spent votes changed the run: %d and %d bytes, first difference at byte %d:\n%s",
					n, len(with), len(without), i, around(with, i))
			}
			t.Logf("%d spent votes dropped, %d bytes of events the same", n, len(with))
		})
	}
}

// spentRun runs plan with dropSpent on or off and returns its events as
// JSON lines and how many spent votes were dropped.
func spentRun(t *testing.T, plan *scenarios.Plan, drop bool) ([]byte, int64) {
	t.Helper()
	old := dropSpent
	dropSpent = drop
	defer func() { dropSpent = old }()
	data, w := runToJSON(t, plan)
	return data, w.spentDropped
}
