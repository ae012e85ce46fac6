package signers

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/cometbft/cometbft/privval"
	"github.com/jonboulle/clockwork"
)

// redialer is the signer side's connection to a node: it dials until the
// node is up, hands CometBFT's signer endpoint a connection whose errors
// make the endpoint drop it and dial again, and stops for good on stop.
//
// Both are needed with CometBFT v1.0.1: its endpoint drops a connection
// only on errors with a Timeout method (a node that went away gives a
// plain EOF, and the endpoint would spin on the dead connection), and its
// own retry loop cannot be stopped while it redials.
type redialer struct {
	dial  privval.SocketDialer
	stop  chan struct{}
	once  sync.Once
	mu    sync.Mutex
	conn  net.Conn
	pause time.Duration
	clock clockwork.Clock // the pause between dials is on it
}

// errSignerStopped ends the dial loop.
var errSignerStopped = errors.New("signer stopped")

func newRedialer(dial privval.SocketDialer, clock clockwork.Clock) *redialer {
	return &redialer{dial: dial, stop: make(chan struct{}), pause: 100 * time.Millisecond, clock: clockOr(clock)}
}

// Dial is a privval.SocketDialer that waits for the node.
func (r *redialer) Dial() (net.Conn, error) {
	for {
		select {
		case <-r.stop:
			return nil, errSignerStopped
		default:
		}
		c, err := r.dial()
		if err == nil {
			r.mu.Lock()
			defer r.mu.Unlock()
			select {
			case <-r.stop:
				c.Close()
				return nil, errSignerStopped
			default:
			}
			r.conn = c
			return &lossConn{Conn: c}, nil
		}
		if !sleepOn(r.clock, r.pause, r.stop) {
			return nil, errSignerStopped
		}
	}
}

// Stop ends dialing and closes the current connection, so a read in
// progress ends now rather than at the node's next ping.
func (r *redialer) Stop() {
	r.once.Do(func() {
		close(r.stop)
		r.mu.Lock()
		if r.conn != nil {
			_ = r.conn.Close()
		}
		r.mu.Unlock()
	})
}

// lossConn reports every read and write error as one the endpoint drops
// (either end of the hop: the signer's redialer, the node's gateListener).
type lossConn struct{ net.Conn }

type errConnLost struct{ err error }

func (e *errConnLost) Error() string   { return "remote-signer connection lost: " + e.err.Error() }
func (e *errConnLost) Unwrap() error   { return e.err }
func (e *errConnLost) Timeout() bool   { return false }
func (e *errConnLost) Temporary() bool { return false }

func (c *lossConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	return n, lost(err)
}

func (c *lossConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	return n, lost(err)
}

func lost(err error) error {
	if err == nil {
		return nil
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return err
	}
	return &errConnLost{err}
}
