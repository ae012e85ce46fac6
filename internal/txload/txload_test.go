package txload

import (
	"bytes"
	"testing"
	"time"

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
		{"behind: no wait", ms(500), 3, 100, 0, 0, false},
		{"slow rate", 0, 1, 0.5, 0, 2 * time.Second, false},
		{"over", time.Second, 5, 100, time.Second, 0, true},
		{"next due after the end", ms(950), 100, 100, time.Second, 0, true},
		{"last one inside", ms(985), 99, 100, time.Second, ms(5), false},
		{"no end", time.Hour, 360000, 100, 0, ms(0), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			wait, stop := Pace(c.elapsed, c.sent, c.rate, c.duration)
			if wait != c.wait || stop != c.stop {
				t.Errorf("pace(%v, %d, %g, %v) = %v, %v; want %v, %v", c.elapsed, c.sent, c.rate, c.duration, wait, stop, c.wait, c.stop)
			}
		})
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
