package network

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// patience bounds every real-time wait in these tests. It is not a
// figure under test: a correct fabric meets each condition in well under
// a second even on a loaded host, and a broken one fails at the deadline.
const patience = 30 * time.Second

// fakeFabric is a fabric on a fake clock: no delay elapses until the test
// advances the clock, so each release can be observed exactly.
func fakeFabric(t *testing.T, opts Options) (*Fabric, *clockwork.FakeClock) {
	t.Helper()
	fc := clockwork.NewFakeClock()
	opts.Clock = fc
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	f := NewFabric(opts)
	t.Cleanup(func() { f.Close() })
	return f, fc
}

// sleepers waits until at least n of the fabric's writers sleep on fc,
// each holding its head chunk until the release: only then does advancing
// the clock mean what the test says.
func sleepers(t *testing.T, fc *clockwork.FakeClock, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := fc.BlockUntilContext(ctx, n); err != nil {
		t.Fatalf("waiting for %d writers to sleep until a release: %v", n, err)
	}
}

// sleeping reports, without waiting, whether at least n timers are set on
// fc. A timer that fired in Advance is gone from the count when Advance
// returns, so this is exact right after an Advance.
func sleeping(fc *clockwork.FakeClock, n int) bool {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return fc.BlockUntilContext(ctx, n) == nil
}

// holdsFor checks that the fabric's one sleeping writer releases its chunk
// exactly d from now: it still sleeps at d-1ns, and its timer fires at d.
// The caller then observes the delivery.
func holdsFor(t *testing.T, fc *clockwork.FakeClock, d time.Duration) {
	t.Helper()
	sleepers(t, fc, 1)
	if sleeping(fc, 2) {
		t.Fatal("more than one writer waits for a release")
	}
	fc.Advance(d - time.Nanosecond)
	if !sleeping(fc, 1) {
		t.Fatalf("released before %v", d)
	}
	fc.Advance(time.Nanosecond)
}

// fakeRoundTrip sends one byte over c to an echo server and reads it back,
// checking that it takes exactly there on the way out and back on the way
// in, on the fake clock. A zero leg must pass with the clock standing.
func fakeRoundTrip(t *testing.T, fc *clockwork.FakeClock, c net.Conn, there, back time.Duration) {
	t.Helper()
	if _, err := c.Write([]byte{'p'}); err != nil {
		t.Fatal(err)
	}
	if there > 0 {
		holdsFor(t, fc, there)
	}
	if back > 0 {
		holdsFor(t, fc, back)
	}
	var b [1]byte
	if _, err := readWithin(c, b[:], patience); err != nil {
		t.Fatalf("round trip (%v out, %v back on the fake clock): %v", there, back, err)
	}
}

// stepTransfer sends size bytes through the link a -> b, shaped l, on a
// fake clock advanced by step at a time. Before each step, with the writer
// asleep until its next release, it calls each with the time since the
// first byte arrived and the link's stats. It returns the fake time at
// which the receiver had every byte.
//
// Before each step the reader is let fill its queue (or read everything):
// a queue that ran dry would start a new burst late and tie the figures to
// scheduling rather than to the rule. step must stay below the queue's
// 100 ms beyond the bandwidth-delay product (bottleneckQueue).
func stepTransfer(t *testing.T, l Link, size int, step time.Duration, each func(elapsed time.Duration, s LinkStats)) time.Duration {
	t.Helper()
	f, fc := fakeFabric(t, Options{})
	f.SetLink("a", "b", l)
	start := fc.Now() // the first chunk's arrival: the clock stands until the first step
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	done := make(chan time.Duration, 1)
	srv := newServer(t, func(c net.Conn) {
		if n, _ := io.CopyN(io.Discard, c, int64(size)); n == int64(size) {
			done <- fc.Since(start)
		}
		cancel()
	})
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	go c.Write(make([]byte, size))
	// What waitRoom lets the reader queue on this link.
	full := min(max(int64(l.Bandwidth*(draw(l.Latency)+bottleneckQueue).Seconds()), minQueue), defaultQueueLimit)
	for {
		if err := fc.BlockUntilContext(ctx, 1); err != nil {
			select {
			case took := <-done:
				return took
			default:
				t.Fatalf("transfer stalled at %v on the fake clock: %+v", fc.Since(start), linkStats(f, "a", "b"))
			}
		}
		var s LinkStats
		waitFor(t, func() bool {
			s = linkStats(f, "a", "b")
			return s.HeldBytes >= full || s.Bytes+s.HeldBytes == int64(size)
		}, "the reader to fill its queue")
		each(fc.Since(start), s)
		fc.Advance(step)
	}
}

// waitFor polls cond until it holds, failing with every stack after
// patience.
func waitFor(t testing.TB, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(patience)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("timed out waiting: %s\n%s", what, buf[:runtime.Stack(buf, true)])
		}
		<-tick.C
	}
}

// cycle is a latency model that draws its delays in turn: jitter whose
// every draw the test knows.
type cycle struct {
	mu sync.Mutex
	d  []time.Duration
	i  int
}

func (c *cycle) Draw() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.d[c.i%len(c.d)]
	c.i++
	return d
}

func (c *cycle) String() string { return "cycle" }

// gated is how many writers of the link from -> to hold a chunk at its
// partition: once it counts a connection, that connection's bytes are
// provably held, not merely not yet delivered.
func gated(f *Fabric, from, to string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l, ok := f.links[pair{from, to}]; ok {
		return l.gated.Load()
	}
	return 0
}

// heldAt waits until the link from -> to holds n bytes with a writer gated
// at its partition, and checks that no writer sleeps towards a release
// meanwhile: a partition runs no timer, so advancing the clock now must
// move nothing.
func heldAt(t *testing.T, f *Fabric, fc *clockwork.FakeClock, from, to string, n int64) {
	t.Helper()
	waitFor(t, func() bool { return linkStats(f, from, to).HeldBytes == n && gated(f, from, to) == 1 },
		fmt.Sprintf("%d bytes held at the partition of %s -> %s", n, from, to))
	if sleeping(fc, 1) {
		t.Fatalf("a writer sleeps towards a release while %s -> %s holds its bytes", from, to)
	}
}
