package results

import (
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
		ev   Event
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
		{withError(signEv("v1", PhasePrevote, 3, 0, ""), "boom"), Progress{Height: 2, Target: 20, Missed: 2, SignErrors: 1, Elapsed: 5 * time.Second}},
		{signEv("v1", PhasePrevote, 3, 0, ""), Progress{Height: 2, Target: 20, Missed: 2, SignErrors: 1, Elapsed: 5 * time.Second}},
		{block(3, 3000, 0, []string{"v2"}, nil), Progress{Height: 3, Target: 20, Missed: 3, SignErrors: 1, Elapsed: 5 * time.Second}},
		{runEnd(4200, StopInterrupted), Progress{Height: 3, Target: 20, Missed: 3, SignErrors: 1, Elapsed: 4200 * time.Millisecond, Done: true}},
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
