package results

import (
	"github.com/valnet/valnet/results/eventlog"
	"testing"
	"time"
)

func TestHaltThreshold(t *testing.T) {
	start := func(ms int64, explicit bool) *eventlog.Event {
		return &eventlog.Event{Kind: eventlog.KindRunStart, HaltAfterMS: ms, HaltAfterExplicit: explicit}
	}
	tests := []struct {
		name  string
		start *eventlog.Event
		p50ms float64
		want  time.Duration
	}{
		{"default timeouts, fast blocks: two rounds of timeouts + commit", start(12500, false), 1160, 12500 * time.Millisecond},
		{"default timeouts, slow blocks: 5 × the median", start(12500, false), 3000, 15 * time.Second},
		{"short timeouts: 5 × the median", start(2000, false), 1000, 5 * time.Second},
		{"explicit halt_after overrides 5 × the median", start(2000, true), 1000, 2 * time.Second},
		{"explicit halt_after overrides the timeouts", start(30000, true), 1000, 30 * time.Second},
		{"no halt_after recorded: 5 × the median", start(0, false), 1200, 6 * time.Second},
		{"no run_start: 5 × the median", nil, 1200, 6 * time.Second},
		{"explicit 0 is not a threshold", start(0, true), 1000, 5 * time.Second},
		{"nothing to go by: none", nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := haltThreshold(tt.start, tt.p50ms); got != tt.want {
				t.Errorf("haltThreshold = %v, want %v", got, tt.want)
			}
		})
	}
}

// blocksEvery: run_start, one block per interval (ms) from 1 s, run_end
// endMS after the last block.
func blocksEvery(start eventlog.Event, intervals []float64, endMS float64) []eventlog.Event {
	evs := []eventlog.Event{start}
	ms := 1000.0
	evs = append(evs, block(1, ms, 0, nil, nil))
	for i, d := range intervals {
		ms += d
		evs = append(evs, block(int64(i+2), ms, 0, nil, nil))
	}
	return append(evs, runEnd(ms+endMS, eventlog.StopHeights))
}

// TestHaltWithDefaultTimeouts is the case operators call a halt: at
// CometBFT's default timeouts (halt_after_ms 12500 recorded by the runner)
// a 2/2 partition leaves one 17.2 s gap among 1.16 s intervals. At the
// old default, three full rounds (18 s), it was no halt.
func TestHaltWithDefaultTimeouts(t *testing.T) {
	intervals := make([]float64, 0, 30)
	for i := 0; i < 30; i++ {
		intervals = append(intervals, 1160)
	}
	intervals[4] = 17200 // from height 5
	start := runStart("v1", "v2", "v3", "v4")
	start.HaltAfterMS = 12500
	s := Summarize(blocksEvery(start, intervals, 500))
	if s.BlockIntervalMS.P50 != 1160 {
		t.Fatalf("median %v, want 1160", s.BlockIntervalMS.P50)
	}
	if len(s.Halts) != 1 || s.Halts[0].FromHeight != 5 || s.Halts[0].DurationMS != 17200 || !s.Halts[0].Resumed {
		t.Errorf("halts %+v, want one from height 5 for 17.2 s", s.Halts)
	}
	// A one-round-change height (about 5 s at default timeouts) is not a halt.
	intervals[4] = 5200
	if s := Summarize(blocksEvery(start, intervals, 500)); len(s.Halts) != 0 {
		t.Errorf("a round change counted as a halt: %+v", s.Halts)
	}
}

func TestHalts(t *testing.T) {
	// Commits every second, then a 10 s gap, then the run ends 8 s after
	// the last commit: two halts at 5 × the 1 s median.
	evs := []eventlog.Event{runStart("v1")}
	for h, ms := range []float64{1000, 2000, 3000, 4000, 14000, 15000, 16000} {
		evs = append(evs, block(int64(h+1), ms, 0, nil, nil))
	}
	evs = append(evs, runEnd(24000, eventlog.StopMaxDuration))
	s := Summarize(evs)
	if len(s.Halts) != 2 {
		t.Fatalf("halts %+v", s.Halts)
	}
	if h := s.Halts[0]; h.FromHeight != 4 || h.DurationMS != 10000 || !h.Resumed {
		t.Errorf("first halt %+v", h)
	}
	if h := s.Halts[1]; h.FromHeight != 7 || h.DurationMS != 8000 || h.Resumed {
		t.Errorf("last halt %+v (never resumed)", h)
	}
	// The runner's default from the timeouts raises the threshold.
	evs[0].HaltAfterMS = 9000
	if s := Summarize(evs); len(s.Halts) != 1 || s.Halts[0].FromHeight != 4 {
		t.Errorf("with halt_after_ms 9s: %+v", s.Halts)
	}
	// An explicit halt_after below 5 × the median wins.
	evs[0].HaltAfterMS, evs[0].HaltAfterExplicit = 900, true
	// (and so is the first second, from the network's start to block 1).
	if s := Summarize(evs); len(s.Halts) != 8 || s.Halts[0].FromHeight != 0 {
		t.Errorf("with an explicit halt_after of 0.9 s every gap is a halt: %+v", s.Halts)
	}
}
