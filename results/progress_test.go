package results

import (
	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/results/eventlog"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTracker(t *testing.T) {
	var tr Tracker
	tr.now = func() time.Time { return at(5000) }
	if p := tr.Snapshot(); p != (Progress{}) {
		t.Fatalf("zero tracker = %+v", p)
	}
	start := runStart("v1", "v2")
	start.Heights = 20
	steps := []struct {
		ev   eventlog.Event
		want Progress
	}{
		{start, Progress{Target: 20, Elapsed: 5 * time.Second}},
		{newRound("n1", 1, 0, "v1"), Progress{Target: 20, Elapsed: 5 * time.Second}},
		{newRound("n2", 1, 1, "v2"), Progress{Target: 20, Round: 1, Elapsed: 5 * time.Second}},
		{block(1, 1000, 0, nil, nil), Progress{Height: 1, Target: 20, Elapsed: 5 * time.Second}},
		{newRound("n1", 2, 0, "v2"), Progress{Height: 1, Target: 20, Elapsed: 5 * time.Second}},
		{newRound("n1", 2, 2, "v2"), Progress{Height: 1, Target: 20, Round: 2, Elapsed: 5 * time.Second}},
		{newRound("n3", 1, 3, "v2"), Progress{Height: 1, Target: 20, Round: 2, Elapsed: 5 * time.Second}}, // lagging node
		{block(2, 2000, 2, []string{"v1", "v2"}, []string{"v3"}), Progress{Height: 2, Target: 20, Missed: 2, Elapsed: 5 * time.Second}},
		{withError(signEv("v1", phase.Prevote, 3, 0, ""), "boom"), Progress{Height: 2, Target: 20, Missed: 2, SignErrors: 1, Elapsed: 5 * time.Second}},
		{signEv("v1", phase.Prevote, 3, 0, ""), Progress{Height: 2, Target: 20, Missed: 2, SignErrors: 1, Elapsed: 5 * time.Second}},
		{block(3, 3000, 0, []string{"v2"}, nil), Progress{Height: 3, Target: 20, Missed: 3, SignErrors: 1, Elapsed: 5 * time.Second}},
		{runEnd(4200, eventlog.StopInterrupted), Progress{Height: 3, Target: 20, Missed: 3, SignErrors: 1, Elapsed: 4200 * time.Millisecond, Done: true}},
	}
	for i, s := range steps {
		tr.Observe(s.ev)
		if got := tr.Snapshot(); got != s.want {
			t.Fatalf("after event %d (%s): %+v, want %+v", i, s.ev.Kind, got, s.want)
		}
	}
	if got, want := tr.Snapshot().String(), "height 3/20 round 0 missed 3 sign errors 1 elapsed 4.2s"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestTrackerConcurrent(t *testing.T) {
	var tr Tracker
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				tr.Observe(block(int64(g*200+i+1), 0, 0, []string{"v1"}, nil))
				_ = tr.Snapshot()
			}
		})
	}
	wg.Wait()
	if p := tr.Snapshot(); p.Height != 1600 || p.Missed != 1600 {
		t.Errorf("got %+v", p)
	}
}

// TestTrackerStall: a chain that never starts says so once the halt
// threshold has passed since the network came up, with its likely cause;
// a commit clears it.
func TestTrackerStall(t *testing.T) {
	var tr Tracker
	now := at(5000)
	tr.now = func() time.Time { return now }
	start := runStart("v1", "v2", "v3", "v4")
	start.HaltAfterMS = 12500
	tr.Observe(start)
	for i, n := range all4 {
		tr.Observe(eventlog.Event{Time: at(100 * float64(i+1)), Kind: eventlog.KindNodeUp, Node: n})
	}
	for _, ev := range cat(enterRound(500, 1, 0, all4...), prevotes(3500, 1, 0, nil, all4...)) {
		tr.Observe(ev)
	}
	if p := tr.Snapshot(); p.Stall != "" {
		t.Fatalf("stalled after 4.6 s: %q", p.Stall)
	}
	// Nodes up but none in consensus: block sync waits for a peer.
	var idle Tracker
	idle.now = func() time.Time { return at(15000) }
	idle.Observe(start)
	idle.Observe(eventlog.Event{Time: at(100), Kind: eventlog.KindNodeUp, Node: "v1"})
	if p := idle.Snapshot(); p.Stall != "no height committed for 12.5s after the network started; likely cause network: no node entered consensus: CometBFT starts it after block sync, which waits for a connected peer; no peers connected" {
		t.Errorf("no consensus at all: %q", p.Stall)
	}
	now = at(20000)
	want := "no height committed for 12.5s after the network started; likely cause network: no node received +2/3 prevotes at h1 r0: 40 of 40 voting power cast one, but the most any node received is 10 (v1); no node received a vote from another node: no peers connected"
	if p := tr.Snapshot(); !strings.HasPrefix(p.Stall, want) {
		t.Fatalf("stall %q\nwant %q…", p.Stall, want)
	}
	tr.Observe(block(1, 20500, 0, nil, nil))
	now = at(21000)
	if p := tr.Snapshot(); p.Stall != "" || p.Height != 1 {
		t.Errorf("after a commit: %+v", p)
	}
	now = at(40000)
	if p := tr.Snapshot(); !strings.HasPrefix(p.Stall, "no commit after height 1 for 12.5s; likely cause unknown: no consensus event from any node") {
		t.Errorf("a stall after height 1: %q", p.Stall)
	}
}

// The stretch before the first commit counts from when consensus started
// (the nodes wait for the genesis time before it), and later stretches
// against the summary's threshold with the median so far: quickstart's
// short timeouts (halt after 1.3 s) with its first block 1.36 s after the
// nodes were up is no stall, nor is one interval of 1.4 s among 0.3 s.
func TestTrackerStallBoundsAsTheSummary(t *testing.T) {
	var tr Tracker
	now := at(0)
	tr.now = func() time.Time { return now }
	start := runStart("v1", "v2", "v3", "v4")
	start.HaltAfterMS = 1300
	tr.Observe(start)
	for i, n := range all4 {
		tr.Observe(eventlog.Event{Time: at(20 + 10*float64(i)), Kind: eventlog.KindNodeUp, Node: n})
	}
	for _, ev := range enterRound(1020, 1, 0, all4...) {
		tr.Observe(ev)
	}
	now = at(1360)
	if p := tr.Snapshot(); p.Stall != "" {
		t.Fatalf("consensus started at 1.02 s, now 1.36 s: stalled %q", p.Stall)
	}
	tr.Observe(block(1, 1360, 0, nil, nil))
	ms := 1360.0
	for h := int64(2); h <= 10; h++ {
		ms += 300
		tr.Observe(block(h, ms, 0, nil, nil))
	}
	now = at(ms + 1400) // past 1.3 s, within 5 × the 300 ms median
	if p := tr.Snapshot(); p.Stall != "" {
		t.Fatalf("1.4 s after a 300 ms median: stalled %q", p.Stall)
	}
	now = at(ms + 1600)
	if p := tr.Snapshot(); !strings.HasPrefix(p.Stall, "no commit after height 10 for 1.5s") {
		t.Fatalf("1.6 s after a 300 ms median: %q", p.Stall)
	}
}

// The summary counts the first stretch from consensus start too: a first
// block 1.36 s after the nodes were up but 0.34 s after the first round
// began is no halt at a 1.3 s threshold.
func TestFirstStretchFromConsensusStart(t *testing.T) {
	start := runStart("v1", "v2", "v3", "v4")
	start.HaltAfterMS = 1300
	evs := []eventlog.Event{start}
	for i, n := range all4 {
		evs = append(evs, eventlog.Event{Time: at(20 + 10*float64(i)), Kind: eventlog.KindNodeUp, Node: n})
	}
	evs = append(evs, enterRound(1020, 1, 0, all4...)...)
	ms := 1360.0
	for h := int64(1); h <= 12; h++ {
		evs = append(evs, block(h, ms, 0, nil, nil))
		ms += 200
	}
	evs = append(evs, eventlog.Event{Time: at(ms), Kind: eventlog.KindRunEnd, StopReason: eventlog.StopHeights})
	if s := Summarize(evs); len(s.Halts) != 0 {
		t.Fatalf("halts %+v, want none", s.Halts)
	}
}
