package latency

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

func TestParse(t *testing.T) {
	good := []struct {
		in   string
		want Spec
	}{
		{"200ms", Spec{Dist: Fixed, Value: 200 * ms}},
		{"0s", Spec{Dist: Fixed}},
		{"fixed:1s", Spec{Dist: Fixed, Value: time.Second}},
		{"uniform:1s:2s", Spec{Dist: Uniform, Min: time.Second, Max: 2 * time.Second}},
		{"uniform:1s:1s", Spec{Dist: Uniform, Min: time.Second, Max: time.Second}},
		{"normal:100ms:10ms", Spec{Dist: Normal, Mean: 100 * ms, Stddev: 10 * ms}},
		{"lognormal:200ms:800ms", Spec{Dist: Lognormal, P50: 200 * ms, P99: 800 * ms}},
	}
	for _, tc := range good {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	bad := []struct{ in, want string }{
		{"fast", `latency "fast": unknown distribution "fast" (write D, fixed:D, uniform:MIN:MAX`},
		{"", `unknown distribution ""`},
		{"lognormal:200ms", `latency "lognormal:200ms": lognormal takes 2 duration(s) (p50, p99), got 1`},
		{"fixed:1s:2s", "fixed takes 1 duration(s) (value), got 2"},
		{"lognormal:800ms:200ms", `latency "lognormal:800ms:200ms": p99 200ms is less than p50 800ms`},
		{"lognormal:0s:1s", "p50 must be greater than 0"},
		{"uniform:1s:x", `"x" is not a duration`},
		{"uniform:2s:1s", "min 2s is greater than max 1s"},
		{"-1s", "value must not be negative, got -1s"},
		{"normal:1s:-1s", "stddev must not be negative"},
	}
	for _, tc := range bad {
		if _, err := Parse(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) error %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestValidateNamesTheParameter(t *testing.T) {
	tests := []struct {
		spec  Spec
		param string // "" = valid
	}{
		{Spec{Dist: Fixed}, ""},
		{Spec{Dist: Fixed, Value: -1}, "value"},
		{Spec{Dist: Uniform, Min: 2, Max: 1}, "min"},
		{Spec{Dist: Uniform, Min: -1, Max: 1}, "min"},
		{Spec{Dist: Normal, Mean: -1}, "mean"},
		{Spec{Dist: Normal, Mean: 1, Stddev: -1}, "stddev"},
		{Spec{Dist: Normal}, ""},
		{Spec{Dist: Lognormal, P50: 0, P99: 1}, "p50"},
		{Spec{Dist: Lognormal, P50: 2, P99: 1}, "p99"},
		{Spec{Dist: Lognormal, P50: 1, P99: 1}, ""},
		{Spec{Dist: "pareto"}, "dist"},
		{Spec{}, "dist"},
	}
	for _, tc := range tests {
		err := tc.spec.Validate()
		var e *Error
		switch {
		case tc.param == "" && err != nil:
			t.Errorf("%+v: %v", tc.spec, err)
		case tc.param != "" && !errors.As(err, &e):
			t.Errorf("%+v: error %v, want one about %s", tc.spec, err, tc.param)
		case tc.param != "" && e.Param != tc.param:
			t.Errorf("%+v: error about %s (%v), want %s", tc.spec, e.Param, e, tc.param)
		}
		if _, nerr := New(tc.spec, 1, "x"); (nerr == nil) != (err == nil) {
			t.Errorf("%+v: New says %v, Validate %v", tc.spec, nerr, err)
		}
	}
}

func TestMakeTakesParamsInOrder(t *testing.T) {
	for _, d := range Dists() {
		names := Params(d)
		vals := make([]time.Duration, len(names))
		for i := range vals {
			vals[i] = time.Duration(i+1) * ms
		}
		s, err := Make(d, vals...)
		if err != nil {
			t.Fatalf("Make(%s): %v", d, err)
		}
		for i, n := range names {
			if got := *s.field(n); got != vals[i] {
				t.Errorf("Make(%s): %s = %v, want %v", d, n, got, vals[i])
			}
		}
		if _, err := Make(d, append(vals, ms)...); err == nil {
			t.Errorf("Make(%s) took one value too many", d)
		}
	}
	if _, err := Make("pareto"); err == nil {
		t.Error("Make accepted an unknown distribution")
	}
	p := Params(Uniform)
	p[0] = "changed"
	if Params(Uniform)[0] != "min" {
		t.Error("Params returned the table itself")
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Dist: Fixed, Value: 200 * ms}, "fixed 200ms"},
		{Spec{Dist: Uniform, Min: time.Second, Max: 3 * time.Second}, "uniform 1s..3s"},
		{Spec{Dist: Normal, Mean: 100 * ms, Stddev: 5 * ms}, "normal mean=100ms stddev=5ms"},
		{Spec{Dist: Lognormal, P50: 550 * ms, P99: 605 * ms}, "lognormal p50=550ms p99=605ms"},
	} {
		if got := tc.spec.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
		m, err := New(tc.spec, 1, "x")
		if err != nil {
			t.Fatal(err)
		}
		if got := m.String(); got != tc.want {
			t.Errorf("model String() = %q, want %q", got, tc.want)
		}
	}
	if got := Constant(0).String(); got != "fixed 0s" {
		t.Errorf("Constant(0) = %q", got)
	}
}

// TestDrawsAreThoseOfEarlierReleases pins the first draws of seed 7,
// stream "v1": the models valnet had in signers and network drew exactly
// these, so a scenario run with the same seed sees the same delays.
func TestDrawsAreThoseOfEarlierReleases(t *testing.T) {
	tests := []struct {
		spec   Spec
		stream string
		want   []time.Duration
	}{
		{Spec{Dist: Fixed, Value: 200 * ms}, "v1", []time.Duration{200000000, 200000000, 200000000, 200000000}},
		{Spec{Dist: Uniform, Min: 100 * ms, Max: 300 * ms}, "v1", []time.Duration{179080696, 192913151, 164724269, 157080546}},
		{Spec{Dist: Normal, Mean: 200 * ms, Stddev: 30 * ms}, "v1", []time.Duration{214537629, 200691628, 209746493, 197504325}},
		{Spec{Dist: Lognormal, P50: 200 * ms, P99: 800 * ms}, "v1", []time.Duration{266957130, 202766617, 242722430, 190327086}},
		// network.Normal of a zone pair, as the fabric had it.
		{Spec{Dist: Normal, Mean: 100 * ms, Stddev: 5 * ms}, "link:a->b", []time.Duration{104361975, 105226331, 100450735, 86233724}},
	}
	for _, tc := range tests {
		m, err := New(tc.spec, 7, tc.stream)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]time.Duration, len(tc.want))
		for i := range got {
			got[i] = m.Draw()
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: draws %v, want %v", tc.spec, got, tc.want)
		}
	}
	r := NewRand(7, "v1/simulated:x")
	if a, b := r.Float64(), r.Float64(); a != 0.8987594587057732 || b != 0.5897395416630051 {
		t.Errorf("NewRand(7, ...) drew %v, %v", a, b)
	}
}

func TestModelsAreRepeatableAndShaped(t *testing.T) {
	const n = 20000
	tests := []struct {
		spec     Spec
		p50, tol time.Duration
		lo, hi   time.Duration
	}{
		{Spec{Dist: Fixed, Value: 200 * ms}, 200 * ms, 0, 200 * ms, 200 * ms},
		{Spec{Dist: Uniform, Min: 100 * ms, Max: 300 * ms}, 200 * ms, 5 * ms, 100 * ms, 300 * ms},
		{Spec{Dist: Normal, Mean: 200 * ms, Stddev: 30 * ms}, 200 * ms, 3 * ms, 0, time.Second},
		{Spec{Dist: Lognormal, P50: 200 * ms, P99: 800 * ms}, 200 * ms, 8 * ms, 0, time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.spec.String(), func(t *testing.T) {
			a, err := New(tc.spec, 1, "v1")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := New(tc.spec, 1, "v1")
			c, _ := New(tc.spec, 2, "v1")
			d, _ := New(tc.spec, 1, "v2")
			draws := make([]time.Duration, n)
			otherSeed, otherStream := false, false
			for i := range draws {
				draws[i] = a.Draw()
				if draws[i] != b.Draw() {
					t.Fatal("same seed and stream gave different draws")
				}
				otherSeed = otherSeed || draws[i] != c.Draw()
				otherStream = otherStream || draws[i] != d.Draw()
				if draws[i] < tc.lo || draws[i] > tc.hi {
					t.Fatalf("draw %v outside [%v, %v]", draws[i], tc.lo, tc.hi)
				}
			}
			if tc.spec.Dist != Fixed && (!otherSeed || !otherStream) {
				t.Fatalf("another seed (differs: %v) or stream (differs: %v) gave the same draws", otherSeed, otherStream)
			}
			slices.Sort(draws)
			if got := draws[n/2]; (got - tc.p50).Abs() > tc.tol {
				t.Fatalf("p50 = %v, want %v ± %v", got, tc.p50, tc.tol)
			}
			if tc.spec.Dist == Lognormal {
				p99 := draws[n*99/100]
				if math.Abs(float64(p99-tc.spec.P99)) > float64(60*ms) {
					t.Fatalf("p99 = %v, want ~%v", p99, tc.spec.P99)
				}
			}
		})
	}
}

func TestNormalIsClampedAtZero(t *testing.T) {
	m, err := New(Spec{Dist: Normal, Mean: 0, Stddev: 30 * ms}, 1, "jitter")
	if err != nil {
		t.Fatal(err)
	}
	const n = 10000
	zeros := 0
	for range n {
		d := m.Draw()
		if d < 0 {
			t.Fatalf("negative draw %v", d)
		}
		if d == 0 {
			zeros++
		}
	}
	if zeros < n*45/100 || zeros > n*55/100 {
		t.Errorf("%d of %d draws are 0, want about half", zeros, n)
	}
}

// TestSerialDrawsTheSame: a model made serial (and NewStream) draws what
// the locked model and NewRand draw, for every distribution.
func TestSerialDrawsTheSame(t *testing.T) {
	specs := []string{"uniform:10ms:20ms", "normal:50ms:5ms", "lognormal:40ms:200ms"}
	for _, text := range specs {
		spec, err := Parse(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		locked, _ := New(spec, 7, "s")
		serial, _ := New(spec, 7, "s")
		MakeSerial(serial)
		for i := 0; i < 1000; i++ {
			if a, b := locked.Draw(), serial.Draw(); a != b {
				t.Fatalf("%s draw %d: locked %v, serial %v", text, i, a, b)
			}
		}
	}
	r, s := NewRand(3, "x"), NewStream(3, "x")
	for i := 0; i < 100; i++ {
		if a, b := r.Float64(), s.Float64(); a != b {
			t.Fatalf("draw %d: NewRand %v, NewStream %v", i, a, b)
		}
	}
	MakeSerial(nil)                   // nil: nothing to do
	MakeSerial(Constant(time.Second)) // no stream: nothing to do
}

// Found by FuzzParse: a draw beyond int64 nanoseconds (a lognormal with a
// huge p99, a normal with a huge mean or stddev) converted to the most
// negative Duration. Draws are clamped to [0, the longest Duration], and a
// uniform stays within its bounds.
func TestHugeSpecsDrawRealDelays(t *testing.T) {
	const longest = time.Duration(math.MaxInt64)
	for _, spec := range []Spec{
		{Dist: Lognormal, P50: 1, P99: longest},
		{Dist: Lognormal, P50: longest / 2, P99: longest},
		{Dist: Normal, Mean: longest, Stddev: longest},
		{Dist: Normal, Mean: 0, Stddev: longest},
		{Dist: Uniform, Min: 0, Max: longest},
		{Dist: Uniform, Min: longest - 1, Max: longest},
	} {
		t.Run(spec.String(), func(t *testing.T) {
			m, err := New(spec, 1, "huge")
			if err != nil {
				t.Fatal(err)
			}
			for range 10000 {
				d := m.Draw()
				if d < 0 || spec.Dist == Uniform && (d < spec.Min || d > spec.Max) {
					t.Fatalf("drew %v", d)
				}
			}
		})
	}
}
