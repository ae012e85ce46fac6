package network

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valnet/valnet/latency"
)

// With no delay configured the fabric adds no wait of its own: round trips
// complete on a fake clock that never moves. What the proxy costs in real
// time is a benchmark (BenchmarkProxyRTT, figures in
// docs/network.md#accuracy), not a test.
func TestZeroDelayNeverWaits(t *testing.T) {
	srv := newEcho(t)
	f, fc := fakeFabric(t, Options{})
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	for range 50 {
		fakeRoundTrip(t, fc, c, 0, 0)
	}
}

// Each leg is held for exactly the link's delay: not released a
// nanosecond early, released on time.
func TestLatencyExact(t *testing.T) {
	srv := newEcho(t)
	f, fc := fakeFabric(t, Options{})
	f.SetLink("a", "b", Link{Latency: latency.Constant(50 * time.Millisecond)})
	f.SetLink("b", "a", Link{Latency: latency.Constant(30 * time.Millisecond)})
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	for range 5 {
		fakeRoundTrip(t, fc, c, 50*time.Millisecond, 30*time.Millisecond)
	}
}

// On the real clock a delay is never shortened (a timer never fires
// early). How close it lands is BenchmarkProxyRTT50ms's figure: a loaded
// host is late by any amount, so there is no upper bound here.
func TestLatencyRoundTrip(t *testing.T) {
	c := delayedConn(t, 50*time.Millisecond)
	for i := range 5 {
		if rtt := pingPong(t, c); rtt < 100*time.Millisecond {
			t.Fatalf("round trip %d took %v with 50ms each way: shorter than the delay", i, rtt)
		}
	}
}

// Draws below zero are no delay: round trips complete on a standing clock.
func TestNegativeDelayIsZero(t *testing.T) {
	srv := newEcho(t)
	f, fc := fakeFabric(t, Options{})
	f.SetLink("a", "b", Link{Latency: negative{}})
	f.SetLink("b", "a", Link{Latency: negative{}})
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	for range 10 {
		fakeRoundTrip(t, fc, c, 0, 0)
	}
}

// With jitter chunks would overtake each other if delays were applied
// independently: every message here is its own chunk with its own draw,
// and the stream must come out intact and in order, each chunk no earlier
// than the ones before it.
func TestJitterKeepsOrder(t *testing.T) {
	const n = 200
	ms := time.Millisecond
	srv := newEcho(t)
	f, fc := fakeFabric(t, Options{})
	f.SetLink("a", "b", Link{Latency: &cycle{d: []time.Duration{40 * ms, 1 * ms, 25 * ms, 3 * ms, 60 * ms, 10 * ms, 2 * ms, 33 * ms}}})
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	want := make([]byte, 0, n*8)
	for i := range n {
		want = binary.BigEndian.AppendUint64(want, uint64(i))
		if _, err := c.Write(want[len(want)-8:]); err != nil {
			t.Fatal(err)
		}
		// Read by the proxy before the next one is written: one chunk each.
		waitFor(t, func() bool { return linkStats(f, "a", "b").HeldBytes == int64(len(want)) }, fmt.Sprintf("message %d read", i))
	}
	// Chunk 0 draws 40ms; 1 to 3 draw less and go with it, 4 draws 60ms.
	holdsFor(t, fc, 40*ms)
	sleepers(t, fc, 1)
	if s := linkStats(f, "a", "b"); s.Bytes != 4*8 {
		t.Fatalf("at 40ms %d bytes delivered, want the first 4 messages (32 bytes)", s.Bytes)
	}
	fc.Advance(20 * ms) // every later release is at 60ms: none draws more
	got := make([]byte, len(want))
	if _, err := readWithin(c, got, patience); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("stream reordered or corrupted")
	}
	waitFor(t, func() bool { return linkStats(f, "a", "b").HeldBytes == 0 }, "every chunk counted")
	if s := linkStats(f, "a", "b"); s.Chunks != n {
		t.Fatalf("%d chunks delivered, want %d: one per message", s.Chunks, n)
	}
}

func TestLargeTransferIntegrity(t *testing.T) {
	srv := newEcho(t)
	f := newFabric(t)
	f.SetLink("a", "b", Link{Latency: normal(t, 2*time.Millisecond, time.Millisecond, 2, "ab")})
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	data := make([]byte, 8<<20)
	rand.Read(data)
	go func() {
		c.Write(data)
		c.CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("echo of 8 MiB differs (got %d bytes)", len(got))
	}
}

// checkPace fails unless delivered bytes follow the link's bandwidth after
// its delay: never ahead of it, and behind it by at most the chunk in
// transmission (one read of chunkTime's worth).
func checkPace(t *testing.T, rate float64, delay, elapsed time.Duration, s LinkStats) {
	t.Helper()
	ideal := rate * max(elapsed-delay, 0).Seconds()
	read := rate * chunkTime.Seconds()
	// +1: each transmit time is truncated to the nanosecond.
	if b := float64(s.Bytes); b > ideal+1 || b < ideal-read-1 {
		t.Fatalf("at %v on the fake clock %d bytes delivered, want %.0f (at most one read of %.0f fewer)", elapsed, s.Bytes, ideal, read)
	}
}

func TestBandwidth(t *testing.T) {
	const size, rate = 1_250_000, 10e6 / 8
	took := stepTransfer(t, Link{Bandwidth: rate}, size, 10*time.Millisecond, func(elapsed time.Duration, s LinkStats) {
		checkPace(t, rate, 0, elapsed, s)
	})
	if took != time.Second {
		t.Fatalf("1.25 MB at 10 Mbit/s took %v on the fake clock, want 1s", took)
	}
}

// Serialisation comes before propagation: delay adds to the transmit time.
func TestBandwidthPlusLatency(t *testing.T) {
	const size, rate, delay = 250_000, 1e6, 100 * time.Millisecond
	took := stepTransfer(t, Link{Bandwidth: rate, Latency: latency.Constant(delay)}, size, 5*time.Millisecond,
		func(elapsed time.Duration, s LinkStats) { checkPace(t, rate, delay, elapsed, s) })
	// 250ms of transmit + 100ms of delay: not 250 or 100, and not more.
	if took != 350*time.Millisecond {
		t.Fatalf("250 kB at 1 MB/s + 100ms took %v on the fake clock, want 350ms", took)
	}
}

// The same on the real clock, with only what load cannot change: the
// transfer is never faster than transmit time plus delay.
func TestBandwidthPlusLatencyNeverFaster(t *testing.T) {
	const size = 250_000
	received := make(chan time.Time, 1)
	srv := newServer(t, func(c net.Conn) {
		if n, _ := io.CopyN(io.Discard, c, size); n == size {
			received <- time.Now()
		}
	})
	f := newFabric(t)
	f.SetLink("a", "b", Link{Bandwidth: 1e6, Latency: latency.Constant(100 * time.Millisecond)})
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	start := time.Now()
	go c.Write(make([]byte, size))
	var took time.Duration
	select {
	case end := <-received:
		took = end.Sub(start)
	case <-time.After(patience):
		t.Fatal("transfer did not finish")
	}
	t.Logf("250 kB at 1 MB/s + 100ms took %v", took)
	// Each transmit time is truncated to the nanosecond: allow a microsecond.
	if took < 350*time.Millisecond-time.Microsecond {
		t.Fatalf("took %v, want at least 350ms", took)
	}
}

// While a bandwidth-limited link is busy the reader stops reading, so the
// sender feels backpressure instead of the proxy buffering everything.
func TestBackpressure(t *testing.T) {
	const size, rate = 1 << 20, 1e6
	// 1 MB/s × 100 ms of queue, plus one read of 5 ms worth.
	const full, read = 100_000, 5_000
	var peak int64
	stepTransfer(t, Link{Bandwidth: rate}, size, 10*time.Millisecond, func(elapsed time.Duration, s LinkStats) {
		peak = max(peak, s.HeldBytes)
		if s.HeldBytes >= full+read {
			t.Fatalf("at %v the proxy held %d bytes, want < %d", elapsed, s.HeldBytes, full+read)
		}
	})
	if peak < full {
		t.Fatalf("the proxy held at most %d bytes: the test did not reach the limit %d", peak, full)
	}
}

// A partition holds bytes both ways, not a nanosecond of fake time passes
// them, and each direction's bytes go at its heal after the link's delay.
func TestPartitionHoldsBothWaysAndHeals(t *testing.T) {
	const d = 10 * time.Millisecond
	srv := newEcho(t)
	f, fc := fakeFabric(t, Options{})
	f.SetLink("a", "b", Link{Latency: latency.Constant(d)})
	f.SetLink("b", "a", Link{Latency: latency.Constant(d)})
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	fakeRoundTrip(t, fc, c, d, d)
	f.SetBlocked("a", "b", true)
	f.SetBlocked("b", "a", true)
	if _, err := c.Write([]byte{'x'}); err != nil {
		t.Fatal(err)
	}
	heldAt(t, f, fc, "a", "b", 1)
	fc.Advance(time.Hour) // far past the delay: a byte let through would go now
	if s := linkStats(f, "a", "b"); !s.Blocked || s.HeldBytes != 1 || s.Bytes != 1 {
		t.Fatalf("stats during partition (1 byte delivered before it): %+v", s)
	}
	// Held, not delivered: it goes from the heal and takes the delay.
	f.SetBlocked("a", "b", false)
	holdsFor(t, fc, d)
	// It reached b and was echoed, but b -> a is still blocked.
	heldAt(t, f, fc, "b", "a", 1)
	// The writer counts after its write returns, maybe after the echo.
	waitFor(t, func() bool { s := linkStats(f, "a", "b"); return s.Bytes == 2 && s.HeldBytes == 0 }, "a -> b to count the held byte")
	fc.Advance(time.Hour)
	f.SetBlocked("b", "a", false)
	holdsFor(t, fc, d)
	var b [1]byte
	if _, err := readWithin(c, b[:], patience); err != nil || b[0] != 'x' {
		t.Fatalf("held byte not delivered after heal: %v %q", err, b[0])
	}
	// Traffic resumes with just the link's delay.
	fakeRoundTrip(t, fc, c, d, d)
}

// A stream through a partition: bytes in flight when it comes and bytes
// sent during it all wait for the heal, then arrive in order, nothing
// lost, each at the heal plus the link's delay.
func TestPartitionStopsStreamPromptly(t *testing.T) {
	const d = 10 * time.Millisecond
	type stamp struct {
		seq uint64
		at  time.Duration // on the fake clock
	}
	got := make(chan stamp, 100)
	f, fc := fakeFabric(t, Options{})
	start := fc.Now()
	srv := newServer(t, func(c net.Conn) {
		var b [8]byte
		for {
			if _, err := io.ReadFull(c, b[:]); err != nil {
				return
			}
			got <- stamp{binary.BigEndian.Uint64(b[:]), fc.Since(start)}
		}
	})
	f.SetLink("a", "b", Link{Latency: latency.Constant(d)})
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	// send writes messages from..to-1 and waits until the proxy holds
	// held bytes: those and any before them not yet delivered.
	send := func(from, to uint64, held int64) {
		for seq := from; seq < to; seq++ {
			if _, err := c.Write(binary.BigEndian.AppendUint64(nil, seq)); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, func() bool { return linkStats(f, "a", "b").HeldBytes == held },
			fmt.Sprintf("messages up to %d read by the proxy", to))
	}
	expect := func(from, to uint64, at time.Duration) {
		t.Helper()
		for seq := from; seq < to; seq++ {
			select {
			case s := <-got:
				if s.seq != seq || s.at != at {
					t.Fatalf("got message %d at %v, want %d at %v", s.seq, s.at, seq, at)
				}
			case <-time.After(patience):
				t.Fatalf("message %d did not arrive", seq)
			}
		}
	}
	send(0, 10, 10*8)
	holdsFor(t, fc, d)
	expect(0, 10, d)
	waitFor(t, func() bool { return linkStats(f, "a", "b").HeldBytes == 0 }, "the first ten counted")
	send(10, 20, 10*8) // in flight when the partition comes
	sleepers(t, fc, 1)
	f.SetBlocked("a", "b", true)
	f.SetBlocked("b", "a", true)
	heldAt(t, f, fc, "a", "b", 10*8) // the writer dropped its timer
	send(20, 30, 20*8)               // sent during it, queued behind
	fc.Advance(time.Hour)
	heal := fc.Since(start)
	f.HealAll()
	holdsFor(t, fc, d)
	expect(10, 30, heal+d)
	// The writer counts after its write returns, maybe after the receipt.
	waitFor(t, func() bool { s := linkStats(f, "a", "b"); return s.Bytes == 30*8 && s.HeldBytes == 0 }, "every byte counted")
	if len(got) != 0 {
		t.Fatalf("after the heal: %d extra messages", len(got))
	}
}

// Connections opened during a partition are accepted but carry nothing
// until the heal.
func TestConnectDuringPartition(t *testing.T) {
	const d = 10 * time.Millisecond
	srv := newEcho(t)
	f, fc := fakeFabric(t, Options{})
	f.SetLink("a", "b", Link{Latency: latency.Constant(d)})
	addr := mustRoute(t, f, "a", "b", srv.addr())
	f.SetBlocked("a", "b", true)
	c := dial(t, addr)
	if _, err := c.Write([]byte{'y'}); err != nil {
		t.Fatal(err)
	}
	heldAt(t, f, fc, "a", "b", 1)
	fc.Advance(time.Hour)
	f.SetBlocked("a", "b", false)
	holdsFor(t, fc, d) // still held at the heal: it crossed nothing
	var b [1]byte
	if _, err := readWithin(c, b[:], patience); err != nil || b[0] != 'y' {
		t.Fatalf("after heal: %v %q", err, b[0])
	}
}

// blockedLinks lists the fabric's blocked links as "from->to", sorted.
func blockedLinks(f *Fabric) []string {
	var out []string
	for _, s := range f.Stats() {
		if s.Blocked {
			out = append(out, s.From+"->"+s.To)
		}
	}
	return out
}

func wantBlocked(t *testing.T, f *Fabric, want ...string) {
	t.Helper()
	if got := blockedLinks(f); !slices.Equal(got, want) {
		t.Fatalf("blocked links %v, want %v", got, want)
	}
}

func TestIsolateAndHealAll(t *testing.T) {
	srvB, srvC, srvA := newEcho(t), newEcho(t), newEcho(t)
	f := newFabric(t)
	ab := dial(t, mustRoute(t, f, "a", "b", srvB.addr()))
	bc := dial(t, mustRoute(t, f, "b", "c", srvC.addr()))
	ca := dial(t, mustRoute(t, f, "c", "a", srvA.addr()))
	f.Isolate("b", true)
	// A route created after the isolation is isolated too.
	db := dial(t, mustRoute(t, f, "d", "b", srvB.addr()))
	wantBlocked(t, f, "a->b", "b->a", "b->c", "b->d", "c->b", "d->b")
	for _, c := range []net.Conn{ab, bc, ca, db} {
		if _, err := c.Write([]byte{'i'}); err != nil {
			t.Fatal(err)
		}
	}
	var b [1]byte
	if _, err := readWithin(ca, b[:], patience); err != nil {
		t.Fatalf("c <-> a should pass while b is isolated: %v", err)
	}
	waitFor(t, func() bool {
		for _, l := range []pair{{"a", "b"}, {"b", "c"}, {"d", "b"}} {
			if linkStats(f, l.from, l.to).HeldBytes != 1 || gated(f, l.from, l.to) != 1 {
				return false
			}
		}
		return true
	}, "the bytes to and from b held at the partition")
	// Ending the isolation keeps an explicit block.
	f.SetBlocked("a", "b", true)
	f.Isolate("b", false)
	wantBlocked(t, f, "a->b")
	for name, c := range map[string]net.Conn{"b->c": bc, "d->b": db} {
		if _, err := readWithin(c, b[:], patience); err != nil {
			t.Fatalf("%s after isolation ended: %v", name, err)
		}
	}
	if s := linkStats(f, "a", "b"); s.HeldBytes != 1 || s.Bytes != 0 || gated(f, "a", "b") != 1 {
		t.Fatalf("a -> b should still hold its byte behind its explicit block: %+v", s)
	}
	f.Isolate("b", true)
	f.HealAll()
	wantBlocked(t, f)
	if _, err := readWithin(ab, b[:], patience); err != nil {
		t.Fatalf("a->b after HealAll: %v", err)
	}
}

// A new shape applies to an open connection, from its next bytes on.
func TestSetLinkOnOpenConnection(t *testing.T) {
	srv := newEcho(t)
	f, fc := fakeFabric(t, Options{})
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	fakeRoundTrip(t, fc, c, 0, 0)
	f.SetLink("a", "b", Link{Latency: latency.Constant(30 * time.Millisecond)})
	f.SetLink("b", "a", Link{Latency: latency.Constant(20 * time.Millisecond)})
	fakeRoundTrip(t, fc, c, 30*time.Millisecond, 20*time.Millisecond)
	f.SetLink("a", "b", Link{})
	f.SetLink("b", "a", Link{})
	fakeRoundTrip(t, fc, c, 0, 0)
}

func TestRetarget(t *testing.T) {
	one, two := newServer(t, reply('1')), newServer(t, reply('2'))
	f := newFabric(t)
	addr := mustRoute(t, f, "a", "b", one.addr())
	old := dial(t, addr)
	ask := func(c net.Conn) byte {
		t.Helper()
		c.Write([]byte{'?'})
		var b [1]byte
		if _, err := readWithin(c, b[:], patience); err != nil {
			t.Fatal(err)
		}
		return b[0]
	}
	if got := ask(old); got != '1' {
		t.Fatalf("before retarget: %q", got)
	}
	f.Retarget("b", two.addr())
	if got := ask(dial(t, addr)); got != '2' {
		t.Fatalf("new connection after retarget reached %q", got)
	}
	if got := ask(old); got != '1' {
		t.Fatalf("open connection moved: %q", got)
	}
	// Routing the pair again returns the same proxy.
	if again := mustRoute(t, f, "a", "b", one.addr()); again != addr {
		t.Fatalf("second Route gave %s, want %s", again, addr)
	}
}

func TestDialFailureClosesClient(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	var logged atomic.Bool
	f := NewFabric(Options{Logf: func(string, ...any) { logged.Store(true) }})
	defer f.Close()
	c := dial(t, mustRoute(t, f, "a", "b", dead))
	var b [1]byte
	if _, err := readWithin(c, b[:], patience); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("want the connection closed, got %v", err)
	}
	if !logged.Load() {
		t.Fatal("dial failure not logged")
	}
}

func TestHalfClose(t *testing.T) {
	srv := newServer(t, func(c net.Conn) {
		got, _ := io.ReadAll(c) // until the client's FIN
		fmt.Fprintf(c, "got %d bytes", len(got))
	})
	f := newFabric(t)
	f.SetLink("a", "b", Link{Latency: latency.Constant(10 * time.Millisecond)})
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	c.Write(make([]byte, 100000))
	c.CloseWrite()
	resp, err := io.ReadAll(c)
	if err != nil || string(resp) != "got 100000 bytes" {
		t.Fatalf("response %q, %v", resp, err)
	}
	waitFor(t, func() bool { return linkStats(f, "a", "b").Connections == 0 }, "connection cleaned up")
}

// The FIN travels like data: it takes the link's delay and a partition
// holds it until the heal.
func TestHalfCloseTravelsLikeData(t *testing.T) {
	const d = 10 * time.Millisecond
	srv := newServer(t, func(c net.Conn) {
		got, _ := io.ReadAll(c) // until the client's FIN
		fmt.Fprintf(c, "got %d bytes", len(got))
	})
	f, fc := fakeFabric(t, Options{})
	f.SetLink("a", "b", Link{Latency: latency.Constant(d)})
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	if _, err := c.Write(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	holdsFor(t, fc, d)
	waitFor(t, func() bool { return linkStats(f, "a", "b").Bytes == 100 }, "the data delivered")
	f.SetBlocked("a", "b", true)
	c.CloseWrite()
	heldAt(t, f, fc, "a", "b", 0) // the FIN, which has no bytes
	fc.Advance(time.Hour)
	f.SetBlocked("a", "b", false)
	holdsFor(t, fc, d)
	c.SetReadDeadline(time.Now().Add(patience))
	if resp, err := io.ReadAll(c); err != nil || string(resp) != "got 100 bytes" {
		t.Fatalf("response %q, %v", resp, err)
	}
}

func TestHoldLimitClosesConnection(t *testing.T) {
	srv := newServer(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	var logged atomic.Bool
	f := NewFabric(Options{HoldLimit: 1 << 20, Logf: func(string, ...any) { logged.Store(true) }})
	defer f.Close()
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	f.SetBlocked("a", "b", true)
	c.SetWriteDeadline(time.Now().Add(patience))
	var err error
	for range 256 {
		if _, err = c.Write(make([]byte, 64<<10)); err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("16 MiB written into a partition with a 1 MiB hold limit")
	}
	s := linkStats(f, "a", "b")
	if s.Overflows != 1 || !logged.Load() {
		t.Fatalf("overflow not recorded: %+v", s)
	}
	waitFor(t, func() bool { return linkStats(f, "a", "b").HeldBytes == 0 }, "held bytes released")
}

func TestStats(t *testing.T) {
	srv := newEcho(t)
	f := newFabric(t)
	f.SetLink("a", "b", Link{Latency: latency.Constant(time.Millisecond)})
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	c.Write(make([]byte, 1000))
	if _, err := io.ReadFull(c, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	// The writer counts after its write returns, which may be after the echo.
	waitFor(t, func() bool {
		return linkStats(f, "a", "b").HeldBytes == 0 && linkStats(f, "b", "a").HeldBytes == 0
	}, "stats")
	st := f.Stats()
	if len(st) != 2 || st[0].From != "a" || st[1].From != "b" {
		t.Fatalf("stats %+v", st)
	}
	for _, s := range st {
		if s.Bytes != 1000 || s.Chunks < 1 || s.Connections != 1 || s.Opened != 1 || s.HeldBytes != 0 {
			t.Fatalf("stats %+v", s)
		}
	}
	if st[0].Link != "latency fixed 1ms" {
		t.Fatalf("link shown as %q", st[0].Link)
	}
}

func TestRouteErrors(t *testing.T) {
	f := newFabric(t)
	for _, c := range [][3]string{{"a", "a", "127.0.0.1:1"}, {"", "b", "127.0.0.1:1"}, {"a", "b", "nope"}} {
		if _, err := f.Route(c[0], c[1], c[2]); err == nil {
			t.Fatalf("Route%v: want error", c)
		}
	}
	f.Close()
	if _, err := f.Route("a", "b", "127.0.0.1:1"); err == nil {
		t.Fatal("Route after Close: want error")
	}
}

// 50 nodes, each dialing 10 peers: 500 routes, each with a live connection.
func TestManyRoutes(t *testing.T) {
	const nodes, peers = 50, 10
	servers := make([]*server, nodes)
	for i := range servers {
		servers[i] = newEcho(t)
	}
	f := newFabric(t)
	for i := range nodes {
		for d := 1; d <= peers; d++ {
			j := (i + d) % nodes
			f.SetLink(fmt.Sprint(i), fmt.Sprint(j), Link{Latency: latency.Constant(5 * time.Millisecond)})
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, nodes*peers)
	start := time.Now()
	for i := range nodes {
		for d := 1; d <= peers; d++ {
			j := (i + d) % nodes
			addr, err := f.Route(fmt.Sprint(i), fmt.Sprint(j), servers[j].addr())
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := net.Dial("tcp", addr)
				if err != nil {
					errs <- err
					return
				}
				defer c.Close()
				var b [64]byte
				for range 5 {
					if _, err := c.Write(b[:]); err != nil {
						errs <- err
						return
					}
					if _, err := readWithin(c, b[:], patience); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("500 routes × 5 round trips of 10ms took %v", time.Since(start))
	// Writers count after their write returns, maybe after the reply.
	want := int64(nodes * peers * 5 * 64 * 2)
	var total int64
	waitFor(t, func() bool {
		total = 0
		for _, s := range f.Stats() {
			total += s.Bytes
		}
		return total == want
	}, fmt.Sprintf("stats to count %d bytes", want))
}

func TestCloseLeavesNothing(t *testing.T) {
	base := runtime.NumGoroutine()
	srv := newEcho(t)
	f := NewFabric(Options{Logf: t.Logf})
	f.SetLink("a", "b", Link{Latency: latency.Constant(200 * time.Millisecond)})
	var addrs []string
	var conns []net.Conn
	for i := range 5 {
		addr := mustRoute(t, f, "a", fmt.Sprint("b", i), srv.addr())
		addrs = append(addrs, addr)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		c.Write([]byte("in flight"))
	}
	f.SetBlocked("a", "b0", true)
	conns[0].Write([]byte("held"))
	pingPong(t, conns[4]) // every leg is up
	f.Close()
	for _, c := range conns {
		// EOF or a reset: either way closed, not a timeout.
		c.SetReadDeadline(time.Now().Add(patience))
		if _, err := io.ReadAll(c); err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("client leg not closed: %v", err)
		}
		c.Close()
	}
	srv.stop()
	waitFor(t, func() bool { return runtime.NumGoroutine() <= base }, "goroutines back to baseline")
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatalf("port %s not released: %v", a, err)
		}
		ln.Close()
	}
}

// Held bytes leave at the heal and then take the link's full delay, as a
// retransmission would, however long they were held.
func TestHealedBytesTakeTheDelay(t *testing.T) {
	srv := newEcho(t)
	f, fc := fakeFabric(t, Options{})
	f.SetLink("a", "b", Link{Latency: latency.Constant(100 * time.Millisecond)})
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	f.SetBlocked("a", "b", true)
	if _, err := c.Write([]byte{'h'}); err != nil {
		t.Fatal(err)
	}
	heldAt(t, f, fc, "a", "b", 1)
	fc.Advance(300 * time.Millisecond) // held three times its delay
	f.SetBlocked("a", "b", false)
	holdsFor(t, fc, 100*time.Millisecond)
	var b [1]byte
	if _, err := readWithin(c, b[:], patience); err != nil || b[0] != 'h' {
		t.Fatalf("held byte after the heal: %v %q", err, b[0])
	}
}

// Each connection costs four goroutines (a reader and a writer per
// direction), each route one.
func TestGoroutinesPerConnection(t *testing.T) {
	srv := newEcho(t)
	f := newFabric(t)
	addr := mustRoute(t, f, "a", "b", srv.addr())
	pingPong(t, dial(t, addr))
	base := runtime.NumGoroutine()
	const n = 20
	for range n {
		pingPong(t, dial(t, addr))
	}
	// Per connection: 4 in the fabric, 1 echo handler in the test.
	if got := runtime.NumGoroutine() - base; got > n*5+2 {
		t.Fatalf("%d connections added %d goroutines, want %d", n, got, n*5)
	}
}
