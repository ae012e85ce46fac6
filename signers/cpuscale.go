package signers

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cometbft/cometbft/crypto"
	"github.com/jonboulle/clockwork"
)

// CPUScaled multiplies the real software signing cost of inner by scale,
// to stand for a slower host (10 ≈ a Raspberry Pi 3B+ against a laptop,
// per seeds/002): it measures each real signature and waits (scale-1)
// times as long after it.
//
// Only real work is scaled. Time inner reports as injected (a latency
// model, or a Simulated device's modelled time) is subtracted first, so a
// modelled device is not made slower by a slow host; still, apply
// CPUScaled to the key a Simulated signs with, not around the Simulated,
// so the device model stays the only source of device time.
//
// The scale comes from one published key-generation comparison; it is a
// coarse stand-in for a CPU class, not a calibrated model of one host.
type CPUScaled struct {
	inner KeySigner
	scale float64
	// clock measures inner and spends the added wait: the real clock, or
	// in tests a fake one that a stand-in for real work advances.
	clock clockwork.Clock

	injected atomic.Int64 // ns since the last TakeInjected: own waits + inner's injected
	stop     chan struct{}
	stopOnce sync.Once
}

var (
	_ KeySigner        = (*CPUScaled)(nil)
	_ InjectedReporter = (*CPUScaled)(nil)
	_ Closer           = (*CPUScaled)(nil)
)

// NewCPUScaled wraps inner so its software signing cost is scale times
// what it is here. scale == 1 returns inner itself. A scale below 1 is an
// error: waiting cannot make this host faster. It measures and waits on
// the real clock (Build uses Spec.Clock).
func NewCPUScaled(inner KeySigner, scale float64) (KeySigner, error) {
	return newCPUScaled(inner, scale, nil)
}

func newCPUScaled(inner KeySigner, scale float64, clock clockwork.Clock) (KeySigner, error) {
	if inner == nil {
		return nil, fmt.Errorf("cpu scale needs a key signer to wrap")
	}
	if math.IsNaN(scale) || math.IsInf(scale, 0) || scale < 1 {
		return nil, fmt.Errorf("cpu scale must be a finite number >= 1 (a slower host), got %v", scale)
	}
	if scale == 1 {
		return inner, nil
	}
	return &CPUScaled{inner: inner, scale: scale, clock: clockOr(clock), stop: make(chan struct{})}, nil
}

func (c *CPUScaled) PubKey() crypto.PubKey { return c.inner.PubKey() }

// Scale returns the factor, for labels.
func (c *CPUScaled) Scale() float64 { return c.scale }

// Sign signs with inner, then waits (scale-1) times the real time it took.
// A failed signature is returned at once, without the added wait.
func (c *CPUScaled) Sign(kind string, msg []byte) ([]byte, error) {
	start := c.clock.Now()
	sig, err := c.inner.Sign(kind, msg)
	elapsed := c.clock.Since(start)
	var innerInjected time.Duration
	if r, ok := c.inner.(InjectedReporter); ok {
		innerInjected = r.TakeInjected() // taken now to know how much was real
	}
	c.injected.Add(int64(innerInjected))
	if err != nil {
		return nil, err
	}
	extra := scaledExtra(elapsed, innerInjected, c.scale)
	if extra <= 0 {
		return sig, nil
	}
	waitStart := c.clock.Now()
	sleepOn(c.clock, extra, c.stop) // Close ends it: the signature is returned
	c.injected.Add(int64(c.clock.Since(waitStart)))
	return sig, nil
}

// scaledExtra is the wait that makes a signature that took elapsed, of
// which innerInjected was modelled (not host work), cost scale times its
// real work.
func scaledExtra(elapsed, innerInjected time.Duration, scale float64) time.Duration {
	work := max(0, elapsed-innerInjected)
	return time.Duration(float64(work) * (scale - 1))
}

// TakeInjected returns and resets the wait added since the last call,
// plus any injected time inner reported.
func (c *CPUScaled) TakeInjected() time.Duration {
	return time.Duration(c.injected.Swap(0))
}

// Close releases a wait in progress at once, makes later Signs return
// without the added wait, and closes inner if it can be closed.
func (c *CPUScaled) Close() error {
	c.stopOnce.Do(func() { close(c.stop) })
	if cl, ok := c.inner.(Closer); ok {
		return cl.Close()
	}
	return nil
}
