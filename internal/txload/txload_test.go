package txload

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/valnet/valnet/scenarios"
)

func TestPace(t *testing.T) {
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	for _, c := range []struct {
		name     string
		elapsed  time.Duration
		sent     uint64
		rate     float64
		duration time.Duration
		wait     time.Duration
		stop     bool
	}{
		{"first at once", 0, 0, 100, 0, 0, false},
		{"second after 1/rate", 0, 1, 100, 0, ms(10), false},
		{"part of the gap left", ms(4), 1, 100, 0, ms(6), false},
		{"on time", ms(10), 1, 100, 0, 0, false},
		{"a hair early: the rest of the gap", ms(9.9), 1, 100, 0, ms(0.1), false},
		{"behind: no wait", ms(500), 3, 100, 0, 0, false},
		{"slow rate", 0, 1, 0.5, 0, 2 * time.Second, false},
		{"over", time.Second, 5, 100, time.Second, 0, true},
		{"next due after the end", ms(950), 100, 100, time.Second, 0, true},
		{"last one inside", ms(985), 99, 100, time.Second, ms(5), false},
		{"no end", time.Hour, 360000, 100, 0, ms(0), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			wait, stop := Pacer{Rate: c.rate, Duration: c.duration}.Pace(c.elapsed, c.sent)
			if wait != c.wait || stop != c.stop {
				t.Errorf("pace(%v, %d, %g, %v) = %v, %v; want %v, %v", c.elapsed, c.sent, c.rate, c.duration, wait, stop, c.wait, c.stop)
			}
			if w, s := Pace(c.elapsed, c.sent, c.rate, c.duration); w != wait || s != stop {
				t.Errorf("Pace and Pacer.Pace differ: %v, %v and %v, %v", w, s, wait, stop)
			}
		})
	}
}

// tick advances clk by a millisecond whenever something sleeps on it,
// until ctx ends: the load's schedule is in whole milliseconds, so each
// wait ends exactly when it is due.
func tick(ctx context.Context, clk *clockwork.FakeClock) {
	for clk.BlockUntilContext(ctx, 1) == nil {
		clk.Advance(time.Millisecond)
	}
}

// TestDrive: on a fake clock every transaction is handed out exactly when
// it is due; one whose hand took long is followed at once by those due
// meanwhile, and the schedule is not shifted; the load ends with its
// duration, with ctx, or when hand says stop.
func TestDrive(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		out := make([]time.Duration, len(n))
		for i, v := range n {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	for _, c := range []struct {
		name   string
		pacer  Pacer
		block  map[uint64]time.Duration // hand of n takes this long
		stopAt uint64                   // hand of n refuses it: stop (0: never)
		want   []time.Duration          // when hand was called for each number
	}{
		{"on time", Pacer{Rate: 100, Duration: 100 * time.Millisecond}, nil, 0,
			ms(0, 10, 20, 30, 40, 50, 60, 70, 80, 90)},
		{"behind, then caught up", Pacer{Rate: 100, Duration: 100 * time.Millisecond},
			map[uint64]time.Duration{2: 25 * time.Millisecond}, 0,
			ms(0, 10, 20, 45, 45, 50, 60, 70, 80, 90)},
		{"behind past the end", Pacer{Rate: 100, Duration: 50 * time.Millisecond},
			map[uint64]time.Duration{1: 100 * time.Millisecond}, 0,
			ms(0, 10)},
		{"hand says stop", Pacer{Rate: 100}, nil, 3, ms(0, 10, 20, 30)},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := clockwork.NewFakeClock()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			go tick(ctx, clk)
			began := clk.Now()
			var at []time.Duration
			n := c.pacer.Drive(ctx, clk, func(n uint64) bool {
				at = append(at, clk.Since(began))
				if d := c.block[n]; d > 0 {
					clk.Advance(d) // a send that takes d
				}
				return c.stopAt == 0 || n < c.stopAt
			})
			if ctx.Err() != nil {
				t.Fatal("the load did not end by itself")
			}
			handed := uint64(len(c.want))
			if c.stopAt > 0 {
				handed = c.stopAt // the one refused is not counted
			}
			if !slices.Equal(at, c.want) || n != handed {
				t.Errorf("handed out %d, hand called at %v; want %d at %v", n, at, handed, c.want)
			}
		})
	}
}

// TestDriveEndsWithCtx: a load without an end stops while it waits for
// its next transaction once ctx ends.
func TestDriveEndsWithCtx(t *testing.T) {
	clk := clockwork.NewFakeClock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan uint64)
	go func() { done <- Pacer{Rate: 1}.Drive(ctx, clk, func(uint64) bool { return true }) }()
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	if err := clk.BlockUntilContext(wctx, 1); err != nil {
		t.Fatal("Drive never waited for its second transaction")
	}
	cancel()
	select {
	case n := <-done:
		if n != 1 {
			t.Errorf("handed out %d, want the first only", n)
		}
	case <-wctx.Done():
		t.Fatal("Drive did not return once ctx ended")
	}
}

// TestTxMaker: valid kvstore transactions (one '=', not at either end),
// of the asked size, unique in a run, the same for the same seed.
func TestTxMaker(t *testing.T) {
	for _, size := range []int{scenarios.MinTxSize, 100, 1 << 10} {
		m := NewMaker(7, size)
		seen := map[string]bool{}
		for n := range uint64(1000) {
			tx := m.Make(n)
			if len(tx) != size {
				t.Fatalf("size %d: tx %d is %d bytes", size, n, len(tx))
			}
			if bytes.Count(tx, []byte("=")) != 1 || bytes.Contains(tx, []byte(":")) || tx[0] == '=' || tx[len(tx)-1] == '=' {
				t.Fatalf("not a kvstore key=value: %q", tx)
			}
			if seen[string(tx)] {
				t.Fatalf("tx %d repeats: %q", n, tx)
			}
			seen[string(tx)] = true
		}
	}
	if a, b := NewMaker(7, 64).Make(3), NewMaker(7, 64).Make(3); !bytes.Equal(a, b) {
		t.Errorf("same seed, different txs: %q %q", a, b)
	}
	if a, b := NewMaker(7, 64).Make(3), NewMaker(8, 64).Make(3); bytes.Equal(a, b) {
		t.Errorf("seeds 7 and 8 give the same tx %q", a)
	}
}
