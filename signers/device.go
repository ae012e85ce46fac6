package signers

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cometbft/cometbft/crypto"
	"github.com/jonboulle/clockwork"
)

// Device is one signing device shared by several signers (validators of
// this chain, and with Background the other chains it serves): ONE queue,
// first come first served, one signature at a time, as a YubiHSM 2 or a
// PKCS#11 session signs one request after the other.
//
// A signer joins with Join: its backend is wrapped so that each Sign
// takes a ticket, waits its turn, signs, and releases the device. The
// wrapper sits under the double-sign guard, so the guard decides (and
// persists) before the signature queues, and a queued wait never changes
// what is persisted. The wait is reported apart from the service time
// (QueueReporter); the service time is whatever the backend takes: the
// profile's time for a simulated signer, real time for a PKCS#11 token or
// a Ledger.
type Device struct {
	name  string
	clock clockwork.Clock // queue waits, busy and wall time, background load

	mu       sync.Mutex
	busy     bool            // a signature holds the device
	waiters  []chan struct{} // FIFO; closed when its turn comes
	closed   bool
	started  time.Time // Start; zero: not started, Stats counts from created
	closedAt time.Time

	created time.Time
	stop    chan struct{} // closed by Close: queued signatures are refused
	once    sync.Once

	busyNS     atomic.Int64 // time the device spent serving, ns
	signatures atomic.Int64 // this chain's signatures served
	background atomic.Int64 // background chains' signatures served

	bg *background // nil without background load
}

// DeviceStats is a device's account since it was created.
type DeviceStats struct {
	Signatures int64         // signatures of this chain's signers
	Background int64         // signatures of the background chains (MODEL load)
	Busy       time.Duration // time spent serving, both kinds
	Wall       time.Duration // time since Start (or creation) until now or Close
}

// Utilisation is Busy over Wall (0 when no time has passed).
func (s DeviceStats) Utilisation() float64 {
	if s.Wall <= 0 {
		return 0
	}
	return float64(s.Busy) / float64(s.Wall)
}

// NewDevice makes an idle device on the real clock.
func NewDevice(name string) *Device { return NewDeviceWithClock(name, nil) }

// NewDeviceWithClock makes an idle device whose queue waits, busy time,
// wall time and background load are on clock (nil: the real clock). The
// signers that join it should be built on the same clock (Spec.Clock), so
// that a signature's queue wait and its latency are of one time.
func NewDeviceWithClock(name string, clock clockwork.Clock) *Device {
	clock = clockOr(clock)
	return &Device{name: name, clock: clock, created: clock.Now(), stop: make(chan struct{})}
}

// Name is the device's name in the scenario.
func (d *Device) Name() string { return d.name }

// errDeviceClosed refuses a signature queued on a device being closed.
var errDeviceClosed = errors.New("signing device is closed")

// acquire waits until the device is free and this caller's turn has come
// (FIFO), or the device is closed.
func (d *Device) acquire() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return errDeviceClosed
	}
	if !d.busy {
		d.busy = true
		d.mu.Unlock()
		return nil
	}
	turn := make(chan struct{})
	d.waiters = append(d.waiters, turn)
	d.mu.Unlock()
	select {
	case <-turn:
		return nil
	case <-d.stop:
	}
	// Closed while queued: leave the queue, or if the turn was handed over
	// in the meantime, hand it on.
	d.mu.Lock()
	for i, w := range d.waiters {
		if w == turn {
			d.waiters = append(d.waiters[:i], d.waiters[i+1:]...)
			d.mu.Unlock()
			return errDeviceClosed
		}
	}
	d.mu.Unlock()
	d.release()
	return errDeviceClosed
}

// release hands the device to the next in line, or leaves it idle.
func (d *Device) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.waiters) == 0 {
		d.busy = false
		return
	}
	next := d.waiters[0]
	d.waiters = d.waiters[1:]
	close(next) // busy stays true: the device passes straight on
}

// serve runs one signature on the device and returns the time it spent
// queued; the time sign takes is the device's busy time.
func (d *Device) serve(sign func() error, background bool) (queued time.Duration, err error) {
	t0 := d.clock.Now()
	if err := d.acquire(); err != nil {
		return d.clock.Since(t0), err
	}
	start := d.clock.Now()
	queued = start.Sub(t0)
	err = sign()
	if end := d.busyUntil(d.clock.Now()); end.After(start) {
		d.busyNS.Add(int64(end.Sub(start)))
	}
	if background {
		d.background.Add(1)
	} else {
		d.signatures.Add(1)
	}
	d.release()
	return queued, err
}

// busyUntil caps the end of a signature's busy time at the close: Stats'
// wall time stops there, and busy time past it would push the utilisation
// over what the device did in that wall time.
func (d *Device) busyUntil(end time.Time) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed && d.closedAt.Before(end) {
		return d.closedAt
	}
	return end
}

// Stats is the device's account so far.
func (d *Device) Stats() DeviceStats {
	d.mu.Lock()
	begin, end := d.started, d.closedAt
	d.mu.Unlock()
	if begin.IsZero() {
		begin = d.created
	}
	if end.IsZero() {
		end = d.clock.Now()
	}
	wall := end.Sub(begin)
	return DeviceStats{
		Signatures: d.signatures.Load(),
		Background: d.background.Load(),
		Busy:       time.Duration(d.busyNS.Load()),
		Wall:       wall,
	}
}

// Join wraps a signer's backend so that it signs on this device.
func (d *Device) Join(inner KeySigner) KeySigner {
	return &onDevice{dev: d, inner: inner}
}

// Close stops the background load, refuses every queued and later
// signature and fixes the wall time of Stats. It does not close the
// signers' backends (each signer closes its own).
func (d *Device) Close() error {
	d.once.Do(func() {
		d.mu.Lock()
		d.closed = true
		d.closedAt = d.clock.Now()
		d.mu.Unlock()
		close(d.stop) // first, so no background chain stays queued
		if d.bg != nil {
			d.bg.stop()
		}
	})
	return nil
}

// QueueReporter is an optional ability of a decorator chain: how long the
// signature that just finished waited in a shared device's queue, apart
// from the time the device then took to sign.
type QueueReporter interface {
	TakeQueued() time.Duration
}

// takeQueued asks inner for its queue wait, if it knows one.
func takeQueued(inner any) time.Duration {
	if r, ok := inner.(QueueReporter); ok {
		return r.TakeQueued()
	}
	return 0
}

// onDevice is one signer's backend on a shared Device.
type onDevice struct {
	dev    *Device
	inner  KeySigner
	queued atomic.Int64 // ns waited since the last TakeQueued
}

var (
	_ KeySigner        = (*onDevice)(nil)
	_ InjectedReporter = (*onDevice)(nil)
	_ QueueReporter    = (*onDevice)(nil)
	_ Closer           = (*onDevice)(nil)
)

func (o *onDevice) PubKey() crypto.PubKey { return o.inner.PubKey() }

func (o *onDevice) Sign(kind string, msg []byte) ([]byte, error) {
	var sig []byte
	queued, err := o.dev.serve(func() (err error) {
		sig, err = o.inner.Sign(kind, msg)
		return err
	}, false)
	o.queued.Add(int64(queued))
	return sig, err
}

// TakeInjected passes on the backend's modelled time (a simulated
// device's service time); the queue wait is not modelled time, it is
// really waited, and is reported by TakeQueued.
func (o *onDevice) TakeInjected() time.Duration {
	if r, ok := o.inner.(InjectedReporter); ok {
		return r.TakeInjected()
	}
	return 0
}

func (o *onDevice) TakeQueued() time.Duration { return time.Duration(o.queued.Swap(0)) }

// Close closes this signer's backend only; the device is closed by whoever
// made it.
func (o *onDevice) Close() error {
	if c, ok := o.inner.(Closer); ok {
		return c.Close()
	}
	return nil
}
