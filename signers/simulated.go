package signers

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cometbft/cometbft/crypto"
	"github.com/jonboulle/clockwork"

	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/signers/profiles"
)

// Simulated signs with inner (a real key) but takes the time the modelled
// device takes. The signature is real and verifies; only its timing is a
// model, and Label says so.
//
// Each Sign plans a device time (a draw from the profile's distribution,
// or the profile's table at len(msg) with its jitter), signs with inner,
// then waits the remainder, so the whole call takes about the device time.
// If inner alone takes longer, no wait is added: a model never makes a
// signature faster than the real one.
//
// Signs are serialised: a device does one signature at a time, so a
// second request queues behind the first as it would on the device.
type Simulated struct {
	inner   KeySigner
	profile profiles.Profile
	timing  *DeviceTiming
	clock   clockwork.Clock // the device time is spent and measured on it

	mu       sync.Mutex   // one signature at a time, as on the device
	injected atomic.Int64 // ns of modelled time since the last TakeInjected
	stop     chan struct{}
	stopOnce sync.Once
}

var (
	_ KeySigner        = (*Simulated)(nil)
	_ InjectedReporter = (*Simulated)(nil)
	_ Closer           = (*Simulated)(nil)
)

// NewSimulated wraps inner in the timing of profile p. Draws (distribution
// or jitter) come from a generator seeded by (seed, stream), so a run with
// the same seed repeats its device times; the stream is kept apart from
// the one a latency model of the same validator would use, so the two are
// not correlated. The device time is spent on the real clock (Build uses
// Spec.Clock).
func NewSimulated(inner KeySigner, p profiles.Profile, seed int64, stream string) (*Simulated, error) {
	if inner == nil {
		return nil, errors.New("simulated signer needs a key to sign with")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	timing, err := NewDeviceTiming(p, seed, stream)
	if err != nil {
		return nil, err
	}
	return &Simulated{inner: inner, profile: p, timing: timing, clock: realClock, stop: make(chan struct{})}, nil
}

// DeviceTiming draws a device profile's time for one signature: from its
// distribution, or from its table at the payload size with its jitter.
// Simulated waits it out in real time; the simulator spends it on its
// virtual clock. Draws come from the stream (seed, stream +
// "/simulated:" + profile name), so both draw the same times.
type DeviceTiming struct {
	profile profiles.Profile
	model   latency.Model // Dist profiles
	rng     *latency.Rand // ByPayload jitter
}

// NewDeviceTiming validates p and returns its timing for validator stream.
func NewDeviceTiming(p profiles.Profile, seed int64, stream string) (*DeviceTiming, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	t := &DeviceTiming{profile: p}
	stream = stream + "/simulated:" + p.Name
	if p.Latency != nil {
		m, err := latency.New(*p.Latency, seed, stream)
		if err != nil {
			return nil, err
		}
		t.model = m
	} else {
		t.rng = latency.NewRand(seed, stream)
	}
	return t, nil
}

// Draw is the device time of one signature of n bytes.
func (t *DeviceTiming) Draw(n int) time.Duration {
	if t.model != nil {
		return t.model.Draw()
	}
	d := t.profile.At(n)
	if j := t.profile.Jitter; j > 0 {
		// uniform in [1-j, 1+j): a table gives averages, not every run.
		d = time.Duration(float64(d) * (1 + j*(2*t.rng.Float64()-1)))
	}
	return d
}

func (s *Simulated) PubKey() crypto.PubKey { return s.inner.PubKey() }

// Label says the timing is a model, e.g. "simulated(model:yubihsm2)".
func (s *Simulated) Label() string { return "simulated(" + s.profile.Label() + ")" }

// Profile returns the device model, for reports.
func (s *Simulated) Profile() profiles.Profile { return s.profile }

// plan returns the device time of one signature of n bytes. kind is not
// used by any built-in profile (the published per-phase differences are
// within their spread) but is kept so a model could price phases apart.
func (s *Simulated) plan(_ string, n int) time.Duration { return s.timing.Draw(n) }

// Sign signs msg with inner and returns after about the device time. A
// failed real signature is returned at once: the model has no figures for
// how long a device takes to fail. After Close no time is added.
func (s *Simulated) Sign(kind string, msg []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	device := s.plan(kind, len(msg))
	start := s.clock.Now()
	sig, err := s.inner.Sign(kind, msg)
	var innerInjected time.Duration
	if r, ok := s.inner.(InjectedReporter); ok {
		innerInjected = r.TakeInjected() // drained here so it is not counted twice
	}
	if err != nil {
		s.injected.Add(int64(innerInjected))
		return nil, err
	}
	if rest := deviceRest(device, s.clock.Since(start)); rest > 0 {
		sleepOn(s.clock, rest, s.stop) // Close ends it: the real signature is returned
	}
	s.injected.Add(int64(deviceModelled(device, s.clock.Since(start), innerInjected)))
	return sig, nil
}

// deviceRest is what is left to wait of a device time once the real
// signature inside it took spent: never negative, so a model never makes
// a signature faster than the real one.
func deviceRest(device, spent time.Duration) time.Duration {
	return max(0, device-spent)
}

// deviceModelled is the modelled (injected) part of a signature that took
// spent in all, on a device time of device, around an inner signer that
// reported innerInjected. The whole device time counts: the real
// signature inside it stands in for the device's own work, and its cost
// is hidden by the wait, so Latency minus Injected is the host work
// outside the device (double-sign guard, state fsync). If inner took
// longer than the device, only the device time (or inner's own injected
// time, if larger) counts; a wait cut short by Close counts what was
// spent.
func deviceModelled(device, spent, innerInjected time.Duration) time.Duration {
	return max(min(spent, device), innerInjected)
}

// TakeInjected returns and resets the modelled time of the signatures
// since the last call. For a simulated signer that is the whole device
// time of each signature, not only the wait added after the real one: the
// device time is the model.
func (s *Simulated) TakeInjected() time.Duration {
	return time.Duration(s.injected.Swap(0))
}

// Close releases any Sign waiting in its modelled time at once (it then
// returns its real signature), makes later Signs return without waiting,
// and closes inner if it can be closed.
func (s *Simulated) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	if c, ok := s.inner.(Closer); ok {
		return c.Close()
	}
	return nil
}
