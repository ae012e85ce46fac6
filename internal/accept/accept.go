// Package accept is the accept loop of valnet's listeners (a node's event
// socket, docker's signer relays): every connection handled in its own
// goroutine, and a Close that stops accepting, lets the handlers finish
// for a grace, then cuts what is still open and waits for them.
package accept

import (
	"net"
	"sync"
	"time"
)

// Loop serves the connections of one listener.
type Loop struct {
	ln       net.Listener
	handlers sync.WaitGroup
	mu       sync.Mutex
	open     map[net.Conn]bool // nil once closing
}

// New is a loop over ln's connections; Serve starts it.
func New(ln net.Listener) *Loop {
	return &Loop{ln: ln, open: map[net.Conn]bool{}}
}

// Serve accepts until Close and runs handle for every connection in its
// own goroutine; the connection is closed when handle returns. Call it
// once, after anything handle reads is set.
func (l *Loop) Serve(handle func(net.Conn)) {
	l.handlers.Add(1)
	go func() {
		defer l.handlers.Done()
		for {
			c, err := l.ln.Accept()
			if err != nil {
				return
			}
			if !l.Track(c) {
				c.Close()
				return
			}
			l.handlers.Add(1)
			go func() {
				defer l.handlers.Done()
				defer l.Untrack(c)
				defer c.Close()
				handle(c)
			}()
		}
	}()
}

// Addr is the listener's address.
func (l *Loop) Addr() net.Addr { return l.ln.Addr() }

// Track adds c (a connection a handler opened, e.g. a relay's upstream) to
// those Close cuts; false once Close has begun: the handler should give up.
func (l *Loop) Track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open == nil {
		return false
	}
	l.open[c] = true
	return true
}

// Untrack removes c from those Close cuts.
func (l *Loop) Untrack(c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.open, c)
}

// Close stops accepting, waits up to grace for the handlers to return by
// themselves (the peers close their ends), then closes the connections
// still open and waits for the handlers.
func (l *Loop) Close(grace time.Duration) {
	l.ln.Close()
	done := make(chan struct{})
	go func() { l.handlers.Wait(); close(done) }()
	if grace > 0 {
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
		}
	}
	l.mu.Lock()
	for c := range l.open {
		c.Close()
	}
	l.open = nil
	l.mu.Unlock()
	<-done
}
