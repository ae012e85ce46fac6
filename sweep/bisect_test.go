package sweep

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// below is a synthetic monotone target: holds while v <= limit.
func below(limit float64) func(float64) bool { return func(v float64) bool { return v <= limit } }

// above holds while v >= limit.
func above(limit float64) func(float64) bool { return func(v float64) bool { return v >= limit } }

func ms(n float64) float64 { return n * float64(time.Millisecond) }

func mustGrid(t *testing.T, u Unit, rng, res string) Grid {
	t.Helper()
	g, err := ParseGrid(u, rng, res)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestBisect(t *testing.T) {
	for _, tc := range []struct {
		name       string
		unit       Unit
		rng, res   string
		dir        Direction
		holds      func(float64) bool
		verdict    Verdict
		held, fail string // the interval for Found
		describe   string
	}{
		{"largest between grid values", Durations, "0..3s", "50ms", Largest, below(ms(575)), Found, "550ms", "600ms", "holds up to 550ms, fails from 600ms"},
		{"largest on a grid value", Durations, "0..3s", "50ms", Largest, below(ms(550)), Found, "550ms", "600ms", ""},
		{"largest just above the low end", Durations, "0..3s", "50ms", Largest, below(ms(10)), Found, "0s", "50ms", ""},
		{"largest just below the high end", Durations, "0..3s", "50ms", Largest, below(ms(2990)), Found, "2.95s", "3s", ""},
		{"default resolution", Durations, "0..3s", "", Largest, below(ms(1000)), Found, "930ms", "1.023s", ""},
		{"uneven last step", Durations, "0..1s", "300ms", Largest, below(ms(950)), Found, "900ms", "1s", ""},
		{"smallest", Durations, "0..3s", "50ms", Smallest, above(ms(1210)), Found, "1.25s", "1.2s", "fails up to 1.2s, holds from 1.25s"},
		{"integers", Integers, "1..20", "", Largest, below(9), Found, "9", "10", "holds up to 9, fails from 10"},
		{"integers smallest", Integers, "0..100", "5", Smallest, above(42), Found, "45", "40", ""},
		{"numbers", Numbers, "0..1", "0.1", Largest, below(0.33), Found, "0.3", "0.4", ""},
		{"holds everywhere", Durations, "0..3s", "50ms", Largest, below(ms(5000)), HoldsEverywhere, "", "", "holds over the whole range 0s..3s"},
		{"fails everywhere", Durations, "50ms..3s", "50ms", Largest, below(ms(10)), FailsEverywhere, "", "", "fails over the whole range 50ms..3s"},
		{"smallest holds everywhere", Integers, "1..20", "", Smallest, above(0), HoldsEverywhere, "", "", ""},
		{"ends the other way round", Durations, "0..3s", "50ms", Largest, above(ms(1000)), NotMonotone, "", "", "not monotone: held at 3s, failed at 0s; no threshold for --direction largest (did you mean --direction smallest?)"},
		{"ends the other way round, smallest", Integers, "1..20", "", Smallest, below(5), NotMonotone, "", "", "did you mean --direction largest?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := mustGrid(t, tc.unit, tc.rng, tc.res)
			seen := map[float64]bool{}
			probe := func(_ context.Context, v float64) (bool, error) {
				if seen[v] {
					t.Errorf("probed %s twice", g.Format(v))
				}
				seen[v] = true
				if !onGrid(g, v) {
					t.Errorf("probed %s, not a grid value", g.Format(v))
				}
				return tc.holds(v), nil
			}
			s, err := Bisect(context.Background(), g, tc.dir, probe)
			if err != nil {
				t.Fatal(err)
			}
			if s.Verdict != tc.verdict {
				t.Fatalf("verdict %s, want %s (%s)", s.Verdict, tc.verdict, s.Describe(g, tc.dir))
			}
			if tc.verdict == Found {
				h, f := g.Format(s.Probes[s.Held].Value), g.Format(s.Probes[s.Failed].Value)
				if h != tc.held || f != tc.fail {
					t.Errorf("interval held %s failed %s, want %s %s", h, f, tc.held, tc.fail)
				}
				if w := math.Abs(s.Probes[s.Held].Value - s.Probes[s.Failed].Value); w > g.Resolution+1e-9 {
					t.Errorf("interval %s wider than the resolution %s", g.Format(w), g.Format(g.Resolution))
				}
				if !s.Probes[s.Held].Held || s.Probes[s.Failed].Held {
					t.Errorf("interval ends: held %v failed %v", s.Probes[s.Held], s.Probes[s.Failed])
				}
			}
			if most := int(math.Ceil(math.Log2(float64(g.Steps())))) + 2; len(s.Probes) > most {
				t.Errorf("%d probes over %d steps, want at most log2+2 = %d", len(s.Probes), g.Steps(), most)
			}
			if d := s.Describe(g, tc.dir); !strings.Contains(d, tc.describe) {
				t.Errorf("Describe = %q, want it to contain %q", d, tc.describe)
			}
		})
	}
}

func onGrid(g Grid, v float64) bool {
	for i := 0; i <= g.Steps(); i++ {
		if g.Value(i) == v {
			return true
		}
	}
	return false
}

// A probe that cannot be done ends the search as incomplete, keeping the
// probes done.
func TestBisectIncomplete(t *testing.T) {
	g := mustGrid(t, Durations, "0..3s", "50ms")
	stop := errors.New("interrupted")
	n := 0
	s, err := Bisect(context.Background(), g, Largest, func(_ context.Context, v float64) (bool, error) {
		if n++; n == 4 {
			return false, stop
		}
		return v <= ms(500), nil
	})
	if !errors.Is(err, stop) || s.Verdict != Incomplete || len(s.Probes) != 3 {
		t.Fatalf("err %v verdict %s probes %d, want interrupted, incomplete, 3", err, s.Verdict, len(s.Probes))
	}
	if d := s.Describe(g, Largest); d != "incomplete: held at 0s, failed at 3s, failed at 1.5s" {
		t.Errorf("Describe = %q", d)
	}
}

// contradicted is the monotonicity check every probe passes: bisection
// alone only reaches it with the two ends, so it is tested directly.
func TestContradicted(t *testing.T) {
	p := func(v float64, held bool) Probed { return Probed{v, held} }
	for _, tc := range []struct {
		name   string
		probes []Probed
		dir    Direction
		want   int // -1: none
	}{
		{"monotone largest", []Probed{p(0, true), p(10, false), p(5, true), p(7, false)}, Largest, -1},
		{"held above a failure", []Probed{p(0, true), p(10, false), p(5, false), p(7, true)}, Largest, 2},
		{"failed below a hold", []Probed{p(0, true), p(10, false), p(5, true), p(3, false)}, Largest, 2},
		{"monotone smallest", []Probed{p(0, false), p(10, true), p(5, true), p(3, false)}, Smallest, -1},
		{"held below a failure, smallest", []Probed{p(0, false), p(10, true), p(5, false), p(3, true)}, Smallest, 2},
		{"equal outcomes never contradict", []Probed{p(0, false), p(10, false), p(5, false)}, Largest, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := contradicted(tc.probes, tc.dir)
			if !ok {
				got = -1
			}
			if got != tc.want {
				t.Errorf("contradicted = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestParseGrid(t *testing.T) {
	for _, tc := range []struct {
		unit      Unit
		rng, res  string
		lo, hi, r string // formatted; "" with err
		steps     int
		err       string
	}{
		{Durations, "0..3s", "", "0s", "3s", "93ms", 33, ""},
		{Durations, "50ms..2s", "50ms", "50ms", "2s", "50ms", 39, ""},
		{Durations, "0s..20ms", "", "0s", "20ms", "625µs", 32, ""},
		{Integers, "1..20", "", "1", "20", "1", 19, ""},
		{Integers, "0..100", "", "0", "100", "3", 34, ""},
		{Numbers, "0.5..4", "0.5", "0.5", "4", "0.5", 7, ""},
		{Numbers, "-1..1", "", "-1", "1", "0.0625", 32, ""},
		{Durations, "3s", "", "", "", "", 0, `--range "3s": want LO..HI, e.g. 0..3s or 50ms..2s`},
		{Durations, "1s..1s", "", "", "", "", 0, `--range "1s..1s" is empty`},
		{Durations, "3s..0", "", "", "", "", 0, `--range "3s..0" is reversed: write the lower value first (0s..3s)`},
		{Durations, "0..3", "", "", "", "", 0, `--range "0..3": high end: "3" is not a duration`},
		{Integers, "1..2.5", "", "", "", "", 0, `high end: "2.5" is not an integer`},
		{Integers, "1s..5", "", "", "", "", 0, `low end: "1s" is not an integer`},
		{Numbers, "a..5", "", "", "", "", 0, `low end: "a" is not a number`},
		{Durations, "0..3s", "0s", "", "", "", 0, `--resolution "0s": must be greater than zero`},
		{Durations, "0..3s", "5", "", "", "", 0, `--resolution "5": "5" is not a duration`},
		{Integers, "1..20", "0.5", "", "", "", 0, `--resolution "0.5": "0.5" is not an integer`},
	} {
		t.Run(tc.rng+" "+tc.res, func(t *testing.T) {
			g, err := ParseGrid(tc.unit, tc.rng, tc.res)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := [3]string{g.Format(g.Lo), g.Format(g.Hi), g.Format(g.Resolution)}
			if got != [3]string{tc.lo, tc.hi, tc.r} || g.Steps() != tc.steps {
				t.Errorf("grid %v steps %d, want %s %s %s steps %d", got, g.Steps(), tc.lo, tc.hi, tc.r, tc.steps)
			}
		})
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 550 * time.Millisecond: "550ms", 1500 * time.Millisecond: "1.5s",
		2 * time.Minute: "2m", 90 * time.Second: "1m30s", time.Hour: "1h", 61 * time.Minute: "1h1m", 625 * time.Microsecond: "625µs",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// bands holds on [0, 1s], fails on (1s, 2s], holds on (2s, upTo] and
// fails above upTo: a target that is not monotone.
func bands(upTo float64) func(float64) bool {
	return func(v float64) bool { return v <= ms(1000) || (v > ms(2000) && v <= upTo) }
}

// The search sees only what it probes (threshold.md): a target that holds,
// fails and holds again over the range is reported from its probes alone.
func TestBisectNotMonotoneUnseen(t *testing.T) {
	g := mustGrid(t, Durations, "0..3s", "100ms")
	run := func(holds func(float64) bool) Search {
		s, err := Bisect(context.Background(), g, Largest, func(_ context.Context, v float64) (bool, error) { return holds(v), nil })
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// Held at both ends: holds-everywhere after the two end probes; the
	// failing band in the middle is never probed.
	s := run(bands(ms(3000)))
	if s.Verdict != HoldsEverywhere || len(s.Probes) != 2 || !strings.Contains(s.Describe(g, Largest), "holds over the whole range 0s..3s") {
		t.Errorf("holds, fails, holds: %s after %d probes (%s)", s.Verdict, len(s.Probes), s.Describe(g, Largest))
	}
	// Failing at the top: bisection brackets one edge (here the first,
	// 1s..1.1s) and reports it as found; the second holding band
	// (2.1s..2.5s) is not seen.
	s = run(bands(ms(2500)))
	if d := s.Describe(g, Largest); s.Verdict != Found || d != "holds up to 1s, fails from 1.1s" {
		t.Errorf("holds, fails, holds, fails: %s %q", s.Verdict, d)
	}
}

// Bisection probes only between the nearest held and failed values, so
// the only contradiction it can meet is the second end against the first
// (threshold.md): every held/failed pattern over a small grid, in both
// directions, either ends without a contradiction or with probe 1
// contradicting probe 0, and the probes it names really contradict.
func TestBisectContradictionsOnlyAtTheEnds(t *testing.T) {
	g := mustGrid(t, Integers, "0..6", "1")
	n := g.Steps() + 1
	for _, dir := range []Direction{Largest, Smallest} {
		for pattern := 0; pattern < 1<<n; pattern++ {
			holds := func(v float64) bool { return pattern&(1<<int(v)) != 0 }
			s, err := Bisect(context.Background(), g, dir, func(_ context.Context, v float64) (bool, error) { return holds(v), nil })
			if err != nil {
				t.Fatal(err)
			}
			if s.Verdict != NotMonotone {
				continue
			}
			if s.Contradiction != [2]int{1, 0} {
				t.Errorf("%s pattern %07b: contradiction %v, want the two ends [1 0]", dir, pattern, s.Contradiction)
				continue
			}
			a, b := s.Probes[1], s.Probes[0]
			heldV, failedV := a.Value, b.Value
			if !a.Held {
				heldV, failedV = b.Value, a.Value
			}
			if a.Held == b.Held || (dir == Largest && heldV < failedV) || (dir == Smallest && heldV > failedV) {
				t.Errorf("%s pattern %07b: %v and %v do not contradict", dir, pattern, a, b)
			}
		}
	}
}
