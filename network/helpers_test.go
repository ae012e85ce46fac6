package network

import (
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/valnet/valnet/latency"
)

// server is a loopback TCP server for tests; handle runs per connection.
type server struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func newServer(t testing.TB, handle func(net.Conn)) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns[c] = struct{}{}
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				handle(c)
				c.Close()
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
			}()
		}
	}()
	t.Cleanup(s.stop)
	return s
}

func (s *server) addr() string { return s.ln.Addr().String() }

func (s *server) stop() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// echo copies back what it reads, then half-closes.
func echo(c net.Conn) {
	io.Copy(c, c)
	c.(*net.TCPConn).CloseWrite()
}

func newEcho(t testing.TB) *server { return newServer(t, echo) }

// reply answers every read with a fixed byte per byte read.
func reply(b byte) func(net.Conn) {
	return func(c net.Conn) {
		buf := make([]byte, 1024)
		for {
			n, err := c.Read(buf)
			for i := range n {
				buf[i] = b
			}
			if n > 0 {
				if _, err := c.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
}

func newFabric(t testing.TB) *Fabric {
	f := NewFabric(Options{Logf: t.Logf})
	t.Cleanup(func() { f.Close() })
	return f
}

func mustRoute(t testing.TB, f *Fabric, from, to, target string) string {
	t.Helper()
	addr, err := f.Route(from, to, target)
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func dial(t testing.TB, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// pingPong sends one byte and waits for its echo, returning the round trip.
func pingPong(t testing.TB, c net.Conn) time.Duration {
	t.Helper()
	var b [1]byte
	start := time.Now()
	if _, err := c.Write([]byte{'p'}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, b[:]); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

func medianRTT(t testing.TB, c net.Conn, n int) time.Duration {
	t.Helper()
	rtts := make([]time.Duration, n)
	for i := range rtts {
		rtts[i] = pingPong(t, c)
	}
	slices.Sort(rtts)
	return rtts[n/2]
}

// readWithin reads len(buf) bytes or fails the read after d.
func readWithin(c net.Conn, buf []byte, d time.Duration) (int, error) {
	c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	return io.ReadFull(c, buf)
}

func linkStats(f *Fabric, from, to string) LinkStats {
	for _, s := range f.Stats() {
		if s.From == from && s.To == to {
			return s
		}
	}
	return LinkStats{}
}

// negative is a latency model that draws below zero.
type negative struct{}

func (negative) Draw() time.Duration { return -5 * time.Millisecond }
func (negative) String() string      { return "negative" }

// normal is a normally distributed link latency, seeded like the runner's.
func normal(t *testing.T, mean, stddev time.Duration, seed int64, stream string) latency.Model {
	t.Helper()
	m, err := latency.New(latency.Spec{Dist: latency.Normal, Mean: mean, Stddev: stddev}, seed, stream)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// delayedConn is a connection to an echo server through a fabric link of
// oneWay each way.
func delayedConn(t testing.TB, oneWay time.Duration) net.Conn {
	t.Helper()
	srv := newEcho(t)
	f := newFabric(t)
	f.SetLink("a", "b", Link{Latency: latency.Constant(oneWay)})
	f.SetLink("b", "a", Link{Latency: latency.Constant(oneWay)})
	return dial(t, mustRoute(t, f, "a", "b", srv.addr()))
}
