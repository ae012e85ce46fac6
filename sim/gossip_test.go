package sim

import (
	"testing"
	"time"
	"unsafe"

	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/network"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
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

// TestGossipDelaysFollowSetLink: the wake-ups read copies of each
// connection's link delay (conn.rtyp, gossip.back); a latency fault's
// SetLink must reach them, or a routine keeps judging its peer's state
// by the old delay. Checked on every connection of a ring, before and
// after a link's delay changes.
func TestGossipDelaysFollowSetLink(t *testing.T) {
	plan, err := scenarios.Parse("ring.yaml", []byte(`name: ring
run: {backend: sim, heights: 3}
network: {latency: 50ms, topology: {ring: 1}}
validators: [{name: v, count: 4}]
`))
	if err != nil {
		t.Fatal(err)
	}
	_, w := runToJSON(t, plan)
	check := func(when string) {
		t.Helper()
		g := w.g
		for ci := range g.conns {
			c := &g.conns[ci]
			if got, want := g.back[ci].typ, w.net.link(c.from, c.to).typical; got != want {
				t.Errorf("%s: back[%d].typ = %v, link %d->%d has %v", when, ci, time.Duration(got), c.from, c.to, time.Duration(want))
			}
			if got, want := c.rtyp, w.net.link(c.to, c.from).typical; got != want {
				t.Errorf("%s: conn %d->%d rtyp = %v, link back has %v", when, c.from, c.to, time.Duration(got), time.Duration(want))
			}
		}
	}
	check("at the start")
	w.timeline.SetLink("v-1", "v-2", network.Link{Latency: latency.Constant(400 * time.Millisecond)})
	if got := w.net.link(0, 1).typical; got != (400 * time.Millisecond).Nanoseconds() {
		t.Fatalf("the link v-1 -> v-2 has typical %v after SetLink", time.Duration(got))
	}
	check("after SetLink")
}

// TestConnLayout: what a vote routine's wake-up reads of its connection
// (the links, ends and sent sets) is the first 64 bytes of a conn, and a
// conn is 128 bytes, so that in the connections' array (page-aligned
// once it is large) each conn's first 64 bytes are one cache line.
func TestConnLayout(t *testing.T) {
	var c conn
	if got := unsafe.Sizeof(c); got != 128 {
		t.Errorf("a conn is %d bytes, want 128", got)
	}
	if end := unsafe.Offsetof(c.sent) + unsafe.Sizeof(c.sent); end > 64 {
		t.Errorf("conn.sent ends at byte %d, past the first cache line", end)
	}
}
