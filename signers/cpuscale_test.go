package signers

import (
	"math"
	"testing"
	"time"
)

// On a fake clock that the key's work advances, the added wait is
// exactly (scale-1) times that work, and all of it is reported.
func TestCPUScaledMultipliesTheRealCost(t *testing.T) {
	const cost = 5 * time.Millisecond
	for _, scale := range []float64{3, 10} {
		clk := newFakeClock()
		inner := &clockKey{key: simKey(), clk: clk, cost: cost}
		s, err := newCPUScaled(inner, scale, clk)
		if err != nil {
			t.Fatal(err)
		}
		start := clk.Now()
		done := goSign(s, []byte("vote"))
		extra := time.Duration(float64(cost) * (scale - 1))
		advanceThrough(t, clk, extra)
		verified(t, await(t, done), s.PubKey(), []byte("vote"))
		if took, want := clk.Since(start), time.Duration(scale*float64(cost)); took != want {
			t.Errorf("scale %v: Sign took %v, want %v", scale, took, want)
		}
		if inj := s.(InjectedReporter).TakeInjected(); inj != extra {
			t.Errorf("scale %v: injected %v, want the added %v", scale, inj, extra)
		}
		if err := s.(Closer).Close(); err != nil || !inner.closed {
			t.Errorf("scale %v: Close did not close inner (err %v)", scale, err)
		}
	}
}

func TestScaledExtra(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		elapsed, innerInj time.Duration
		scale             float64
		want              time.Duration
	}{
		{5 * ms, 0, 3, 10 * ms},
		{5 * ms, 0, 10, 45 * ms},
		{55 * ms, 50 * ms, 4, 15 * ms}, // only the real 5 ms is scaled
		{50 * ms, 50 * ms, 4, 0},       // all modelled: nothing to scale
		{40 * ms, 50 * ms, 4, 0},       // inner reported more than the call took
		{5 * ms, 0, 1.5, 2500 * time.Microsecond},
	} {
		if got := scaledExtra(tc.elapsed, tc.innerInj, tc.scale); got != tc.want {
			t.Errorf("scaledExtra(%v, %v, %g) = %v, want %v", tc.elapsed, tc.innerInj, tc.scale, got, tc.want)
		}
	}
}

func TestNewCPUScaledScales(t *testing.T) {
	inner := simKey()
	for _, tc := range []struct {
		scale     float64
		ok        bool
		unchanged bool
	}{
		{0, false, false},
		{-2, false, false},
		{0.5, false, false}, // waiting cannot make a host faster
		{math.NaN(), false, false},
		{math.Inf(1), false, false},
		{1, true, true},
		{1.5, true, false},
	} {
		s, err := NewCPUScaled(inner, tc.scale)
		if (err == nil) != tc.ok {
			t.Errorf("scale %v: err = %v, want ok=%v", tc.scale, err, tc.ok)
			continue
		}
		if !tc.ok {
			continue
		}
		if _, same := s.(PrivKeySigner); same != tc.unchanged {
			t.Errorf("scale %v: got %T, want inner returned unchanged=%v", tc.scale, s, tc.unchanged)
		}
	}
	if _, err := NewCPUScaled(nil, 2); err == nil {
		t.Error("accepted a nil inner")
	}
}

// A simulated device's modelled time is not host CPU: CPUScaled around a
// Simulated must not multiply it (4 x 50 ms would be 200 ms). On one fake
// clock: the device's 50 ms, then the call returns with no wait added.
func TestCPUScaledDoesNotScaleModelledTime(t *testing.T) {
	const device = 50 * time.Millisecond
	clk := newFakeClock()
	sim := newSim(t, simKey(), fixedProfile(device), 1, "v0")
	sim.clock = clk
	s, err := newCPUScaled(sim, 4, clk)
	if err != nil {
		t.Fatal(err)
	}
	start := clk.Now()
	done := goSign(s, []byte("vote"))
	advanceThrough(t, clk, device)
	verified(t, awaitNoWait(t, clk, done), s.PubKey(), []byte("vote"))
	if took := clk.Since(start); took != device {
		t.Errorf("Sign took %v, want the device time %v, unscaled", took, device)
	}
	// The device time reaches the instrumentation through CPUScaled.
	if inj := s.(InjectedReporter).TakeInjected(); inj != device {
		t.Errorf("injected %v, want the device's %v passed through", inj, device)
	}
}

func TestCPUScaledCloseReleasesTheWait(t *testing.T) {
	clk := newFakeClock()
	inner := &clockKey{key: simKey(), clk: clk, cost: 20 * time.Millisecond}
	s, err := newCPUScaled(inner, 1000, clk) // would wait ~20 s
	if err != nil {
		t.Fatal(err)
	}
	done := goSign(s, []byte("vote"))
	awaitWaiters(t, clk, 1) // the scaled wait has begun
	s.(Closer).Close()
	// Released with the clock standing still.
	verified(t, await(t, done), s.PubKey(), []byte("vote"))
	if inj := s.(InjectedReporter).TakeInjected(); inj != 0 {
		t.Errorf("injected %v: counts the wait not spent", inj)
	}
}
