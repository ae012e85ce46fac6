package signers

import (
	"context"
	"testing"
	"time"

	"github.com/cometbft/cometbft/crypto"
	"github.com/jonboulle/clockwork"

	"github.com/valnet/valnet/internal/phase"
)

// Helpers for tests on a fake clock: a modelled wait is checked exactly
// (still waiting 1 ns before its end, over at its end) and nothing sleeps.

// testEpoch is where every fake clock starts, so runs repeat exactly.
var testEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newFakeClock() *clockwork.FakeClock { return clockwork.NewFakeClockAt(testEpoch) }

// waiting reports whether clk has at least n waiters (timers not yet
// fired or stopped) now, without waiting.
func waiting(clk *clockwork.FakeClock, n int) bool {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // BlockUntilContext answers at once when n are there, else ctx.Err()
	return clk.BlockUntilContext(ctx, n) == nil
}

// awaitWaiters waits (in real time, with a generous deadline) until clk
// has n waiters: the calls under test are parked on it.
func awaitWaiters(t testing.TB, clk *clockwork.FakeClock, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clk.BlockUntilContext(ctx, n); err != nil {
		t.Fatalf("%d waiter(s) never parked on the fake clock: %v", n, err)
	}
}

// advanceThrough checks that the one wait parked on clk lasts exactly d:
// it is still pending at d-1ns and fired at d (the clock then stands d
// later).
func advanceThrough(t testing.TB, clk *clockwork.FakeClock, d time.Duration) {
	t.Helper()
	awaitWaiters(t, clk, 1)
	clk.Advance(d - 1)
	if !waiting(clk, 1) {
		t.Fatalf("the wait ended before %v", d)
	}
	clk.Advance(1)
}

type signResult struct {
	sig []byte
	err error
}

// goSign runs s.Sign(prevote, msg) in a goroutine.
func goSign(s KeySigner, msg []byte) <-chan signResult {
	done := make(chan signResult, 1)
	go func() {
		sig, err := s.Sign(phase.Prevote, msg)
		done <- signResult{sig, err}
	}()
	return done
}

// await takes the result of a call that must return by now (deadline
// only in case it does not).
func await[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not return")
		panic("unreachable")
	}
}

// awaitNoWait takes the result of a call that must return without any
// further wait on clk: a new waiter before the result is a failure. Use
// it only where nothing else waits on clk.
func awaitNoWait[T any](t testing.TB, clk *clockwork.FakeClock, ch <-chan T) T {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waits := make(chan struct{})
	go func() {
		if clk.BlockUntilContext(ctx, 1) == nil {
			close(waits)
		}
	}()
	select {
	case v := <-ch:
		return v
	case <-waits:
		t.Fatal("the call waits on the clock again instead of returning")
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not return")
	}
	panic("unreachable")
}

// verified fails unless r is a signature of msg by pub.
func verified(t testing.TB, r signResult, pub crypto.PubKey, msg []byte) {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !pub.VerifySignature(msg, r.sig) {
		t.Fatal("signature does not verify")
	}
}

// clockKey stands for software signing that costs cost of host time: it
// advances the fake clock by cost, then signs.
type clockKey struct {
	key    PrivKeySigner
	clk    *clockwork.FakeClock
	cost   time.Duration
	closed bool
}

func (k *clockKey) PubKey() crypto.PubKey { return k.key.PubKey() }

func (k *clockKey) Sign(kind string, msg []byte) ([]byte, error) {
	k.clk.Advance(k.cost)
	return k.key.Sign(kind, msg)
}

func (k *clockKey) Close() error { k.closed = true; return nil }

// eventually polls cond (every millisecond, up to a generous deadline:
// what it waits for may involve a loaded host's networking) until it
// holds.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if cond() {
		return
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
