package signers

import (
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/cometbft/cometbft/crypto"
	p2pconn "github.com/cometbft/cometbft/p2p/conn"
	"github.com/cometbft/cometbft/privval"

	"github.com/valnet/valnet/internal/signeraddr"
)

// SecretConnection identities on the remote-signer hop (tcp only): the
// node accepts only the signers it expects (ClientConfig.AllowedSigners),
// and a signer signs only for the node it expects (ServerConfig.ExpectedNode,
// ServeConfig.NodeID). An identity is written as its address in hex, as
// `valnet signer serve` prints its own.

// IdentityError is a peer on the hop whose SecretConnection identity is
// not the expected one.
type IdentityError struct {
	Peer string   // "signer" or "node": who was refused
	Got  string   // its identity (address, hex)
	Want []string // the identities expected
}

func (e *IdentityError) Error() string {
	return fmt.Sprintf("refused the %s: its SecretConnection identity is %s, expected %s", e.Peer, e.Got, strings.Join(e.Want, " or "))
}

// IdentityOf is the written form of a SecretConnection identity.
func IdentityOf(k crypto.PubKey) string { return fmt.Sprintf("%X", k.Address()) }

// ParseIdentity reads an identity as written by IdentityOf (any case).
func ParseIdentity(s string) (string, error) { return signeraddr.ParseIdentity(s) }

// checkIdentity is nil when c's peer has one of the identities want (or
// want is empty); otherwise an *IdentityError. A connection that is not a
// SecretConnection (a unix socket) has no identity and is not checked.
func checkIdentity(c net.Conn, peer string, want []string) *IdentityError {
	sc, ok := c.(*p2pconn.SecretConnection)
	if !ok || len(want) == 0 {
		return nil
	}
	got := IdentityOf(sc.RemotePubKey())
	for _, w := range want {
		if w == got {
			return nil
		}
	}
	return &IdentityError{Peer: peer, Got: got, Want: want}
}

func identitiesOf(keys []crypto.PubKey) []string {
	var out []string
	for _, k := range keys {
		out = append(out, IdentityOf(k))
	}
	return out
}

const maxRefusalsRemembered = 1024

// refusals remembers the identities refused, so that each is said once
// (a refused peer redials every 100 ms) and the last one can be named by
// an error later.
type refusals struct {
	mu   sync.Mutex
	seen map[string]bool
	last error
	n    int64 // refusals in all, said or not
}

// note records err and says whether it is the first refusal of its peer.
func (r *refusals) note(err *IdentityError) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil || len(r.seen) >= maxRefusalsRemembered {
		r.seen = map[string]bool{} // a peer making up keys cannot grow it without bound
	}
	r.last = err
	r.n++
	first := !r.seen[err.Got]
	r.seen[err.Got] = true
	return first
}

// count is how many refusals there were.
func (r *refusals) count() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

func (r *refusals) lastErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// pinnedDial is dial, hanging up on a node whose identity is not one of
// want (none: any node) with an *IdentityError; say is told each refused
// identity once.
func pinnedDial(dial privval.SocketDialer, want []string, refused *refusals, say func(error)) privval.SocketDialer {
	if len(want) == 0 {
		return dial
	}
	return func() (net.Conn, error) {
		c, err := dial()
		if err != nil {
			return nil, err
		}
		if err := checkIdentity(c, "node", want); err != nil {
			c.Close()
			if refused.note(err) && say != nil {
				say(err)
			}
			return nil, err
		}
		return c, nil
	}
}
