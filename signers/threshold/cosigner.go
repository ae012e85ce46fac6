// Package threshold is a MODEL of a horcrux-style threshold signer: N
// cosigners, each a separate TCP endpoint, of which T must take part in
// every signature. The leader runs horcrux v3's two message rounds over
// real connections (which the runner routes through the link fabric): a
// nonce round to every other cosigner, then a sign round to the first T-1
// that answered. Each cosigner keeps its own persisted high-water mark
// and refuses regressions, as horcrux's cosigners do.
//
// What is modelled and what is not: the message pattern, the links, the
// timeouts and the quorum are real; the threshold cryptography is not. The
// nonces and partial signatures are random and hashed bytes of about the
// real sizes, and the signature the node gets is made with one full key
// once the quorum is reached. See docs/threshold.md.
package threshold

import (
	"bytes"
	"crypto/rand"
	"crypto/sha512"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"os"
	"path/filepath"
	"sync"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"

	"github.com/valnet/valnet/internal/atomicfile"
	"github.com/valnet/valnet/internal/signbytes"
	"github.com/valnet/valnet/latency"
)

// Message sizes of the model, per horcrux's Ed25519 threshold scheme: a
// nonce is a 32-byte public point plus one 32-byte encrypted share per
// cosigner; a partial signature is 64 bytes.
const (
	nonceBytes   = 32
	partialBytes = 64
)

// NonceArgs asks a cosigner for its nonces for one signature.
type NonceArgs struct {
	Height int64
	Round  int64
	Step   int
}

// NonceReply is a cosigner's nonce: its public part and a share for each
// cosigner.
type NonceReply struct {
	ID     int
	Public []byte
	Shares [][]byte
}

// SignArgs asks a cosigner for its partial signature over SignBytes with
// the nonces of the signature's quorum.
type SignArgs struct {
	SignBytes []byte
	Nonces    []NonceReply
}

// SignReply is a cosigner's partial signature.
type SignReply struct {
	ID      int
	Partial []byte
}

// mark is a cosigner's persisted high-water mark.
type mark struct {
	Height    int64  `json:"height"`
	Round     int64  `json:"round"`
	Step      int    `json:"step"`
	SignBytes []byte `json:"sign_bytes"`
}

func (m mark) state() signbytes.VoteState {
	return signbytes.VoteState{Height: m.Height, Round: m.Round, Step: signbytes.Step(m.Step)}
}

// cosigner is one cosigner of the cluster: its RPC service, its mark and
// its fault knobs.
type cosigner struct {
	id        int
	cosigners int
	stateFile string

	mu     sync.Mutex
	mark   mark
	down   bool
	slow   latency.Model
	conns  map[net.Conn]bool
	closed chan struct{}
}

func openCosigner(id, n int, stateFile string) (*cosigner, error) {
	c := &cosigner{id: id, cosigners: n, stateFile: stateFile, conns: map[net.Conn]bool{}, closed: make(chan struct{})}
	if err := c.load(); err != nil {
		return nil, err
	}
	return c, nil
}

// load reads the mark back from its file, as a restarted cosigner would.
func (c *cosigner) load() error {
	data, err := os.ReadFile(c.stateFile)
	if errors.Is(err, os.ErrNotExist) {
		return c.save(mark{})
	}
	if err != nil {
		return fmt.Errorf("cosigner %d: %w", c.id, err)
	}
	var m mark
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("cosigner %d: state file %s is damaged (%v); refusing to sign without a high-water mark", c.id, c.stateFile, err)
	}
	c.mark = m
	return nil
}

func (c *cosigner) save(m mark) error {
	if err := os.MkdirAll(filepath.Dir(c.stateFile), 0o700); err != nil {
		return err
	}
	if err := atomicfile.WriteJSON(c.stateFile, 0o600, m); err != nil {
		return fmt.Errorf("cosigner %d: saving its high-water mark: %w", c.id, err)
	}
	c.mark = m
	return nil
}

// setDown takes the cosigner down (its connections are closed and new
// ones hung up on, as a stopped process's port refuses them) or brings it
// back up with its mark read from its file.
func (c *cosigner) setDown(down bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down = down
	if down {
		for conn := range c.conns {
			_ = conn.Close()
		}
		return nil
	}
	return c.load()
}

func (c *cosigner) isDown() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.down
}

func (c *cosigner) setSlow(m latency.Model) {
	c.mu.Lock()
	c.slow = m
	c.mu.Unlock()
}

// wait holds an answer for the cosigner's slowness, if any; it ends at
// once when the cluster closes.
func (c *cosigner) wait() {
	c.mu.Lock()
	m := c.slow
	c.mu.Unlock()
	if m == nil {
		return
	}
	t := time.NewTimer(m.Draw())
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.closed:
	}
}

var errDown = errors.New("cosigner is down")

// nonces makes the cosigner's nonce for one signature.
func (c *cosigner) nonces(a NonceArgs) (NonceReply, error) {
	c.wait()
	if c.isDown() {
		return NonceReply{}, errDown
	}
	r := NonceReply{ID: c.id, Public: random(nonceBytes), Shares: make([][]byte, c.cosigners)}
	for i := range r.Shares {
		r.Shares[i] = random(nonceBytes)
	}
	return r, nil
}

// sign checks the sign bytes against the cosigner's mark, persists the
// new mark, and returns the partial signature.
func (c *cosigner) sign(a SignArgs) (SignReply, error) {
	c.wait()
	vs, err := signbytes.Parse(a.SignBytes)
	if err != nil {
		return SignReply{}, fmt.Errorf("cosigner %d: %w", c.id, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return SignReply{}, errDown
	}
	last := c.mark.state()
	switch {
	case vs.After(last):
	case vs == last && (bytes.Equal(a.SignBytes, c.mark.SignBytes) || sameButTimestamp(a.SignBytes, c.mark.SignBytes)):
		// the same vote asked again (a retried signature): horcrux signs
		// it again rather than fail the node
	default:
		return SignReply{}, fmt.Errorf("cosigner %d refuses %s: its high-water mark is %s (regression or conflicting data)", c.id, vs, last)
	}
	if err := c.save(mark{Height: vs.Height, Round: vs.Round, Step: int(vs.Step), SignBytes: a.SignBytes}); err != nil {
		return SignReply{}, err
	}
	h := sha512.New()
	h.Write(a.SignBytes)
	for _, n := range a.Nonces {
		h.Write(n.Public)
	}
	return SignReply{ID: c.id, Partial: h.Sum(nil)[:partialBytes]}, nil
}

func random(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// service is the cosigner's RPC face (net/rpc): Cosigner.Nonces and
// Cosigner.Sign.
type service struct{ c *cosigner }

func (s *service) Nonces(a NonceArgs, r *NonceReply) (err error) {
	*r, err = s.c.nonces(a)
	return err
}

func (s *service) Sign(a SignArgs, r *SignReply) (err error) {
	*r, err = s.c.sign(a)
	return err
}

// serve accepts the cluster leader's connections on ln until it closes;
// while the cosigner is down a connection is closed at once.
func (c *cosigner) serve(ln net.Listener, wg *sync.WaitGroup) {
	defer wg.Done()
	srv := rpc.NewServer()
	if err := srv.RegisterName("Cosigner", &service{c}); err != nil {
		panic(err) // the method set is fixed: a bug
	}
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		c.mu.Lock()
		if c.down {
			c.mu.Unlock()
			_ = conn.Close()
			continue
		}
		c.conns[conn] = true
		c.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			srv.ServeConn(conn)
			c.mu.Lock()
			delete(c.conns, conn)
			c.mu.Unlock()
		}()
	}
}

// closeConns closes every connection the cosigner serves.
func (c *cosigner) closeConns() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for conn := range c.conns {
		_ = conn.Close()
	}
}

// sameButTimestamp reports whether two sign bytes of the same vote or
// proposal differ only in their timestamp (CometBFT's FilePV lets a
// signer sign such a retry again; so do horcrux's cosigners).
func sameButTimestamp(a, b []byte) bool {
	ca, okA := withoutTimestamp(a)
	cb, okB := withoutTimestamp(b)
	return okA && okB && bytes.Equal(ca, cb)
}

func withoutTimestamp(b []byte) ([]byte, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n != uint64(len(b)-k) {
		return nil, false
	}
	body := b[k:]
	var v cmtproto.CanonicalVote
	if err := v.Unmarshal(body); err == nil && (v.Type == cmtproto.PrevoteType || v.Type == cmtproto.PrecommitType) {
		v.Timestamp = time.Time{}
		out, err := v.Marshal()
		return out, err == nil
	}
	var p cmtproto.CanonicalProposal
	if err := p.Unmarshal(body); err != nil || p.Type != cmtproto.ProposalType {
		return nil, false
	}
	p.Timestamp = time.Time{}
	out, err := p.Marshal()
	return out, err == nil
}
