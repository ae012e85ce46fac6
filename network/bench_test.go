package network

import (
	"io"
	"net"
	"testing"
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
