package ledger

import (
	"github.com/valnet/valnet/internal/signbytes"

	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/jonboulle/clockwork"
)

// ModelName labels the emulator in reports: it is a MODEL of a Ledger Nano
// S Plus running a Tendermint validator app that accepts CometBFT v1
// protobuf sign bytes, not a device.
const ModelName = "model:ledger-nano-s-plus"

// EmulatorTiming is the model's cost of one APDU exchange (HostStall +
// Wire) and of the on-device signature, added to the exchange that
// carries the last chunk.
type EmulatorTiming struct {
	HostStall  time.Duration // host side per exchange (HID read/write scheduling)
	Wire       time.Duration // USB transfer per exchange
	DeviceSign time.Duration // on-device parse + Ed25519, once per signature
}

// NanoSPlus is a Ledger Nano S Plus as measured in seeds/000 with a USB
// capture: ~51 ms host stall and ~3 ms wire per exchange, ~525 ms on-device.
var NanoSPlus = EmulatorTiming{
	HostStall:  51 * time.Millisecond,
	Wire:       3 * time.Millisecond,
	DeviceSign: 525 * time.Millisecond,
}

// With is t with each non-zero argument in place of its figure (a
// scenario's ledger timing over the profile's).
func (t EmulatorTiming) With(hostStall, wire, deviceSign time.Duration) EmulatorTiming {
	if hostStall > 0 {
		t.HostStall = hostStall
	}
	if wire > 0 {
		t.Wire = wire
	}
	if deviceSign > 0 {
		t.DeviceSign = deviceSign
	}
	return t
}

// ModelledSignTime is the model's time for one signature of msgLen bytes
// sent in chunks of chunk bytes: one exchange per chunk plus the on-device
// signature. Invalid sizes give 0. The first signature after app start
// also waits EmulatorConfig.ConfirmDelay, which this does not include.
func ModelledSignTime(msgLen, chunk int, t EmulatorTiming) time.Duration {
	if msgLen <= 0 || chunk < 1 || chunk > MaxChunkSize {
		return 0
	}
	n := (msgLen + chunk - 1) / chunk
	return time.Duration(n)*(t.HostStall+t.Wire) + t.DeviceSign
}

// DefaultEmulatorVersion is what the model reports for GET_VERSION: a
// release-mode build. No public app build with this number is claimed.
var DefaultEmulatorVersion = Version{Mode: 0x00, Major: 1, Minor: 0, Patch: 0}

// EmulatorConfig configures the model.
type EmulatorConfig struct {
	// Key is the validator key the "device" holds; nil generates one.
	Key ed25519.PrivKey
	// Timing of the model; nil means NanoSPlus. &EmulatorTiming{} is instant.
	Timing *EmulatorTiming
	// ConfirmDelay stands for the manual confirmation the app asks for on
	// the first signature after it starts; 0 accepts at once.
	ConfirmDelay time.Duration
	// Version answered to GET_VERSION; nil means DefaultEmulatorVersion.
	Version *Version
	// Sleep replaces the wait on Clock (tests record the requested
	// durations). Nil waits on Clock, and Close cuts a wait short.
	Sleep func(time.Duration)
	// Clock is what the modelled times are waited on; nil: the real clock.
	Clock clockwork.Clock
}

// ErrClosed is returned by an Emulator after Close.
var ErrClosed = errors.New("ledger model: device closed")

// maxSignBuffer bounds the model's buffer at what framing can carry; the
// real app's smaller RAM buffer is not modelled.
const maxSignBuffer = MaxPackets * MaxChunkSize

// Emulator is a MODEL of the Tendermint validator app on a Ledger device
// (see ModelName). It implements Device with ledger-go's contract and the
// app's behaviour: GET_VERSION, PUBLIC_KEY_ED25519, SIGN_ED25519 with a
// buffer reset on P1=1 and a signature when P1 == P2, sign bytes parsed as
// CometBFT v1 canonical votes/proposals, and the vote state kept in RAM.
// Time is modelled by waiting (see EmulatorTiming).
type Emulator struct {
	key     ed25519.PrivKey
	timing  EmulatorTiming
	confirm time.Duration
	version Version
	sleep   func(time.Duration)
	clock   clockwork.Clock

	stop     chan struct{}
	stopOnce sync.Once
	closed   atomic.Bool
	modelled atomic.Int64 // ns since the last TakeModelled

	mu          sync.Mutex // the device handles one APDU at a time
	buf         []byte
	initialised bool
	state       signbytes.VoteState
}

// NewEmulator starts the model with the app freshly opened: no vote state,
// so the first signature goes through the confirmation.
func NewEmulator(cfg EmulatorConfig) *Emulator {
	e := &Emulator{
		key:     cfg.Key,
		timing:  NanoSPlus,
		confirm: cfg.ConfirmDelay,
		version: DefaultEmulatorVersion,
		sleep:   cfg.Sleep,
		clock:   cfg.Clock,
		stop:    make(chan struct{}),
	}
	if e.clock == nil {
		e.clock = clockwork.NewRealClock()
	}
	if e.key == nil {
		e.key = ed25519.GenPrivKey()
	}
	if cfg.Timing != nil {
		e.timing = *cfg.Timing
	}
	if cfg.Version != nil {
		e.version = *cfg.Version
	}
	return e
}

// Model says what this is: a model, not a device.
func (e *Emulator) Model() string { return ModelName }

// Timing is the model's timing profile.
func (e *Emulator) Timing() EmulatorTiming { return e.timing }

// TakeModelled returns the modelled time spent since the last call.
func (e *Emulator) TakeModelled() time.Duration {
	return time.Duration(e.modelled.Swap(0))
}

// State returns the vote state in the model's RAM; ok is false until the
// first signature after (re)start.
func (e *Emulator) State() (s signbytes.VoteState, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state, e.initialised
}

// RestartApp models closing and reopening the app: RAM is lost, so the
// next signature needs the confirmation again and any height is accepted.
func (e *Emulator) RestartApp() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.buf, e.initialised, e.state = nil, false, signbytes.VoteState{}
}

// Conn returns a connection to the model as one host process holds it:
// closing it leaves the modelled device and its vote state running, as a
// KMS restart leaves the app open on a real device. (A wait in progress is
// not cut short by closing a Conn; Emulator.Close does that.)
func (e *Emulator) Conn() Device { return conn{e} }

type conn struct{ *Emulator }

func (conn) Close() error { return nil }

// Close ends the model and cuts a wait in progress short.
func (e *Emulator) Close() error {
	e.stopOnce.Do(func() {
		e.closed.Store(true)
		close(e.stop)
	})
	return nil
}

// Exchange handles one command APDU. As with ledger-go, the answer comes
// back without its status word and a status other than 0x9000 is an error
// (*StatusError).
func (e *Emulator) Exchange(cmd []byte) ([]byte, error) {
	if e.closed.Load() {
		return nil, ErrClosed
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.wait(e.timing.HostStall + e.timing.Wire) {
		return nil, ErrClosed
	}
	raw, waits := e.handle(cmd)
	for _, d := range waits {
		if !e.wait(d) {
			return nil, ErrClosed
		}
	}
	data, sw, err := SplitStatus(raw)
	if err != nil {
		return nil, err
	}
	if err := StatusWordError(sw); err != nil {
		return data, err
	}
	return data, nil
}

// wait spends d of modelled time; false if the model was closed meanwhile.
func (e *Emulator) wait(d time.Duration) bool {
	if d <= 0 {
		return !e.closed.Load()
	}
	e.modelled.Add(int64(d))
	if e.sleep != nil {
		e.sleep(d)
		return !e.closed.Load()
	}
	t := e.clock.NewTimer(d)
	defer t.Stop() // a wait cut short leaves no waiter on a fake clock
	select {
	case <-t.Chan():
		return true
	case <-e.stop:
		return false
	}
}

func withSW(data []byte, sw uint16) []byte {
	return append(data, byte(sw>>8), byte(sw))
}

// handle is the app: it returns the raw answer (data + status word) and the
// on-device time to spend before answering. Called with mu held.
func (e *Emulator) handle(cmd []byte) (raw []byte, waits []time.Duration) {
	switch {
	case len(cmd) == 0:
		return withSW(nil, 0x6982), nil
	case cmd[0] != CLA: // checked before the length, as the app does
		return withSW(nil, SWClaNotSupported), nil
	case len(cmd) < 5 || int(cmd[4]) != len(cmd)-5:
		return withSW(nil, SWWrongLength), nil
	}
	ins, p1, p2, data := cmd[1], cmd[2], cmd[3], cmd[5:]
	switch ins {
	case InsGetVersion:
		v := e.version
		return withSW([]byte{v.Mode, v.Major, v.Minor, v.Patch}, SWOK), nil
	case InsPubKey:
		return withSW(append([]byte(nil), e.key.PubKey().Bytes()...), SWOK), nil
	case InsSign:
		return e.sign(p1, p2, data)
	}
	return withSW(nil, SWInsNotSupported), nil
}

func (e *Emulator) sign(p1, p2 byte, data []byte) ([]byte, []time.Duration) {
	if p1 == 1 {
		e.buf = e.buf[:0]
	}
	if len(e.buf)+len(data) > maxSignBuffer {
		return withSW(nil, SWBufferTooSmall), nil
	}
	e.buf = append(e.buf, data...)
	if p1 != p2 {
		return withSW(nil, SWOK), nil
	}
	vs, err := signbytes.Parse(e.buf)
	if err != nil {
		return withSW(nil, SWParse), nil
	}
	var waits []time.Duration
	if !e.initialised {
		// The app shows the vote and waits for the operator; accepting
		// sets the state to this vote.
		waits = append(waits, e.confirm)
		e.initialised = true
	} else if !vs.After(e.state) {
		return withSW(nil, SWDenied), nil
	}
	e.state = vs
	sig, err := e.key.Sign(e.buf)
	if err != nil {
		return withSW(nil, 0x6400), nil
	}
	return withSW(sig, SWOK), append(waits, e.timing.DeviceSign)
}
