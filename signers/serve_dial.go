package signers

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/cometbft/cometbft/privval"

	"github.com/valnet/valnet/internal/signeraddr"
)

// A standalone signer dials the node (the node listens on its
// priv_validator_laddr) and dials again whenever the connection is lost,
// for as long as it runs.

// ParseNodeAddr splits a node's priv_validator_laddr into network and
// address.
func ParseNodeAddr(s string) (network, address string, err error) {
	network, address, err = signeraddr.Parse(s)
	if err != nil {
		return "", "", fmt.Errorf("node %w", err)
	}
	return network, address, nil
}

// redialPause is the wait between two dials of a node that is not there.
const redialPause = 100 * time.Millisecond

// errStopped ends the dial loop when the signer stops.
var errStopped = errors.New("signer stopped")

// dial connects to the node, retrying every 100 ms until it is up or the
// signer stops. CometBFT's own retry loop cannot be stopped while it
// redials, so it is given one "retry" that lasts as long as needed.
func (s *Serve) dial() (net.Conn, error) {
	var dial privval.SocketDialer
	if s.network == NetTCP {
		dial = privval.DialTCPFn(s.address, 5*time.Second, s.identity)
		if s.cfg.NodeID != "" {
			want, _ := ParseIdentity(s.cfg.NodeID)
			dial = pinnedDial(dial, []string{want}, &s.refused, func(err error) {
				s.logf("%v (node_id); redialing every 100ms", err)
			})
		}
	} else {
		dial = privval.DialUnixFn(s.address)
	}
	dial = dialectDial(dial, s.cfg.Dialect)
	for {
		if s.stopping() {
			return nil, errStopped
		}
		s.dials.Add(1)
		c, err := dial()
		if err == nil {
			nc := &nodeConn{Conn: c, s: s}
			s.connMu.Lock()
			if s.stopping() {
				s.connMu.Unlock()
				c.Close()
				return nil, errStopped
			}
			s.conn, s.dialFailed = nc, false
			again := s.everUp
			s.everUp = true
			s.connMu.Unlock()
			if again {
				s.logf("reconnected to the node")
			} else {
				s.logf("connected to the node")
			}
			return nc, nil
		}
		var refused *IdentityError
		s.connMu.Lock()
		first := !s.dialFailed && !errors.As(err, &refused) // a refusal is said by pinnedDial
		s.dialFailed = s.dialFailed || first
		s.connMu.Unlock()
		if first {
			s.logf("node not reachable (%v); redialing every 100ms", err)
		}
		if !sleepOn(s.clock, redialPause, s.stopCh) {
			return nil, errStopped
		}
	}
}

// nodeConn is the connection to the node. CometBFT's signer endpoint drops
// a connection (and so redials) only on errors that have a Timeout method;
// a node that closed its end gives io.EOF, on which CometBFT v1.0.1 would
// spin on the dead connection forever. Every read and write error is
// therefore passed on as a connLost, which has that method.
type nodeConn struct {
	net.Conn
	s    *Serve
	once sync.Once
}

type connLost struct{ err error }

func (e *connLost) Error() string { return "connection to the node lost: " + e.err.Error() }
func (e *connLost) Unwrap() error { return e.err }
func (e *connLost) Timeout() bool { return false }

func (c *nodeConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	return n, c.lost(err)
}

func (c *nodeConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	return n, c.lost(err)
}

func (c *nodeConn) lost(err error) error {
	if err == nil {
		return nil
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return err // CometBFT drops it already
	}
	c.once.Do(func() {
		if !c.s.stopping() {
			c.s.logf("connection to the node lost (%v); redialing", err)
		}
	})
	return &connLost{err}
}
