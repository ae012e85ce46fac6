package sim

import (
	"testing"
	"time"

	"github.com/valnet/valnet/results/eventlog"
)

// TestGossipHopByHop: six validators in a ring (each dials the next: two
// peers each), every link 50 ms, nothing else costing time. A vote from
// v-i reaches a validator k links away around the ring through the
// nodes between, each sending it on once it has counted it
// (gossipVotesRoutine): never sooner than k × 50 ms, and at exactly
// k × 50 ms when the routines along the way know their peers are at the
// vote's height. Seen at every distance, so no check passes on no data.
func TestGossipHopByHop(t *testing.T) {
	events, reason := simRun(t, `name: ring
run: {backend: sim, heights: 10, max_duration: 5m, sim: {calibration: CALIBRATION}}
network: {latency: 50ms, topology: {ring: 1}}
validators:
  - {name: v, count: 6}
`, exactCalibration)
	if reason != eventlog.StopHeights {
		t.Fatalf("stopped: %s", reason)
	}
	index := map[string]int{"v-1": 0, "v-2": 1, "v-3": 2, "v-4": 3, "v-5": 4, "v-6": 5}
	const link = 50 * time.Millisecond
	exact := map[int]int{}
	voteTravels(events, func(e eventlog.Event, took time.Duration) {
		d := (index[e.Node] - index[e.Validator] + 6) % 6
		hops := min(d, 6-d)
		if took < time.Duration(hops)*link {
			t.Errorf("%s's %s at h%d r%d reached %s (%d links away) in %v: under %d links", e.Validator, e.Phase, e.Height, e.Round, e.Node, hops, took, hops)
		}
		if took == time.Duration(hops)*link {
			exact[hops]++
		}
	})
	for hops := 1; hops <= 3; hops++ {
		if exact[hops] == 0 {
			t.Errorf("no vote reached a validator %d links away in exactly %d × 50 ms (at link speed): %v", hops, hops, exact)
		}
	}
}
