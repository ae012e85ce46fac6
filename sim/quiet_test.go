package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"

	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
)

// TestQuietVotesAreExact: handling quiet votes at once (quiet.go) gives
// the same run, byte for byte, as taking every vote through the queue,
// on networks where bursts happen: round changes, locks and POL rounds,
// unequal power, latency and jitter, busy nodes, large blocks.
func TestQuietVotesAreExact(t *testing.T) {
	// the tests' busy calibration at 2 ms a vote, so that votes wait
	// for their node
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
		rounds     bool // the run must change rounds
	}{
		{"plain-40", `run: {heights: 8}
validators: [{name: v, count: 40}]`, false},
		{"slow-proposer-36", `run: {heights: 10, seed: 3}
validators:
  - {name: slow, signer: {latency: 1500ms}}
  - {name: v, count: 35}`, true},
		{"short-timeouts-jitter-50", `run: {heights: 12, seed: 9}
chain:
  timeouts: {propose: 80ms, propose_delta: 40ms, prevote: 20ms, prevote_delta: 10ms, precommit: 20ms, precommit_delta: 10ms, commit: 50ms}
network: {latency: 40ms, jitter: 35ms}
validators: [{name: v, count: 50}]`, true},
		{"unequal-power-zones-45", `run: {heights: 10, seed: 5}
chain:
  timeouts: {propose: 150ms, propose_delta: 50ms, prevote: 50ms, precommit: 50ms, commit: 200ms}
network:
  jitter: 5ms
  zones:
    us-east-1: [big-1, v-1, v-2, v-3, v-4, v-5, v-6, v-7, v-8, v-9, v-10, v-11, v-12, v-13]
    ap-southeast-2: [big-2, v-14, v-15, v-16, v-17, v-18, v-19, v-20, v-21, v-22, v-23, v-24, v-25, v-26, v-27]
    eu-central-1: [big-3, v-28, v-29, v-30, v-31, v-32, v-33, v-34, v-35, v-36, v-37, v-38, v-39, v-40, v-41, v-42]
validators:
  - {name: big, count: 3, power: 200}
  - {name: v, count: 42, power: 3}`, true},
		// the slow validator lags a height behind and is sent peers'
		// LastCommits while they count theirs ahead of time
		{"lagging-signer-40", `run: {heights: 12, seed: 6, sim: {calibration: BUSY}}
validators:
  - {name: slow, signer: {latency: 800ms}}
  - {name: v, count: 39}`, false},
		{"busy-60", `run: {heights: 6, seed: 4, sim: {calibration: BUSY}}
validators: [{name: v, count: 60}]`, false},
		{"load-40", `run: {heights: 8, seed: 2}
network: {bandwidth: 20mbit}
validators: [{name: v, count: 40}]
load: {rate: 400/s, size: 2KiB}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			y := "name: " + c.name + "\n" + strings.Replace(c.yaml, "run: {", "run: {backend: sim, max_duration: 1h, ", 1)
			plan, err := scenarios.Parse(c.name+".yaml", []byte(strings.ReplaceAll(y, "BUSY", busy)))
			if err != nil {
				t.Fatal(err)
			}
			with, n := quietRun(t, plan, true)
			without, m := quietRun(t, plan, false)
			if n == 0 {
				t.Fatal("no vote was handled as quiet: the case tests nothing")
			}
			if m != 0 {
				t.Fatalf("%d quiet votes with bursts off", m)
			}
			if !bytes.Equal(with, without) {
				t.Fatalf("%d quiet votes changed the run: %d and %d bytes, first difference at byte %d:\n%s",
					n, len(with), len(without), firstDiffAt(with, without), around(with, firstDiffAt(with, without)))
			}
			if c.rounds && !roundChanged(t, with) {
				t.Fatal("no round change: the case tests less than it says")
			}
			t.Logf("%d quiet votes, %d bytes of events the same", n, len(with))
		})
	}
}

// quietRun runs plan with bursts on or off and returns its events as
// JSON lines and how many votes were handled as quiet.
func quietRun(t *testing.T, plan *scenarios.Plan, bursts bool) ([]byte, int64) {
	t.Helper()
	old := quietBursts
	quietBursts = bursts
	defer func() { quietBursts = old }()
	data, w := runToJSON(t, plan)
	return data, w.quietHandled
}

// roundChanged: some node entered a round above 0.
func roundChanged(t *testing.T, events []byte) bool {
	for _, line := range bytes.Split(bytes.TrimSpace(events), []byte("\n")) {
		var e eventlog.Event
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatal(err)
		}
		if e.Kind == eventlog.KindNewRound && e.Round > 0 {
			return true
		}
	}
	return false
}

func firstDiffAt(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func around(b []byte, i int) string {
	lo := bytes.LastIndexByte(b[:i], '\n') + 1
	hi := bytes.IndexByte(b[i:], '\n')
	if hi < 0 {
		return string(b[lo:])
	}
	return fmt.Sprint(string(b[lo : i+hi]))
}

// runToJSON runs plan to its heights and returns its events as JSON lines
// and the world, for a test to compare runs with a mechanism on and off.
func runToJSON(t *testing.T, plan *scenarios.Plan) ([]byte, *world) {
	t.Helper()
	p, err := LoadParams(plan.Run.Sim.Calibration)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]crypto.PubKey, len(plan.Validators))
	for i, v := range plan.Validators {
		keys[i] = ed25519.GenPrivKeyFromSecret([]byte(v.Name)).PubKey()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	w, err := newWorld(plan, p, plan.Run.Seed, keys, plan.Run.Sim.SharedCores, func(e eventlog.Event) {
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if reason, err := w.run(context.Background()); err != nil || reason != eventlog.StopHeights {
		t.Fatalf("stopped by %q, %v", reason, err)
	}
	return buf.Bytes(), w
}
