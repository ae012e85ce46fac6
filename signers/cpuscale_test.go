package signers

import (
	"math"
	"testing"
	"time"

	"github.com/cometbft/cometbft/crypto"

	"github.com/valnet/valnet/internal/phase"
)

// slowKey stands for software signing that costs cost of real host time.
type slowKey struct {
	key    PrivKeySigner
	cost   time.Duration
	closed bool
}

func (k *slowKey) PubKey() crypto.PubKey { return k.key.PubKey() }

func (k *slowKey) Sign(kind string, msg []byte) ([]byte, error) {
	time.Sleep(k.cost)
	return k.key.Sign(kind, msg)
}

func (k *slowKey) Close() error { k.closed = true; return nil }

func TestCPUScaledMultipliesTheRealCost(t *testing.T) {
	const cost = 5 * time.Millisecond
	for _, tc := range []struct {
		scale float64
		min   time.Duration
	}{
		{3, 15 * time.Millisecond},
		{10, 50 * time.Millisecond},
	} {
		inner := &slowKey{key: simKey(), cost: cost}
		s, err := NewCPUScaled(inner, tc.scale)
		if err != nil {
			t.Fatal(err)
		}
		took := timedSign(t, s, []byte("vote"))
		// The sleep in inner may overshoot on a loaded machine, and the
		// overshoot is scaled too: a wide upper bound.
		upper := time.Duration(tc.scale * float64(cost+50*time.Millisecond))
		if took < tc.min || took > upper {
			t.Errorf("scale %v: Sign took %v, want %v .. %v", tc.scale, took, tc.min, upper)
		}
		wantInj := time.Duration(float64(cost) * (tc.scale - 1))
		if inj := s.(InjectedReporter).TakeInjected(); inj < wantInj || inj > took {
			t.Errorf("scale %v: injected %v, want %v .. %v", tc.scale, inj, wantInj, took)
		}
		if err := s.(Closer).Close(); err != nil || !inner.closed {
			t.Errorf("scale %v: Close did not close inner (err %v)", tc.scale, err)
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
// Simulated must not multiply it (4 x 50 ms would be 200 ms).
func TestCPUScaledDoesNotScaleModelledTime(t *testing.T) {
	sim := newSim(t, simKey(), fixedProfile(50*time.Millisecond), 1, "v0")
	s, err := NewCPUScaled(sim, 4)
	if err != nil {
		t.Fatal(err)
	}
	took := timedSign(t, s, []byte("vote"))
	if took < 50*time.Millisecond || took > 150*time.Millisecond {
		t.Errorf("Sign took %v, want ~50ms (the device time, unscaled)", took)
	}
	// The device time reaches the instrumentation through CPUScaled.
	if inj := s.(InjectedReporter).TakeInjected(); inj < 50*time.Millisecond {
		t.Errorf("injected %v, want the device's 50ms passed through", inj)
	}
}

func TestCPUScaledCloseReleasesTheWait(t *testing.T) {
	inner := &slowKey{key: simKey(), cost: 20 * time.Millisecond}
	s, err := NewCPUScaled(inner, 1000) // would wait ~20 s
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Sign(phase.Prevote, []byte("vote"))
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	s.(Closer).Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not release the scaled wait")
	}
}
