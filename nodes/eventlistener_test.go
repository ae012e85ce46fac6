package nodes

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/valnet/valnet/internal/nettest"
	"github.com/valnet/valnet/results/eventlog"
)

// What a node writes on its event socket reaches the Sink, over every
// connection it makes (one per start) and over unix or TCP; a line that
// is not an event becomes a node_error. Close reads what was sent to the
// end and removes the socket file; a stale one at the address is replaced.
func TestEventListener(t *testing.T) {
	dir, err := MkRunTempDir("test")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for _, network := range []string{"unix", "tcp"} {
		t.Run(network, func(t *testing.T) {
			addr := "127.0.0.1:0"
			if network == "unix" {
				addr = filepath.Join(dir, "events.sock")
				stale, err := net.Listen("unix", addr)
				if err != nil {
					t.Fatal(err)
				}
				stale.(*net.UnixListener).SetUnlinkOnClose(false)
				stale.Close() // leaves the socket file behind
			}
			var mu sync.Mutex
			var got []string
			l, err := ListenEvents(network, addr, "v0", eventlog.SinkFunc(func(e eventlog.Event) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, string(e.Kind)+":"+e.Node)
			}))
			if err != nil {
				t.Fatal(err)
			}
			count := func() int {
				mu.Lock()
				defer mu.Unlock()
				return len(got)
			}
			dial := func() net.Conn {
				c, err := net.Dial(network, l.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			send := func(c net.Conn, e eventlog.Event) {
				if err := json.NewEncoder(c).Encode(e); err != nil {
					t.Fatal(err)
				}
			}
			c := dial()
			send(c, eventlog.Event{Kind: eventlog.KindBlock, Node: "v0", Height: 1})
			send(c, eventlog.Event{Kind: eventlog.KindVote, Node: "v0"})
			c.Close()
			// The node restarted: a new connection, one bad line.
			c = dial()
			if _, err := c.Write([]byte("not json\n")); err != nil {
				t.Fatal(err)
			}
			nettest.WaitFor(t, 10*time.Second, "the events so far", func() bool { return count() == 3 })
			// Close waits until the node closes its end, and forwards what
			// it sent until then.
			closed := make(chan struct{})
			go func() { l.Close(); close(closed) }()
			send(c, eventlog.Event{Kind: eventlog.KindBlock, Node: "v0", Height: 2})
			select {
			case <-closed:
				t.Fatal("Close returned while the node was connected")
			case <-time.After(100 * time.Millisecond):
			}
			c.Close()
			<-closed
			mu.Lock()
			defer mu.Unlock()
			slices.Sort(got)
			want := []string{"block:v0", "block:v0", "node_error:v0", "vote:v0"}
			if !slices.Equal(got, want) {
				t.Errorf("events %q, want %q", got, want)
			}
			if network == "unix" {
				if _, err := os.Stat(addr); err == nil {
					t.Error("socket file left after Close")
				}
			}
		})
	}
}
