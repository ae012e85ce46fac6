package scenarios

import (
	"testing"
	"time"

	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
)

// defaultPlan is a scenario with every default, CometBFT's timeouts
// included, as scenarios resolves it.
func defaultPlan(t *testing.T, extra string) *Plan {
	t.Helper()
	p, err := Parse("halt.yaml", []byte("name: halt\n"+extra+"validators:\n  - {name: v, count: 4}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHaltAfter(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name         string
		yaml         string
		want         time.Duration
		wantExplicit bool
	}{
		{"CometBFT's default timeouts: (3+1+1) + (3.5+1.5+1.5) + 1", "", 12500 * ms, false},
		{"explicit halt_after", "run: {halt_after: 4s}\n", 4 * time.Second, true},
		{"explicit halt_after below the timeouts still wins", "run: {halt_after: 1s}\n", time.Second, true},
		{"short timeouts: (1+0.5+0.5) + (1.2+0.7+0.7) + 0.5",
			"chain:\n  timeouts: {propose: 1s, propose_delta: 200ms, prevote: 500ms, prevote_delta: 200ms, precommit: 500ms, precommit_delta: 200ms, commit: 500ms}\n",
			5100 * ms, false},
		{"no deltas, no commit timeout: two equal rounds",
			"chain:\n  timeouts: {propose_delta: 0s, prevote_delta: 0s, precommit_delta: 0s, commit: 0s}\n",
			10 * time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, explicit := defaultPlan(t, tt.yaml).HaltAfter()
			if got != tt.want || explicit != tt.wantExplicit {
				t.Errorf("haltAfter = %v explicit %v, want %v explicit %v", got, explicit, tt.want, tt.wantExplicit)
			}
		})
	}
}

// TestHaltAtDefaultTimeouts: four validators at default timeouts, a 2/2
// partition from height 5: one 17.2 s block interval among 1.16 s ones is
// a halt in the summary of what the runner records. The old default,
// three full rounds (18 s), missed it.
func TestHaltAtDefaultTimeouts(t *testing.T) {
	halt, explicit := defaultPlan(t, "").HaltAfter()
	t0 := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	evs := []eventlog.Event{{Time: t0, Kind: eventlog.KindRunStart, Heights: 20,
		HaltAfterMS: halt.Milliseconds(), HaltAfterExplicit: explicit}}
	at := t0.Add(time.Second)
	for h := int64(1); h <= 21; h++ {
		evs = append(evs, eventlog.Event{Time: at, Kind: eventlog.KindBlock, Height: h})
		gap := 1160 * time.Millisecond
		if h == 5 {
			gap = 17200 * time.Millisecond
		}
		at = at.Add(gap)
	}
	evs = append(evs, eventlog.Event{Time: at, Kind: eventlog.KindRunEnd, StopReason: eventlog.StopHeights})
	s := results.Summarize(evs)
	if len(s.Halts) != 1 || s.Halts[0].FromHeight != 5 || s.Halts[0].DurationMS != 17200 || !s.Halts[0].Resumed {
		t.Errorf("halts %+v, want one from height 5 for 17.2 s (threshold %v)", s.Halts, halt)
	}
}
