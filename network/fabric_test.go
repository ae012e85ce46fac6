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
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valnet/valnet/latency"
)

// The proxy's own cost is a benchmark (BenchmarkProxyRTT, figures in
// docs/network.md#accuracy); here it must only be small next to any
// delay a scenario configures, on a loaded CI host too.
func TestZeroDelayAddsAlmostNothing(t *testing.T) {
	srv := newEcho(t)
	f := newFabric(t)
	direct := dial(t, srv.addr())
	proxied := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	pingPong(t, proxied) // warm up
	within(t, 3, func() (time.Duration, bool) {
		d, p := medianRTT(t, direct, 50), medianRTT(t, proxied, 50)
		t.Logf("median RTT direct %v, proxied %v, added %v", d, p, p-d)
		return p - d, p-d < 5*time.Millisecond
	}, "proxied median RTT with 0 delay, want < 5ms more than direct")
}

// A delay is never shortened (a timer never fires early), and lands close
// to the configured one: how close is BenchmarkProxyRTT/50ms's figure.
func TestLatencyRoundTrip(t *testing.T) {
	c := delayedConn(t, 50*time.Millisecond)
	for i := range 20 {
		if rtt := pingPong(t, c); rtt < 100*time.Millisecond {
			t.Fatalf("round trip %d took %v with 50ms each way: shorter than the delay", i, rtt)
		}
	}
	within(t, 3, func() (time.Duration, bool) {
		m := medianRTT(t, c, 20)
		return m, m <= 120*time.Millisecond
	}, "median RTT with 50ms each way, want 100ms to 120ms")
}

// within retries a timing measurement a few times: a loaded CI machine can
// delay any goroutine by milliseconds, which says nothing about the proxy.
func within(t *testing.T, attempts int, measure func() (time.Duration, bool), what string) {
	t.Helper()
	var got []time.Duration
	for range attempts {
		d, ok := measure()
		got = append(got, d)
		if ok {
			t.Logf("%s: %v", what, got)
			return
		}
	}
	t.Fatalf("%s: got %v", what, got)
}

func TestNegativeDelayIsZero(t *testing.T) {
	srv := newEcho(t)
	f := newFabric(t)
	f.SetLink("a", "b", Link{Latency: negative{}})
	f.SetLink("b", "a", Link{Latency: negative{}})
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	if m := medianRTT(t, c, 10); m > 20*time.Millisecond {
		t.Fatalf("median RTT %v with negative draws, want ~0 (under 20ms on a loaded host)", m)
	}
}

// With heavy jitter chunks would overtake each other if delays were applied
// independently; the stream must come out intact and in order.
func TestJitterKeepsOrder(t *testing.T) {
	srv := newEcho(t)
	f := newFabric(t)
	f.SetLink("a", "b", Link{Latency: normal(t, 10*time.Millisecond, 10*time.Millisecond, 1, "ab")})
	f.SetLink("b", "a", Link{Latency: normal(t, 10*time.Millisecond, 10*time.Millisecond, 1, "ba")})
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	want := make([]byte, 0, 4000*8)
	go func() {
		for i := range 4000 {
			var b [8]byte
			binary.BigEndian.PutUint64(b[:], uint64(i))
			c.Write(b[:])
			if i%100 == 0 {
				time.Sleep(time.Millisecond) // many separate chunks
			}
		}
		c.CloseWrite()
	}()
	for i := range 4000 {
		want = binary.BigEndian.AppendUint64(want, uint64(i))
	}
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("stream reordered or corrupted: got %d bytes, want %d", len(got), len(want))
	}
	if s := linkStats(f, "a", "b"); s.Chunks < 10 {
		t.Fatalf("only %d chunks: the test did not exercise jitter", s.Chunks)
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

func TestBandwidth(t *testing.T) {
	const size = 1_250_000
	received := make(chan time.Time, 1)
	srv := newServer(t, func(c net.Conn) {
		io.CopyN(io.Discard, c, size)
		received <- time.Now()
	})
	f := newFabric(t)
	f.SetLink("a", "b", Link{Bandwidth: 10e6 / 8})
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	start := time.Now()
	go c.Write(make([]byte, size))
	var took time.Duration
	select {
	case end := <-received:
		took = end.Sub(start)
	case <-time.After(5 * time.Second):
		t.Fatal("transfer did not finish")
	}
	t.Logf("1.25 MB at 10 Mbit/s took %v", took)
	// Not faster than the bandwidth allows; the upper bound is loose (a
	// loaded host is late) but below what a doubled transmit time gives.
	if took < 900*time.Millisecond || took > 1500*time.Millisecond {
		t.Fatalf("took %v, want 1s (at least 900ms, under 1.5s)", took)
	}
}

// Serialisation comes before propagation: delay adds to the transmit time.
func TestBandwidthPlusLatency(t *testing.T) {
	const size = 250_000
	received := make(chan time.Time, 1)
	srv := newServer(t, func(c net.Conn) {
		io.CopyN(io.Discard, c, size)
		received <- time.Now()
	})
	f := newFabric(t)
	f.SetLink("a", "b", Link{Bandwidth: 1e6, Latency: latency.Constant(100 * time.Millisecond)})
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	start := time.Now()
	go c.Write(make([]byte, size))
	took := (<-received).Sub(start)
	t.Logf("250 kB at 1 MB/s + 100ms took %v", took)
	// Both apply (250ms of transmit + 100ms of delay: not 250 or 100);
	// the upper bound is loose for a loaded host but below 600ms, what a
	// doubled transmit time would give.
	if took < 340*time.Millisecond || took > 550*time.Millisecond {
		t.Fatalf("took %v, want ~350ms (at least 340ms, under 550ms)", took)
	}
}

// While a bandwidth-limited link is busy the reader stops reading, so the
// sender feels backpressure instead of the proxy buffering everything.
func TestBackpressure(t *testing.T) {
	srv := newServer(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	f := newFabric(t)
	f.SetLink("a", "b", Link{Bandwidth: 1e6})
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Write(make([]byte, 8<<20))
	}()
	var peak int64
	for range 20 {
		time.Sleep(20 * time.Millisecond)
		peak = max(peak, linkStats(f, "a", "b").HeldBytes)
	}
	// 1 MB/s × 100 ms of queue, plus one read of 5 ms worth.
	if limit := int64(100_000 + 5_000); peak > limit {
		t.Fatalf("proxy held %d bytes, want <= %d", peak, limit)
	}
	if peak == 0 {
		t.Fatal("nothing queued: the test did not exercise the limit")
	}
	c.Close()
	<-done
}

func TestPartitionHoldsBothWaysAndHeals(t *testing.T) {
	srv := newEcho(t)
	f := newFabric(t)
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	pingPong(t, c)
	f.SetBlocked("a", "b", true)
	f.SetBlocked("b", "a", true)
	if _, err := c.Write([]byte{'x'}); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	if n, err := readWithin(c, b[:], 500*time.Millisecond); n != 0 || err == nil {
		t.Fatalf("a byte crossed the partition (n=%d, err=%v)", n, err)
	}
	if s := linkStats(f, "a", "b"); !s.Blocked || s.HeldBytes != 1 {
		t.Fatalf("stats during partition: %+v", s)
	}
	f.SetBlocked("a", "b", false)
	// The byte reached b and was echoed, but b -> a is still blocked.
	if n, err := readWithin(c, b[:], 300*time.Millisecond); n != 0 || err == nil {
		t.Fatalf("a byte crossed the half-healed partition (n=%d, err=%v)", n, err)
	}
	if s := linkStats(f, "b", "a"); s.HeldBytes != 1 {
		t.Fatalf("b -> a should hold the echo: %+v", s)
	}
	f.SetBlocked("b", "a", false)
	if _, err := readWithin(c, b[:], time.Second); err != nil || b[0] != 'x' {
		t.Fatalf("held byte not delivered after heal: %v %q", err, b[0])
	}
	if rtt := pingPong(t, c); rtt > 50*time.Millisecond {
		t.Fatalf("traffic did not resume promptly: RTT %v", rtt)
	}
}

// A stream through a partition: nothing sent after the block arrives until
// the heal, then everything arrives in order, nothing lost.
func TestPartitionStopsStreamPromptly(t *testing.T) {
	type stamp struct {
		seq  uint64
		sent time.Time
	}
	var sentMu sync.Mutex
	var sent []time.Time
	got := make(chan stamp, 100000)
	srv := newServer(t, func(c net.Conn) {
		var b [8]byte
		for {
			if _, err := io.ReadFull(c, b[:]); err != nil {
				return
			}
			seq := binary.BigEndian.Uint64(b[:])
			sentMu.Lock()
			s := sent[seq]
			sentMu.Unlock()
			got <- stamp{seq, s}
		}
	})
	f := newFabric(t)
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for seq := uint64(0); ; seq++ {
			sentMu.Lock()
			sent = append(sent, time.Now())
			sentMu.Unlock()
			var b [8]byte
			binary.BigEndian.PutUint64(b[:], seq)
			if _, err := c.Write(b[:]); err != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	time.Sleep(100 * time.Millisecond)
	blockAt := time.Now()
	f.SetBlocked("a", "b", true)
	f.SetBlocked("b", "a", true)
	var last stamp
	next := uint64(0)
	deadline := time.After(500 * time.Millisecond)
collect:
	for {
		select {
		case s := <-got:
			if s.seq != next {
				t.Fatalf("got seq %d, want %d", s.seq, next)
			}
			next++
			last = s
		case <-deadline:
			break collect
		}
	}
	if late := last.sent.Sub(blockAt); late > 50*time.Millisecond {
		t.Fatalf("bytes sent %v after the block still crossed", late)
	}
	close(stop)
	wg.Wait()
	sentMu.Lock()
	total := uint64(len(sent))
	sentMu.Unlock()
	f.HealAll()
	timeout := time.After(2 * time.Second)
	for next < total {
		select {
		case s := <-got:
			if s.seq != next {
				t.Fatalf("after heal got seq %d, want %d", s.seq, next)
			}
			next++
		case <-timeout:
			t.Fatalf("after heal only %d of %d messages arrived", next, total)
		}
	}
	t.Logf("last message through was sent %v after the block (negative: before); %d held messages delivered on heal",
		last.sent.Sub(blockAt), total-last.seq-1)
}

// Connections opened during a partition are accepted but carry nothing.
func TestConnectDuringPartition(t *testing.T) {
	srv := newEcho(t)
	f := newFabric(t)
	addr := mustRoute(t, f, "a", "b", srv.addr())
	f.SetBlocked("a", "b", true)
	c := dial(t, addr)
	c.Write([]byte{'y'})
	var b [1]byte
	if n, _ := readWithin(c, b[:], 300*time.Millisecond); n != 0 {
		t.Fatal("byte crossed a partition on a new connection")
	}
	f.SetBlocked("a", "b", false)
	if _, err := readWithin(c, b[:], time.Second); err != nil || b[0] != 'y' {
		t.Fatalf("after heal: %v %q", err, b[0])
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
	for _, c := range []net.Conn{ab, bc, ca, db} {
		c.Write([]byte{'i'})
	}
	var b [1]byte
	if _, err := readWithin(ca, b[:], time.Second); err != nil {
		t.Fatalf("c <-> a should pass while b is isolated: %v", err)
	}
	for name, c := range map[string]net.Conn{"a->b": ab, "b->c": bc, "d->b": db} {
		if n, _ := readWithin(c, b[:], 200*time.Millisecond); n != 0 {
			t.Fatalf("%s crossed b's isolation", name)
		}
	}
	// Ending the isolation keeps an explicit block.
	f.SetBlocked("a", "b", true)
	f.Isolate("b", false)
	if _, err := readWithin(bc, b[:], time.Second); err != nil {
		t.Fatalf("b -> c after isolation ended: %v", err)
	}
	if n, _ := readWithin(ab, b[:], 200*time.Millisecond); n != 0 {
		t.Fatal("a -> b crossed its explicit block")
	}
	f.Isolate("b", true)
	f.HealAll()
	for name, c := range map[string]net.Conn{"a->b": ab, "d->b": db} {
		if _, err := readWithin(c, b[:], time.Second); err != nil {
			t.Fatalf("%s after HealAll: %v", name, err)
		}
	}
	for _, s := range f.Stats() {
		if s.Blocked {
			t.Fatalf("still blocked after HealAll: %+v", s)
		}
	}
}

func TestSetLinkOnOpenConnection(t *testing.T) {
	srv := newEcho(t)
	f := newFabric(t)
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	if m := medianRTT(t, c, 5); m > 20*time.Millisecond {
		t.Fatalf("RTT before SetLink %v, want ~0 (under 20ms on a loaded host)", m)
	}
	f.SetLink("a", "b", Link{Latency: latency.Constant(30 * time.Millisecond)})
	f.SetLink("b", "a", Link{Latency: latency.Constant(20 * time.Millisecond)})
	within(t, 3, func() (time.Duration, bool) {
		m := medianRTT(t, c, 5)
		return m, m >= 49*time.Millisecond && m <= 75*time.Millisecond
	}, "RTT after SetLink 30ms + 20ms, want ~50ms (loose: this checks the change, BenchmarkProxyRTT50ms the accuracy)")
	f.SetLink("a", "b", Link{})
	f.SetLink("b", "a", Link{})
	if m := medianRTT(t, c, 5); m > 20*time.Millisecond {
		t.Fatalf("RTT after reset %v, want ~0 (under 20ms on a loaded host)", m)
	}
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
		if _, err := readWithin(c, b[:], time.Second); err != nil {
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
	if _, err := readWithin(c, b[:], 2*time.Second); err == nil || strings.Contains(err.Error(), "timeout") {
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

func TestHoldLimitClosesConnection(t *testing.T) {
	srv := newServer(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	var logged atomic.Bool
	f := NewFabric(Options{HoldLimit: 1 << 20, Logf: func(string, ...any) { logged.Store(true) }})
	defer f.Close()
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	f.SetBlocked("a", "b", true)
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
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
					if _, err := readWithin(c, b[:], 5*time.Second); err != nil {
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
		c.SetReadDeadline(time.Now().Add(time.Second))
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

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("timed out waiting: %s\n%s", what, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Held bytes leave at the heal and then take the link's delay, as a
// retransmission would.
func TestHealedBytesTakeTheDelay(t *testing.T) {
	srv := newEcho(t)
	f := newFabric(t)
	f.SetLink("a", "b", Link{Latency: latency.Constant(100 * time.Millisecond)})
	c := dial(t, mustRoute(t, f, "a", "b", srv.addr()))
	f.SetBlocked("a", "b", true)
	c.Write([]byte{'h'})
	time.Sleep(300 * time.Millisecond)
	healed := time.Now()
	f.SetBlocked("a", "b", false)
	var b [1]byte
	if _, err := readWithin(c, b[:], time.Second); err != nil {
		t.Fatal(err)
	}
	took := time.Since(healed)
	t.Logf("held byte arrived %v after the heal", took)
	if took < 99*time.Millisecond || took > 200*time.Millisecond {
		t.Fatalf("held byte arrived %v after the heal, want ~100ms", took)
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
