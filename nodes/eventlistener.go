package nodes

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"os"
	"time"

	"github.com/valnet/valnet/internal/accept"
	"github.com/valnet/valnet/internal/unixsock"
	"github.com/valnet/valnet/results/eventlog"
)

// EventListener receives what `valnet node --events ADDR` streams: it
// accepts the node's connections (one per start of it, so it stays open
// across restarts) and forwards their event lines to a Sink. The process
// and docker backends each listen with one per node.
type EventListener struct {
	loop *accept.Loop
	path string // the unix socket file, removed by Close; "" for TCP
}

// eventDrainGrace is how long Close waits for a node to close its end: a
// stopped node has, and one still connected after this (a container that
// could not be removed) is cut.
const eventDrainGrace = 5 * time.Second

// ListenEvents listens on network ("unix" or "tcp") and address for the
// events of node, forwarded to sink. A unix socket file left at address by
// an earlier listener is replaced.
func ListenEvents(network, address, node string, sink eventlog.Sink) (*EventListener, error) {
	l := &EventListener{}
	var (
		ln  net.Listener
		err error
	)
	if network == "unix" {
		l.path = address
		_ = os.Remove(address)
		ln, err = unixsock.Listen(address) // 0600
	} else {
		ln, err = net.Listen(network, address)
	}
	if err != nil {
		return nil, err
	}
	l.loop = accept.New(ln)
	l.loop.Serve(func(conn net.Conn) { readEvents(conn, node, sink) })
	return l, nil
}

// Addr is where the listener listens.
func (l *EventListener) Addr() net.Addr { return l.loop.Addr() }

// Close stops accepting, forwards what the connections still hold until
// the node closes them (at most eventDrainGrace), and removes the socket
// file. Call it once the node can no longer write.
func (l *EventListener) Close() {
	l.loop.Close(eventDrainGrace)
	if l.path != "" {
		_ = os.Remove(l.path)
	}
}

// readEvents forwards the event lines a `valnet node` writes on conn to
// sink until conn is closed (the node stops, or is killed); a bad line or
// a broken read becomes a node_error event.
func readEvents(conn net.Conn, node string, sink eventlog.Sink) {
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e eventlog.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			sink.Emit(eventlog.Event{Time: time.Now(), Kind: eventlog.KindNodeError, Node: node,
				Error: "event socket: bad line: " + err.Error()})
			continue
		}
		sink.Emit(e)
	}
	if err := sc.Err(); err != nil && !errors.Is(err, net.ErrClosed) {
		sink.Emit(eventlog.Event{Time: time.Now(), Kind: eventlog.KindNodeError, Node: node,
			Error: "event socket: " + err.Error()})
	}
}
