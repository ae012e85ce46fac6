package accept

import (
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func dial(t *testing.T, l *Loop) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Close lets handlers finish while their peers close within the grace,
// and cuts the connections (also those a handler tracked) of peers that do
// not; it returns once every handler has.
func TestLoopClose(t *testing.T) {
	for _, tc := range []struct {
		name       string
		grace      time.Duration
		peerCloses bool // the peer closes its end during Close
	}{
		{"peer closes within the grace", 5 * time.Second, true},
		{"peer stays: cut after the grace", 200 * time.Millisecond, false},
		{"no grace: cut at once", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := New(listen(t))
			var read, handled atomic.Int64
			upstream := make(chan net.Conn, 1)
			started := make(chan struct{}, 1)
			l.Serve(func(c net.Conn) {
				// A handler with a second connection of its own, as a relay
				// has, that only Close can end.
				a, b := net.Pipe()
				defer b.Close()
				if !l.Track(a) {
					return
				}
				defer l.Untrack(a)
				upstream <- b
				started <- struct{}{}
				n, _ := io.Copy(io.Discard, c)
				read.Add(n)
				_, _ = a.Read(make([]byte, 1)) // returns once a is closed
				handled.Add(1)
			})
			c := dial(t, l)
			if _, err := c.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			<-started
			b := <-upstream
			if tc.peerCloses {
				// The peer's close ends the copy; the tracked pipe ends too.
				go func() {
					time.Sleep(100 * time.Millisecond)
					c.Close()
					b.Close()
				}()
			}
			start := time.Now()
			l.Close(tc.grace)
			took := time.Since(start)
			if handled.Load() != 1 {
				t.Fatalf("Close returned before the handler")
			}
			if tc.peerCloses {
				if read.Load() != 5 || took >= tc.grace {
					t.Errorf("handler read %d bytes of 5; Close took %v of a grace of %v", read.Load(), took, tc.grace)
				}
			} else {
				if took < tc.grace || took > tc.grace+2*time.Second {
					t.Errorf("Close took %v, want the grace %v", took, tc.grace)
				}
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
					t.Errorf("the peer's connection was not cut: %v", err)
				}
			}
			if l.Track(c) {
				t.Error("Track succeeded after Close")
			}
			if _, err := net.Dial("tcp", l.Addr().String()); err == nil {
				t.Error("still accepting after Close")
			}
		})
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
