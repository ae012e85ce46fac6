package signers

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/internal/nettest"
	"github.com/valnet/valnet/internal/phase"
)

// overlapSigner is a backend that takes hold long per signature and counts
// calls that overlap any other call on the same shared counter: two
// signers on one device must never sign at once.
type overlapSigner struct {
	KeySigner
	hold     time.Duration
	active   *atomic.Int32
	overlaps *atomic.Int32
	fail     error // returned instead of signing, when set
}

func (o *overlapSigner) Sign(kind string, msg []byte) ([]byte, error) {
	if o.active.Add(1) > 1 {
		o.overlaps.Add(1)
	}
	defer o.active.Add(-1)
	time.Sleep(o.hold) // the "device" working; not a wait for a condition
	if o.fail != nil {
		return nil, o.fail
	}
	return o.KeySigner.Sign(kind, msg)
}

func TestDeviceNeverSignsTwoAtOnce(t *testing.T) {
	dev := NewDevice("hsm")
	defer dev.Close()
	var active, overlaps atomic.Int32
	backend := func(secret string) KeySigner {
		key := PrivKeySigner{Key: ed25519.GenPrivKeyFromSecret([]byte(secret))}
		return dev.Join(&overlapSigner{KeySigner: key, hold: 2 * time.Millisecond, active: &active, overlaps: &overlaps})
	}
	a, b := backend("a"), backend("b")
	var wg sync.WaitGroup
	for _, s := range []KeySigner{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if _, err := s.Sign(phase.Prevote, []byte("msg")); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d signatures overlapped another on the same device", n)
	}
	if st := dev.Stats(); st.Signatures != 80 || st.Background != 0 {
		t.Errorf("stats %+v, want 80 signatures, 0 background", st)
	}

	// The control: without the device the same backends do overlap, so
	// the check above can fail.
	overlaps.Store(0)
	free := &overlapSigner{KeySigner: simKey(), hold: 2 * time.Millisecond, active: &active, overlaps: &overlaps}
	var wg2 sync.WaitGroup
	for range 4 {
		wg2.Add(1)
		go func() {
			defer wg2.Done()
			for range 5 {
				_, _ = free.Sign(phase.Prevote, []byte("msg"))
			}
		}()
	}
	wg2.Wait()
	if overlaps.Load() == 0 {
		t.Error("control: signers without a device never overlapped; the overlap check cannot fail")
	}
}

// Three requests at once on a 100 ms device wait about 0, 100 and 200 ms,
// and each reports its own wait, apart from the service time.
func TestDeviceQueueWaitsAddUp(t *testing.T) {
	dev := NewDevice("hsm")
	defer dev.Close()
	const service = 100 * time.Millisecond
	var members []*onDevice
	for i := range 3 {
		sim := newSim(t, PrivKeySigner{Key: ed25519.GenPrivKeyFromSecret([]byte{byte(i)})}, fixedProfile(service), 1, "v")
		members = append(members, dev.Join(sim).(*onDevice))
	}
	var wg sync.WaitGroup
	waits := make([]time.Duration, 3)
	injected := make([]time.Duration, 3)
	ready := make(chan struct{}) // all three ask at once
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ready
			if _, err := m.Sign(phase.Precommit, []byte("vote")); err != nil {
				t.Error(err)
			}
			waits[i], injected[i] = m.TakeQueued(), m.TakeInjected()
		}()
	}
	close(ready)
	wg.Wait()
	sorted := slices.Clone(waits)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	const slack = 40 * time.Millisecond
	for i, want := range []time.Duration{0, service, 2 * service} {
		if got := sorted[i]; got < want-slack/4 || got > want+slack {
			t.Errorf("wait %d = %v, want ~%v (all waits %v)", i, got, want, waits)
		}
	}
	for i, inj := range injected {
		// The service time is the modelled time; the wait is not part of it.
		if inj < service-time.Millisecond || inj > service+slack {
			t.Errorf("signer %d: injected %v, want the service time ~%v without its queue wait", i, inj, service)
		}
	}
	if got := members[0].TakeQueued(); got != 0 {
		t.Errorf("TakeQueued did not reset: %v", got)
	}
	st := dev.Stats()
	if st.Busy < 3*service || st.Busy > 3*service+3*slack {
		t.Errorf("busy %v, want ~%v", st.Busy, 3*service)
	}
	if u := st.Utilisation(); u <= 0 || u > 1 {
		t.Errorf("utilisation %g, want in (0, 1]", u)
	}
}

// The guard runs before the queue: a regression is refused without ever
// reaching the device, and the device's wait never changes what is kept.
func TestDeviceGuardStillRefusesARegression(t *testing.T) {
	dev := NewDevice("hsm")
	defer dev.Close()
	dir := t.TempDir()
	b, err := Build(Spec{Type: TypeSimulated, Key: testKey(), StateFile: filepath.Join(dir, "state.json"),
		Profile: ptr(fixedProfile(time.Millisecond)), Device: dev, Obs: &recordingObserver{}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !strings.Contains(b.Label, "+device(hsm)") {
		t.Errorf("label %q does not name the device", b.Label)
	}
	if err := b.Signer.SignVote("c", vote(types.PrecommitType, 5, 0, 1), false); err != nil {
		t.Fatal(err)
	}
	before := dev.Stats().Signatures
	err = b.Signer.SignVote("c", vote(types.PrecommitType, 4, 0, 1), false)
	if err == nil || !strings.Contains(err.Error(), "height regression") {
		t.Fatalf("regression: err = %v, want a height regression", err)
	}
	if got := dev.Stats().Signatures; got != before {
		t.Errorf("the refused regression reached the device (%d -> %d signatures)", before, got)
	}
}

func ptr[T any](v T) *T { return &v }

// Build reports queue waits in SignRecord for a signer on a device, and
// none for a signer without one.
func TestBuildReportsQueueWait(t *testing.T) {
	dev := NewDevice("hsm")
	defer dev.Close()
	obs := &recordingObserver{}
	build := func(name string, d *Device) *Built {
		b, err := Build(Spec{Type: TypeSimulated, Key: ed25519.GenPrivKeyFromSecret([]byte(name)),
			StateFile: filepath.Join(t.TempDir(), "state.json"), Profile: ptr(fixedProfile(50 * time.Millisecond)),
			Device: d, Obs: obs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	a, b, alone := build("a", dev), build("b", dev), build("c", nil)
	var wg sync.WaitGroup
	for _, s := range []*Built{a, b, alone} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Signer.SignVote("c", vote(types.PrevoteType, 1, 0, 1), false); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	var onDevice, queued int
	for _, r := range obs.recs {
		if r.OnDevice {
			onDevice++
			if r.Queued > 30*time.Millisecond {
				queued++
			}
		} else if r.Queued != 0 {
			t.Errorf("signer without a device reported a queue wait %v", r.Queued)
		}
	}
	if onDevice != 2 || queued != 1 {
		t.Errorf("records %+v: want 2 on the device, one of them queued behind the other", obs.recs)
	}
}

func TestDeviceCloseRefusesQueuedSignatures(t *testing.T) {
	dev := NewDevice("hsm")
	release := make(chan struct{})
	holder := dev.Join(&blockingSigner{KeySigner: simKey(), entered: make(chan struct{}), closed: release})
	queued := dev.Join(simKey())
	go func() { _, _ = holder.Sign(phase.Prevote, []byte("m")) }()
	nettest.WaitFor(t, 5*time.Second, "the first signature to hold the device", func() bool {
		dev.mu.Lock()
		defer dev.mu.Unlock()
		return dev.busy
	})
	done := make(chan error, 1)
	go func() { _, err := queued.Sign(phase.Prevote, []byte("m")); done <- err }()
	nettest.WaitFor(t, 5*time.Second, "the second signature to queue", func() bool {
		dev.mu.Lock()
		defer dev.mu.Unlock()
		return len(dev.waiters) == 1
	})
	dev.Close()
	select {
	case err := <-done:
		if !errors.Is(err, errDeviceClosed) {
			t.Errorf("queued signature after Close: err = %v, want %v", err, errDeviceClosed)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a queued signature was not released by Close")
	}
	close(release)
}

func TestBackgroundBlockSchedule(t *testing.T) {
	spec := BackgroundSpec{Chains: 1, BlockTime: time.Second, ProposerShare: 0.25, Spacing: 100 * time.Millisecond}
	c := bgChain{spec: spec, offset: 300 * time.Millisecond, turn: 0.8}
	ms := time.Millisecond
	// Proposer turns: exactly a quarter of the blocks, evenly spread.
	var turns []int64
	for k := range int64(12) {
		if c.proposes(k) {
			turns = append(turns, k)
		}
	}
	if want := []int64{0, 4, 8}; !slices.Equal(turns, want) {
		t.Errorf("proposer turns %v, want %v", turns, want)
	}
	for _, tc := range []struct {
		name   string
		k      int64
		jitter time.Duration
		want   []bgRequest
	}{
		{"proposer block", 0, 0, []bgRequest{{300 * ms, phase.Proposal}, {400 * ms, phase.Prevote}, {500 * ms, phase.Precommit}}},
		{"other block: the prevote still waits for the proposal", 1, 0, []bgRequest{{1400 * ms, phase.Prevote}, {1500 * ms, phase.Precommit}}},
		{"jitter shifts the block", 2, 50 * ms, []bgRequest{{2450 * ms, phase.Prevote}, {2550 * ms, phase.Precommit}}},
		{"next turn", 4, 0, []bgRequest{{4300 * ms, phase.Proposal}, {4400 * ms, phase.Prevote}, {4500 * ms, phase.Precommit}}},
	} {
		if got := c.block(tc.k, tc.jitter); !slices.Equal(got, tc.want) {
			t.Errorf("%s: block(%d, %v) = %v, want %v", tc.name, tc.k, tc.jitter, got, tc.want)
		}
	}
	for _, share := range []float64{0, 1} {
		c := bgChain{spec: BackgroundSpec{ProposerShare: share, BlockTime: time.Second}, turn: 0.5}
		n := 0
		for k := range int64(10) {
			if c.proposes(k) {
				n++
			}
		}
		if want := int(share * 10); n != want {
			t.Errorf("share %g: %d turns in 10 blocks, want %d", share, n, want)
		}
	}
}

func TestBackgroundSpecValidate(t *testing.T) {
	ok := BackgroundSpec{Chains: 9, BlockTime: 6 * time.Second, ProposerShare: 0.25, Spacing: 100 * time.Millisecond, Jitter: 50 * time.Millisecond}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid spec refused: %v", err)
	}
	for name, mut := range map[string]func(*BackgroundSpec){
		"negative chains": func(b *BackgroundSpec) { b.Chains = -1 },
		"no block time":   func(b *BackgroundSpec) { b.BlockTime = 0 },
		"share above 1":   func(b *BackgroundSpec) { b.ProposerShare = 1.5 },
		"overlapping":     func(b *BackgroundSpec) { b.Spacing = 3 * time.Second },
	} {
		b := ok
		mut(&b)
		if err := b.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The background load arrives at about chains × (2 + share) signatures per
// block time, goes through the device's queue, and stops with Close
// without leaking a goroutine.
func TestBackgroundRateAndNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	dev := NewDevice("hsm")
	spec := BackgroundSpec{Chains: 4, BlockTime: 100 * time.Millisecond, ProposerShare: 0.5, Spacing: 10 * time.Millisecond, Jitter: 5 * time.Millisecond}
	if err := dev.SetBackground(spec, fixedProfile(time.Millisecond), 7); err != nil {
		t.Fatal(err)
	}
	dev.Start(context.Background())
	nettest.WaitFor(t, 10*time.Second, "a second of background load", func() bool { return dev.Stats().Wall >= time.Second })
	dev.Close()
	st := dev.Stats()
	perBlock := float64(spec.Chains) * (2 + spec.ProposerShare)
	want := perBlock * float64(st.Wall) / float64(spec.BlockTime)
	if got := float64(st.Background); got < 0.7*want || got > 1.1*want+perBlock {
		t.Errorf("%d background signatures in %v, want ~%.0f", st.Background, st.Wall, want)
	}
	if st.Signatures != 0 {
		t.Errorf("%d signatures counted as this chain's; all were background", st.Signatures)
	}
	if u := st.Utilisation(); u <= 0 || u > 0.5 {
		t.Errorf("utilisation %g, want small but > 0 at 1 ms per signature", u)
	}
	nettest.WaitFor(t, 5*time.Second, "the background goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

// The same seed gives the same background timing.
func TestBackgroundIsSeeded(t *testing.T) {
	offsets := func(seed int64) []time.Duration {
		dev := NewDevice("hsm")
		defer dev.Close()
		if err := dev.SetBackground(BackgroundSpec{Chains: 3, BlockTime: time.Second, ProposerShare: 0.25}, fixedProfile(time.Millisecond), seed); err != nil {
			t.Fatal(err)
		}
		var out []time.Duration
		for _, c := range dev.bg.chains {
			out = append(out, c.offset)
		}
		return out
	}
	a, b, c := offsets(1), offsets(1), offsets(2)
	if !slices.Equal(a, b) {
		t.Errorf("same seed, offsets %v and %v", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 1 and 2 gave the same offsets %v", a)
	}
	if a[0] == a[1] {
		t.Errorf("two chains share an offset: %v", a)
	}
}

// BenchmarkDeviceSign is the queue's own cost on an idle device (a local
// key behind it): what joining a device adds to every signature.
func BenchmarkDeviceSign(b *testing.B) {
	for _, tc := range []struct {
		name string
		ks   KeySigner
	}{{"direct", simKey()}, {"on-device", NewDevice("bench").Join(simKey())}} {
		b.Run(tc.name, func(b *testing.B) {
			msg := []byte("a vote's sign bytes, more or less")
			for b.Loop() {
				if _, err := tc.ks.Sign(phase.Prevote, msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDeviceBusyStopsAtClose: a signature still being served when the
// device closes counts busy time only up to the close, where Stats' wall
// time stops, so utilisation cannot pass 1.
func TestDeviceBusyStopsAtClose(t *testing.T) {
	dev := NewDevice("hsm")
	signing, closed := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = dev.serve(func() error {
			close(signing)
			<-closed
			time.Sleep(50 * time.Millisecond) // the device works on past the close
			return nil
		}, false)
	}()
	<-signing
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	close(closed)
	<-done
	st := dev.Stats()
	if st.Busy > st.Wall {
		t.Errorf("busy %v after the close, wall %v: busy time ran past the close", st.Busy, st.Wall)
	}
}
