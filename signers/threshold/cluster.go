package threshold

import (
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/cometbft/cometbft/crypto"

	"github.com/valnet/valnet/internal/signbytes"
	"github.com/valnet/valnet/latency"
)

// Model names the protocol model in labels, events and reports.
const Model = "horcrux-v3 protocol MODEL"

// DefaultTimeout is the wait for one cosigner's answer: horcrux's
// grpcTimeout default, 500ms since v3.2.0 (cmd/horcrux/cmd/config.go,
// commit 5794a02; 1500ms before).
const DefaultTimeout = 500 * time.Millisecond

// Config is one threshold signer: Cosigners endpoints, Threshold of which
// sign each signature.
type Config struct {
	Cosigners int
	Threshold int
	Timeout   time.Duration // per cosigner call; 0: DefaultTimeout
	StateDir  string        // each cosigner's high-water mark: cosigner-K.json
	Observer  Observer      // receives every signature's rounds; nil: none
}

// Round is what the leader saw of one signature: who led, how long the
// quorum took, who answered.
type Round struct {
	Height int64
	Round  int64
	Phase  string
	Leader int // 1-based
	Start  time.Time
	// Nonces is the nonce round (until T-1 other cosigners answered);
	// Quorum the time until the T-th partial signature was in hand.
	Nonces, Quorum time.Duration
	Answered       []int     // cosigners whose partial signatures made the quorum, in order
	Failed         []Failure // cosigners asked that did not answer, and why
	Err            error     // no quorum: the signature failed
}

// Failure is a cosigner that did not answer in a round.
type Failure struct {
	Cosigner int
	Round    string // "nonce" or "sign"
	Reason   string
}

// Observer receives every Round. It is called on the signing goroutine.
type Observer interface {
	Cosigned(Round)
}

// ObserverFunc adapts a function to an Observer.
type ObserverFunc func(Round)

func (f ObserverFunc) Cosigned(r Round) { f(r) }

// Cluster is the cosigners of one threshold signer, each listening on its
// own address, and the leader's connections between them.
type Cluster struct {
	cfg       Config
	cosigners []*cosigner // index K-1
	listeners []net.Listener
	wg        sync.WaitGroup
	closed    chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex
	routes  map[[2]int]string // from, to (1-based) -> the address from dials to reach to
	clients map[[2]int]*rpc.Client
}

// Start opens the cosigners, each listening on 127.0.0.1.
func Start(cfg Config) (*Cluster, error) {
	if cfg.Cosigners < 2 || cfg.Threshold < 1 || cfg.Threshold > cfg.Cosigners {
		return nil, fmt.Errorf("threshold signer: %d of %d cosigners is not a threshold", cfg.Threshold, cfg.Cosigners)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	c := &Cluster{cfg: cfg, closed: make(chan struct{}), routes: map[[2]int]string{}, clients: map[[2]int]*rpc.Client{}}
	for k := 1; k <= cfg.Cosigners; k++ {
		cs, err := openCosigner(k, cfg.Cosigners, filepath.Join(cfg.StateDir, fmt.Sprintf("cosigner-%d.json", k)))
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		cs.closed = c.closed
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("cosigner %d: %w", k, err)
		}
		c.cosigners = append(c.cosigners, cs)
		c.listeners = append(c.listeners, ln)
		c.wg.Add(1)
		go cs.serve(ln, &c.wg)
	}
	return c, nil
}

// Label names the signer in a run's labels: threshold(2of3, MODEL).
func (c *Cluster) Label() string { return Label(c.cfg.Threshold, c.cfg.Cosigners) }

// Label is the label of a threshold signer of t of n cosigners.
func Label(t, n int) string { return fmt.Sprintf("threshold(%dof%d, %s)", t, n, Model) }

// Config is the cluster's configuration, defaults applied.
func (c *Cluster) Config() Config { return c.cfg }

// Addr is cosigner k's listen address (1-based).
func (c *Cluster) Addr(k int) string { return c.listeners[k-1].Addr().String() }

// SetRoute says where cosigner from dials to reach cosigner to (a fabric
// route); without one it dials to's own address.
func (c *Cluster) SetRoute(from, to int, addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.routes[[2]int{from, to}] = addr
	if cl := c.clients[[2]int{from, to}]; cl != nil {
		_ = cl.Close()
		delete(c.clients, [2]int{from, to})
	}
}

// SetDown takes cosigner k down or brings it back up (reading its mark
// back from its file, as a restarted cosigner).
func (c *Cluster) SetDown(k int, down bool) error {
	if k < 1 || k > len(c.cosigners) {
		return fmt.Errorf("threshold signer has cosigners 1..%d, not %d", len(c.cosigners), k)
	}
	return c.cosigners[k-1].setDown(down)
}

// SetSlow delays each of cosigner k's answers by draws of m (nil: no delay).
func (c *Cluster) SetSlow(k int, m latency.Model) error {
	if k < 1 || k > len(c.cosigners) {
		return fmt.Errorf("threshold signer has cosigners 1..%d, not %d", len(c.cosigners), k)
	}
	c.cosigners[k-1].setSlow(m)
	return nil
}

// Close stops every cosigner and connection and waits for them.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		for _, ln := range c.listeners {
			_ = ln.Close()
		}
		c.mu.Lock()
		for _, cl := range c.clients {
			_ = cl.Close()
		}
		c.clients = map[[2]int]*rpc.Client{}
		c.mu.Unlock()
		for _, cs := range c.cosigners {
			cs.closeConns()
		}
	})
	c.wg.Wait()
	return nil
}

// leader is the cosigner that leads: the lowest-numbered one that is up.
// (horcrux elects it with raft; the model elects at once.)
func (c *Cluster) leader() (int, bool) {
	for _, cs := range c.cosigners {
		if !cs.isDown() {
			return cs.id, true
		}
	}
	return 0, false
}

// client is the leader's connection to a cosigner, dialled on first use
// and again after it broke.
func (c *Cluster) client(from, to int) (*rpc.Client, error) {
	key := [2]int{from, to}
	c.mu.Lock()
	if cl := c.clients[key]; cl != nil {
		c.mu.Unlock()
		return cl, nil
	}
	addr, ok := c.routes[key]
	if !ok {
		addr = c.Addr(to)
	}
	c.mu.Unlock()
	conn, err := net.DialTimeout("tcp", addr, c.cfg.Timeout)
	if err != nil {
		return nil, err
	}
	cl := rpc.NewClient(conn)
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev := c.clients[key]; prev != nil {
		_ = cl.Close()
		return prev, nil
	}
	c.clients[key] = cl
	return cl, nil
}

// drop forgets a broken connection.
func (c *Cluster) drop(from, to int, cl *rpc.Client) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clients[[2]int{from, to}] == cl {
		delete(c.clients, [2]int{from, to})
		_ = cl.Close()
	}
}

var errTimeout = errors.New("no answer within the timeout")

// call asks cosigner to for method, from the leader from, and waits at
// most the timeout. The leader's own cosigner is called in place.
func (c *Cluster) call(from, to int, method string, args, reply any) error {
	if from == to {
		s := &service{c.cosigners[to-1]}
		switch method {
		case "Cosigner.Nonces":
			return s.Nonces(args.(NonceArgs), reply.(*NonceReply))
		default:
			return s.Sign(args.(SignArgs), reply.(*SignReply))
		}
	}
	cl, err := c.client(from, to)
	if err != nil {
		return err
	}
	t := time.NewTimer(c.cfg.Timeout)
	defer t.Stop()
	// The call decodes into a reply of its own: an answer that comes after
	// the timeout is still written by the client's reader, and must not
	// land in the caller's reply, which it has moved on with.
	own := reflect.New(reflect.TypeOf(reply).Elem())
	call := cl.Go(method, args, own.Interface(), make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		if errors.Is(call.Error, rpc.ErrShutdown) || isConnErr(call.Error) {
			c.drop(from, to, cl)
		}
		if call.Error == nil {
			reflect.ValueOf(reply).Elem().Set(own.Elem())
		}
		return call.Error
	case <-t.C:
		return fmt.Errorf("%w (%v)", errTimeout, c.cfg.Timeout)
	case <-c.closed:
		return errors.New("threshold signer closed")
	}
}

// isConnErr tells a broken connection from an error the cosigner answered.
func isConnErr(err error) bool {
	var se rpc.ServerError
	return err != nil && !errors.As(err, &se)
}

// KeySigner is the leader's face to the signer chain: it runs the rounds
// for each signature, then signs with full (the one full key of the
// model).
type KeySigner struct {
	c    *Cluster
	full interface {
		PubKey() crypto.PubKey
		Sign(kind string, msg []byte) ([]byte, error)
	}
	now func() time.Time
}

// Signer returns the cluster's KeySigner over the full key.
func (c *Cluster) Signer(full interface {
	PubKey() crypto.PubKey
	Sign(kind string, msg []byte) ([]byte, error)
}) *KeySigner {
	return &KeySigner{c: c, full: full, now: time.Now}
}

func (s *KeySigner) PubKey() crypto.PubKey { return s.full.PubKey() }

// Sign runs the nonce and sign rounds for msg and, with a quorum, signs
// it with the full key; without one it fails, and the node misses the vote.
func (s *KeySigner) Sign(kind string, msg []byte) ([]byte, error) {
	vs, err := signbytes.Parse(msg)
	if err != nil {
		// Not a vote or proposal (a vote extension, SignBytes): horcrux
		// signs those too, through the same rounds; the model cannot
		// name their height, so it refuses rather than guess.
		return nil, fmt.Errorf("threshold signer (%s): %w", Model, err)
	}
	r := Round{Height: vs.Height, Round: vs.Round, Phase: kind, Start: s.now()}
	err = s.rounds(&r, vs, msg)
	r.Err = err
	if obs := s.c.cfg.Observer; obs != nil {
		obs.Cosigned(r)
	}
	if err != nil {
		return nil, err
	}
	return s.full.Sign(kind, msg)
}

type answer[T any] struct {
	from  int
	reply T
	err   error
}

// rounds runs the nonce round (every other cosigner; the first T-1 to
// answer form the quorum with the leader) and the sign round (the quorum).
func (s *KeySigner) rounds(r *Round, vs signbytes.VoteState, msg []byte) error {
	c := s.c
	leader, ok := c.leader()
	if !ok {
		return errors.New("threshold signer: every cosigner is down")
	}
	r.Leader = leader
	t := c.cfg.Threshold
	na := NonceArgs{Height: vs.Height, Round: vs.Round, Step: int(vs.Step)}
	var own NonceReply
	if err := c.call(leader, leader, "Cosigner.Nonces", na, &own); err != nil {
		return fmt.Errorf("threshold signer: leader %d: %w", leader, err)
	}
	// Nonce round: ask every other cosigner at once, keep the first T-1.
	answers := make(chan answer[NonceReply], c.cfg.Cosigners)
	asked := 0
	for k := 1; k <= c.cfg.Cosigners; k++ {
		if k == leader {
			continue
		}
		asked++
		go func(k int) {
			var rep NonceReply
			err := c.call(leader, k, "Cosigner.Nonces", na, &rep)
			answers <- answer[NonceReply]{from: k, reply: rep, err: err}
		}(k)
	}
	nonces := []NonceReply{own}
	quorum := []int{leader}
	for i := 0; i < asked && len(quorum) < t; i++ {
		a := <-answers
		if a.err != nil {
			r.Failed = append(r.Failed, Failure{Cosigner: a.from, Round: "nonce", Reason: a.err.Error()})
			continue
		}
		nonces = append(nonces, a.reply)
		quorum = append(quorum, a.from)
	}
	r.Nonces = s.now().Sub(r.Start)
	if len(quorum) < t {
		return fmt.Errorf("threshold signer: %d of %d cosigners answered the nonce round, %d needed (%s)", len(quorum), c.cfg.Cosigners, t, failures(r.Failed))
	}
	// Sign round: the quorum, the leader included, each with the nonces.
	sa := SignArgs{SignBytes: msg, Nonces: nonces}
	signed := make(chan answer[SignReply], len(quorum))
	for _, k := range quorum {
		go func(k int) {
			var rep SignReply
			err := c.call(leader, k, "Cosigner.Sign", sa, &rep)
			signed <- answer[SignReply]{from: k, reply: rep, err: err}
		}(k)
	}
	for range quorum {
		a := <-signed
		if a.err != nil {
			r.Failed = append(r.Failed, Failure{Cosigner: a.from, Round: "sign", Reason: a.err.Error()})
			continue
		}
		r.Answered = append(r.Answered, a.from)
	}
	r.Quorum = s.now().Sub(r.Start)
	sort.Ints(r.Answered)
	if len(r.Answered) < t {
		return fmt.Errorf("threshold signer: %d of the quorum's %d partial signatures came back, %d needed (%s)", len(r.Answered), len(quorum), t, failures(r.Failed))
	}
	return nil
}

func failures(fs []Failure) string {
	out := ""
	for i, f := range fs {
		if i > 0 {
			out += "; "
		}
		out += fmt.Sprintf("cosigner %d, %s round: %s", f.Cosigner, f.Round, f.Reason)
	}
	return out
}

// Fault texts, the same on every backend (the runner's timeline and the
// sim's).
func DownText(k int) string {
	return fmt.Sprintf("cosigner %d down: its connections closed, new ones hung up on", k)
}
func UpText(k int) string {
	return fmt.Sprintf("cosigner %d up again, its high-water mark read back from its file", k)
}
func SlowText(k int, m latency.Model) string {
	return fmt.Sprintf("cosigner %d answers each round after %s", k, m)
}
func FastText(k int) string { return fmt.Sprintf("cosigner %d answers at once again", k) }
