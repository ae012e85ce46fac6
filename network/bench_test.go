package network

import (
	"io"
	"net"
	"testing"
	"time"
)

// BenchmarkProxyRTT measures a 1-byte ping-pong with 0 configured delay,
// directly and through the fabric; the difference is what the proxy adds.
func BenchmarkProxyRTT(b *testing.B) {
	srv := newEcho(b)
	for _, mode := range []string{"direct", "proxied"} {
		b.Run(mode, func(b *testing.B) {
			addr := srv.addr()
			if mode == "proxied" {
				f := newFabric(b)
				addr = mustRoute(b, f, "a", "b", addr)
			}
			c := dial(b, addr)
			pingPong(b, c)
			b.ResetTimer()
			for b.Loop() {
				pingPong(b, c)
			}
		})
	}
}

// BenchmarkProxyRTT50ms is the same ping-pong through a link of 50 ms
// each way; late-ms/op is how much later than 100 ms a round trip lands.
func BenchmarkProxyRTT50ms(b *testing.B) {
	c := delayedConn(b, 50*time.Millisecond)
	pingPong(b, c)
	var late time.Duration
	n := 0
	for b.Loop() {
		late += pingPong(b, c) - 100*time.Millisecond
		n++
	}
	b.ReportMetric(float64(late)/float64(n)/float64(time.Millisecond), "late-ms/op")
}

// BenchmarkProxyThroughput pushes 64 KiB writes through one unlimited link.
func BenchmarkProxyThroughput(b *testing.B) {
	const size = 64 << 10
	for _, mode := range []string{"direct", "proxied"} {
		b.Run(mode, func(b *testing.B) {
			done := make(chan int64, 1)
			srv := newServer(b, func(c net.Conn) {
				n, _ := io.Copy(io.Discard, c)
				done <- n
			})
			addr := srv.addr()
			if mode == "proxied" {
				f := newFabric(b)
				addr = mustRoute(b, f, "a", "b", addr)
			}
			c := dial(b, addr)
			buf := make([]byte, size)
			b.SetBytes(size)
			b.ResetTimer()
			var sent int64
			for b.Loop() {
				n, err := c.Write(buf)
				if err != nil {
					b.Fatal(err)
				}
				sent += int64(n)
			}
			c.CloseWrite()
			if got := <-done; got != sent {
				b.Fatalf("received %d of %d bytes", got, sent)
			}
		})
	}
}
