package sim_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/valnet/valnet/runner"
	"github.com/valnet/valnet/scenarios"
)

var update = flag.Bool("update", false, "rewrite testdata/events.golden")

// deterministicYAML has every source of randomness the model draws from:
// zone latencies with jitter, a random topology, a Ledger emulator, a
// fault timeline.
const deterministicYAML = `
name: sim-determinism
run: {backend: sim, heights: 12, max_duration: 10m, seed: 7}
network:
  jitter: 2ms
  topology: {random: 3}
  zones:
    us-east-1: [v-1, v-2, v-3]
    eu-central-1: [v-4, v-5, v-6]
    ap-northeast-1: [v-7, v-8, ledger]
validators:
  - {name: v, count: 8}
  - name: ledger
    signer: {type: ledger, connection: emulator}
faults:
  - {action: node-kill, target: v-3, at: {height: 4}}
  - {action: node-start, target: v-3, at: {height: 8}}
`

func runEvents(t *testing.T, plan *scenarios.Plan, seed int64) []byte {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	out, err := runner.Run(context.Background(), plan, runner.Options{OutDir: dir, Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Summary.OK || int64(out.Summary.Heights.Committed) < plan.Run.Heights {
		t.Fatalf("seed %d: ok %v, %d heights committed", seed, out.Summary.OK, out.Summary.Heights.Committed)
	}
	data, err := os.ReadFile(filepath.Join(dir, runner.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	// run_end's wall_ms is this host's clock, the one field of a sim
	// stream that is not the model's.
	if !wallMS.Match(data) {
		t.Fatal("events.jsonl has no run_end wall_ms")
	}
	return wallMS.ReplaceAll(data, nil)
}

var wallMS = regexp.MustCompile(`,"wall_ms":[0-9]+`)

// TestSameSeedSameEvents: a sim run is a function of its plan and seed,
// down to the bytes of events.jsonl; another seed gives another run.
func TestSameSeedSameEvents(t *testing.T) {
	plan, err := scenarios.Parse("determinism.yaml", []byte(deterministicYAML))
	if err != nil {
		t.Fatal(err)
	}
	a, b := runEvents(t, plan, 7), runEvents(t, plan, 7)
	if !bytes.Equal(a, b) {
		t.Fatalf("two runs of seed 7 differ: %d and %d bytes, first difference at byte %d", len(a), len(b), firstDiff(a, b))
	}
	c := runEvents(t, plan, 8)
	if bytes.Equal(a, c) {
		t.Fatal("seeds 7 and 8 wrote the same events.jsonl")
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// goldenPlans are runs whose events testdata/events.golden pins by hash:
// a change to the model that changes what it computes fails here, and
// `go test ./sim -run Golden -update` records the new hashes (review why
// they changed). The hashes were first written by the model before its
// event queue was rewritten (a bucket queue, busy nodes holding their
// events), which gives the same events byte for byte.
var goldenPlans = []struct{ name, yaml string }{
	{"mesh-4", `run: {heights: 60}
validators: [{name: v, count: 4}]`},
	{"zones-ledger-20", `run: {heights: 15, seed: 5}
network:
  latency: 2ms
  jitter: 1ms
  zones:
    us-east-1: [v-1, v-2, v-3, v-4, v-5]
    eu-central-1: [v-6, v-7, v-8, v-9, v-10]
    ap-northeast-1: [v-11, v-12, v-13, v-14, v-15]
    sa-east-1: [v-16, v-17, v-18, v-19, ledger]
validators:
  - name: ledger
    signer: {type: ledger, connection: emulator}
  - {name: v, count: 19}`},
	{"random-faults-40", `run: {heights: 25, seed: 12}
network:
  topology: {random: 3}
  latency: 10ms
validators: [{name: v, count: 40}]
faults:
  - {action: node-kill, target: v-4, at: {height: 5}}
  - {action: node-start, target: v-4, at: {height: 12}}
  - {action: node-restart, target: v-9, at: {height: 15}}
  - {action: partition, at: {height: 18}, duration: 5s, groups: [[v-1, v-2, v-3], [v-4, v-5, v-6, v-7, v-8, v-9, v-10, v-11, v-12, v-13, v-14, v-15, v-16, v-17, v-18, v-19, v-20, v-21, v-22, v-23, v-24, v-25, v-26, v-27, v-28, v-29, v-30, v-31, v-32, v-33, v-34, v-35, v-36, v-37, v-38, v-39, v-40]]}`},
	// Busy nodes (3 ms a vote) taken down while events wait for them,
	// and back at once (restart_delay 0).
	{"busy-restarts-60", `run: {heights: 6, seed: 4, sim: {calibration: CALIBRATION}}
validators: [{name: v, count: 60}]
faults:` + busyFaults()},
	{"mesh-120", `run: {heights: 3}
validators: [{name: v, count: 120}]`},
}

// busyFaults: a node fault every 7 ms from 1.2 s on, through the first
// heights' vote traffic, and restarts at heights.
func busyFaults() string {
	var b strings.Builder
	for i := 1; i <= 40; i++ {
		at := 1200 + 7*(i-1)
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "\n  - {action: node-stop, target: v-%d, at: {time: %dms}, duration: %dms}", i, at, 1+i)
		case 1:
			fmt.Fprintf(&b, "\n  - {action: node-restart, target: v-%d, at: {time: %dms}}", i, at)
		default:
			fmt.Fprintf(&b, "\n  - {action: node-kill, target: v-%d, at: {time: %dms}}", i, at)
			fmt.Fprintf(&b, "\n  - {action: node-start, target: v-%d, at: {time: %dms}}", i, at+3000)
		}
	}
	for h := 2; h <= 5; h++ {
		for i := 41; i <= 60; i += 4 {
			fmt.Fprintf(&b, "\n  - {action: node-restart, target: v-%d, at: {height: %d}}", i+h-2, h)
		}
	}
	return b.String()
}

// busyCalibration is a calibration of the tests' own (the shipped
// default may be refitted without changing what this golden pins), with
// slow votes and instant restarts.
const busyCalibration = "testdata/busy-calibration.yaml"

func TestGoldenEvents(t *testing.T) {
	calib := busyCalibration
	var got strings.Builder
	for _, g := range goldenPlans {
		y := "name: " + g.name + "\n" + strings.Replace(g.yaml, "run: {", "run: {backend: sim, max_duration: 1h, ", 1)
		plan, err := scenarios.Parse(g.name+".yaml", []byte(strings.ReplaceAll(y, "CALIBRATION", calib)))
		if err != nil {
			t.Fatalf("%s: %v", g.name, err)
		}
		var buf bytes.Buffer
		s := &encodeSink{keep: &buf}
		simulate(t, plan, plan.Run.Seed, s)
		s.flush()
		if dir := os.Getenv("VALNET_GOLDEN_DUMP"); dir != "" {
			_ = os.WriteFile(filepath.Join(dir, g.name+".jsonl"), buf.Bytes(), 0o644)
		}
		sum := sha256.Sum256(buf.Bytes())
		fmt.Fprintf(&got, "%s %d %s\n", g.name, s.events, hex.EncodeToString(sum[:]))
	}
	path := filepath.Join("testdata", "events.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got.String() != string(want) {
		t.Errorf("the model's events changed (name, events, sha256):\ngot:\n%swant:\n%s", got.String(), want)
	}
}
