package signers

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
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

// gateSigner is a backend that holds each signature until the test lets
// it go (one receive on gate each), counting the signatures inside it at
// once: two signers on one device must never be inside together.
type gateSigner struct {
	KeySigner
	gate   chan struct{}
	inside *atomic.Int32
	peak   *atomic.Int32 // most signatures inside at once
}

func (g *gateSigner) Sign(kind string, msg []byte) ([]byte, error) {
	n := g.inside.Add(1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
	defer g.inside.Add(-1)
	<-g.gate
	return g.KeySigner.Sign(kind, msg)
}

// queueLen is how many signatures wait for the device.
func queueLen(d *Device) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.waiters)
}

// Four goroutines on two signers of one device, each signature held in
// the backend until let go: at every step one is inside and the others
// queue behind it, never beside it.
func TestDeviceNeverSignsTwoAtOnce(t *testing.T) {
	dev := NewDevice("hsm")
	defer dev.Close()
	gate := make(chan struct{})
	var inside, peak atomic.Int32
	backend := func(secret string) KeySigner {
		key := PrivKeySigner{Key: ed25519.GenPrivKeyFromSecret([]byte(secret))}
		return dev.Join(&gateSigner{KeySigner: key, gate: gate, inside: &inside, peak: &peak})
	}
	a, b := backend("a"), backend("b")
	const goroutines, rounds = 4, 3
	var wg sync.WaitGroup
	for _, s := range []KeySigner{a, b, a, b} {
		wg.Go(func() {
			for range rounds {
				if _, err := s.Sign(phase.Prevote, []byte("msg")); err != nil {
					t.Error(err)
				}
			}
		})
	}
	for i := range goroutines * rounds {
		// FIFO: the signer just let go queues again behind the others,
		// so all who still have work to do are queued.
		queued := min(goroutines-1, goroutines*rounds-1-i)
		eventually(t, fmt.Sprintf("signature %d on the device, %d queued", i+1, queued), func() bool {
			return peak.Load() > 1 || (inside.Load() == 1 && queueLen(dev) == queued)
		})
		if p := peak.Load(); p > 1 {
			t.Fatalf("%d signatures inside the backend at once on one device", p)
		}
		gate <- struct{}{}
	}
	wg.Wait()
	if st := dev.Stats(); st.Signatures != goroutines*rounds || st.Background != 0 {
		t.Errorf("stats %+v, want %d signatures, 0 background", st, goroutines*rounds)
	}

	// The control: without the device the same backends are entered all
	// at once, so the check above can fail.
	peak.Store(0)
	free := &gateSigner{KeySigner: simKey(), gate: gate, inside: &inside, peak: &peak}
	var wg2 sync.WaitGroup
	for range goroutines {
		wg2.Go(func() { _, _ = free.Sign(phase.Prevote, []byte("msg")) })
	}
	eventually(t, "all four inside the free backend", func() bool { return inside.Load() == goroutines })
	close(gate)
	wg2.Wait()
}

// Three requests at once on a 100 ms device (on a fake clock) wait
// exactly 0, 100 and 200 ms, and each reports its own wait, apart from
// the service time.
func TestDeviceQueueWaitsAddUp(t *testing.T) {
	clk := newFakeClock()
	dev := NewDeviceWithClock("hsm", clk)
	defer dev.Close()
	const service = 100 * time.Millisecond
	var members []*onDevice
	for i := range 3 {
		sim := newSim(t, PrivKeySigner{Key: ed25519.GenPrivKeyFromSecret([]byte{byte(i)})}, fixedProfile(service), 1, "v")
		sim.clock = clk
		members = append(members, dev.Join(sim).(*onDevice))
	}
	var wg sync.WaitGroup
	waits := make([]time.Duration, 3)
	injected := make([]time.Duration, 3)
	for i, m := range members {
		wg.Go(func() {
			if _, err := m.Sign(phase.Precommit, []byte("vote")); err != nil {
				t.Error(err)
			}
			waits[i], injected[i] = m.TakeQueued(), m.TakeInjected()
		})
	}
	// All three asked at the same instant: one serves, two queue.
	eventually(t, "two signatures queued", func() bool { return queueLen(dev) == 2 })
	for range members {
		advanceThrough(t, clk, service) // each serves exactly its 100 ms, one after the other
	}
	wg.Wait()
	sorted := slices.Clone(waits)
	slices.Sort(sorted)
	if want := []time.Duration{0, service, 2 * service}; !slices.Equal(sorted, want) {
		t.Errorf("waits %v, want %v", waits, want)
	}
	for i, inj := range injected {
		// The service time is the modelled time; the wait is not part of it.
		if inj != service {
			t.Errorf("signer %d: injected %v, want the service time %v without its queue wait", i, inj, service)
		}
	}
	if got := members[0].TakeQueued(); got != 0 {
		t.Errorf("TakeQueued did not reset: %v", got)
	}
	st := dev.Stats()
	if st.Busy != 3*service || st.Wall != 3*service || st.Utilisation() != 1 {
		t.Errorf("busy %v of wall %v (utilisation %g), want %v of %v: the device never idled", st.Busy, st.Wall, st.Utilisation(), 3*service, 3*service)
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
// none for a signer without one. On one fake clock: two concurrent 50 ms
// signatures on the device, one waits exactly 50 ms in the queue; a third
// signer off the device signs beside them and waits for nothing.
func TestBuildReportsQueueWait(t *testing.T) {
	const service = 50 * time.Millisecond
	clk := newFakeClock()
	dev := NewDeviceWithClock("hsm", clk)
	defer dev.Close()
	obs := &recordingObserver{}
	build := func(name string, d *Device) *Built {
		b, err := Build(Spec{Type: TypeSimulated, Key: ed25519.GenPrivKeyFromSecret([]byte(name)),
			StateFile: filepath.Join(t.TempDir(), "state.json"), Profile: ptr(fixedProfile(service)),
			Device: d, Obs: obs, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	a, b, alone := build("a", dev), build("b", dev), build("c", nil)
	var wg sync.WaitGroup
	for _, s := range []*Built{a, b, alone} {
		wg.Go(func() {
			if err := s.Signer.SignVote("c", vote(types.PrevoteType, 1, 0, 1), false); err != nil {
				t.Error(err)
			}
		})
	}
	// One of a and b serves on the device and c signs alone, both on the
	// clock; the other of a and b queues behind the device.
	eventually(t, "a signature queued on the device", func() bool { return queueLen(dev) == 1 })
	awaitWaiters(t, clk, 2)
	clk.Advance(service)
	// Both report before the clock moves on, so their latency is theirs.
	eventually(t, "two signatures reported", func() bool {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		return len(obs.recs) == 2
	})
	advanceThrough(t, clk, service) // the queued one's own service, after its wait
	wg.Wait()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	var queued []time.Duration
	for _, r := range obs.recs {
		if r.Injected != service {
			t.Errorf("record %+v: injected %v, want the service time %v", r, r.Injected, service)
		}
		if !r.OnDevice {
			if r.Queued != 0 || r.Latency != service {
				t.Errorf("signer without a device: queued %v, latency %v; want 0 and %v", r.Queued, r.Latency, service)
			}
			continue
		}
		queued = append(queued, r.Queued)
		if r.Latency != r.Queued+service {
			t.Errorf("on the device: latency %v, want its wait %v plus the service %v", r.Latency, r.Queued, service)
		}
	}
	slices.Sort(queued)
	if want := []time.Duration{0, service}; len(obs.recs) != 3 || !slices.Equal(queued, want) {
		t.Errorf("queue waits %v of %d records, want %v: one of the two on the device waits for the other", queued, len(obs.recs), want)
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
// without leaking a goroutine. On a fake clock stepped 1 ms at a time, the
// signatures served in 1 s are bounded by the schedule itself: every
// request that arrived by then at most, every one that arrived 5 ms
// before (4 chains × 1 ms of queue and service, plus the step) at least.
func TestBackgroundRateAndNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	clk := newFakeClock()
	dev := NewDeviceWithClock("hsm", clk)
	const service, horizon, seed = time.Millisecond, time.Second, 7
	spec := BackgroundSpec{Chains: 4, BlockTime: 100 * time.Millisecond, ProposerShare: 0.5, Spacing: 10 * time.Millisecond, Jitter: 5 * time.Millisecond}
	if err := dev.SetBackground(spec, fixedProfile(service), seed); err != nil {
		t.Fatal(err)
	}
	dev.Start(context.Background())
	// Every chain waits on the clock (for its next arrival or in service)
	// or in the device's queue. Under the device's lock the queue cannot
	// change, and without an Advance no timer fires, so this is a stable
	// state, not a passing one.
	parked := func() bool {
		dev.mu.Lock()
		defer dev.mu.Unlock()
		return waiting(clk, spec.Chains-len(dev.waiters))
	}
	for elapsed := time.Duration(0); elapsed < horizon; elapsed += time.Millisecond {
		eventually(t, "the background chains to park", parked)
		clk.Advance(time.Millisecond)
	}
	eventually(t, "the background chains to park", parked)
	dev.Close()
	st := dev.Stats()

	var arrived, surely int64
	for _, c := range NewBackgroundChains("hsm", spec, seed) { // the draws SetBackground made
		for k := int64(0); ; k++ {
			reqs := c.Block(k)
			for _, r := range reqs {
				if r.At <= horizon {
					arrived++
				}
				if r.At <= horizon-5*time.Millisecond {
					surely++
				}
			}
			if reqs[0].At > horizon {
				break
			}
		}
	}
	if st.Background < surely || st.Background > arrived {
		t.Errorf("%d background signatures in %v, want %d..%d (the schedule's arrivals)", st.Background, horizon, surely, arrived)
	}
	perBlock := float64(spec.Chains) * (2 + spec.ProposerShare)
	want := perBlock * float64(horizon) / float64(spec.BlockTime)
	if got := float64(st.Background); got < 0.7*want || got > 1.1*want+perBlock {
		t.Errorf("%d background signatures in %v, want ~%.0f", st.Background, horizon, want)
	}
	if st.Signatures != 0 {
		t.Errorf("%d signatures counted as this chain's; all were background", st.Signatures)
	}
	// Each served 1 ms; one may have been cut short by the close.
	if st.Wall != horizon || st.Busy > time.Duration(st.Background)*service || st.Busy < time.Duration(st.Background-1)*service {
		t.Errorf("busy %v of wall %v for %d signatures of %v", st.Busy, st.Wall, st.Background, service)
	}
	if u := st.Utilisation(); u <= 0 || u > 0.5 {
		t.Errorf("utilisation %g, want small but > 0 at 1 ms per signature", u)
	}
	eventually(t, "the background goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
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
	clk := newFakeClock()
	dev := NewDeviceWithClock("hsm", clk)
	signing, closed := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = dev.serve(func() error {
			close(signing)
			<-closed
			clk.Advance(50 * time.Millisecond) // the device works on past the close
			return nil
		}, false)
	}()
	<-signing
	clk.Advance(20 * time.Millisecond)
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	close(closed)
	<-done
	if st := dev.Stats(); st.Busy != 20*time.Millisecond || st.Wall != 20*time.Millisecond {
		t.Errorf("busy %v, wall %v; want both 20ms: busy time counts up to the close only", st.Busy, st.Wall)
	}
}
