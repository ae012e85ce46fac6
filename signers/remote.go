package signers

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	privvalproto "github.com/cometbft/cometbft/api/cometbft/privval/v1"
	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"
	cmtlog "github.com/cometbft/cometbft/libs/log"
	"github.com/cometbft/cometbft/libs/service"
	"github.com/cometbft/cometbft/privval"
	"github.com/jonboulle/clockwork"

	"github.com/valnet/valnet/internal/unixsock"
)

// The remote-signer hop: CometBFT's own privval protocol between a node
// (which listens, like a node with priv_validator_laddr set) and a signer
// (which dials, like tmkms or gnokms). TCP runs over SecretConnection;
// unix sockets are plain, as in CometBFT.

// Transports of the remote hop.
const (
	NetTCP  = "tcp"
	NetUnix = "unix"
)

// ClientConfig configures the node side of the hop.
type ClientConfig struct {
	Network string // tcp | unix
	Address string // host:port for tcp, a socket path for unix
	ChainID string
	// NodeKey is the node's SecretConnection identity (tcp only).
	NodeKey ed25519.PrivKey
	// AllowedSigners are the SecretConnection identities the node accepts
	// (tcp only); a signer with another key is disconnected at once.
	// Empty: any signer (what a stock CometBFT node does).
	AllowedSigners []crypto.PubKey
	// AllowedIdentities are more of them, written as IdentityOf writes
	// them (a scenario's signer.identity).
	AllowedIdentities []string
	Logger            cmtlog.Logger
}

// RemoteClient is the node side: a Signer whose every call goes over the
// wire to a remote signer. It retries a broken connection as CometBFT's
// node does (50 tries, 100 ms apart).
type RemoteClient struct {
	endpoint *privval.SignerListenerEndpoint
	client   *privval.RetrySignerClient
	addr     string
	cleanup  func()
	auth     *authListener // tcp
	gate     *gateListener
}

var (
	_ Signer = (*RemoteClient)(nil)
	_ Closer = (*RemoteClient)(nil)
)

// Retry policy of CometBFT's node for its remote signer (node/setup.go).
const (
	remoteRetries    = 50
	remoteRetryPause = 100 * time.Millisecond
)

// ListenRemote starts listening for a remote signer. It returns at once;
// the first call that needs the signer waits for it to connect.
func ListenRemote(cfg ClientConfig) (*RemoteClient, error) {
	if cfg.Logger == nil {
		cfg.Logger = cmtlog.NewNopLogger()
	}
	var ln net.Listener
	var err error
	if cfg.Network == NetUnix {
		ln, err = unixsock.Listen(cfg.Address) // 0600
	} else {
		ln, err = net.Listen(cfg.Network, cfg.Address)
	}
	if err != nil {
		return nil, fmt.Errorf("remote signer listener on %s://%s: %w", cfg.Network, cfg.Address, err)
	}
	var (
		listener net.Listener
		auth     *authListener
		cleanup  = func() {}
	)
	switch cfg.Network {
	case NetTCP:
		if cfg.NodeKey == nil {
			ln.Close()
			return nil, errors.New("remote signer listener: tcp needs a node key")
		}
		auth = &authListener{TCPListener: privval.NewTCPListener(ln, cfg.NodeKey), allowed: append(identitiesOf(cfg.AllowedSigners), cfg.AllowedIdentities...), logger: cfg.Logger}
		listener = auth
	case NetUnix:
		listener = privval.NewUnixListener(ln)
		cleanup = func() { _ = os.Remove(cfg.Address) }
	default:
		ln.Close()
		return nil, fmt.Errorf("remote signer: unknown network %q (allowed: tcp, unix)", cfg.Network)
	}
	gate := &gateListener{Listener: listener}
	endpoint := privval.NewSignerListenerEndpoint(cfg.Logger.With("module", "privval"), gate)
	sc, err := privval.NewSignerClient(endpoint, cfg.ChainID)
	if err != nil {
		ln.Close()
		cleanup()
		return nil, err
	}
	return &RemoteClient{endpoint: endpoint, client: privval.NewRetrySignerClient(sc, remoteRetries, remoteRetryPause),
		addr: ln.Addr().String(), cleanup: cleanup, auth: auth, gate: gate}, nil
}

// Addr is the address the node listens on (with the port the kernel chose
// for a ":0" address).
func (c *RemoteClient) Addr() string { return c.addr }

// WaitForSigner blocks until a signer is connected or maxWait passes. If
// none connected and a signer with an unexpected identity was refused,
// the error says so (expected and got).
func (c *RemoteClient) WaitForSigner(maxWait time.Duration) error {
	err := c.client.WaitForConnection(maxWait)
	if err != nil {
		if r := c.Refused(); r != nil {
			return fmt.Errorf("%w (%v)", r, err)
		}
	}
	return err
}

// Cut cuts the node's end of the link (true) or mends it (false): while
// cut, the connection is closed and every signer that dials in is hung
// up on at once, as if the link between them were down. It is how a
// signer valnet does not run (type external) has an outage.
func (c *RemoteClient) Cut(cut bool) { c.gate.setCut(cut) }

// Dialled says what reached the listener before a signer was connected,
// for an error: nothing, a failed SecretConnection handshake, or a
// refused identity.
func (c *RemoteClient) Dialled() string {
	if r := c.Refused(); r != nil {
		return r.Error()
	}
	if c.auth != nil {
		if n, last := c.auth.failures(); n > 0 {
			return fmt.Sprintf("%d connection(s) came but failed the SecretConnection handshake (last: %v): is the signer speaking CometBFT's privval protocol over tcp?", n, last)
		}
	}
	return "nothing dialled in"
}

// PeerDialect is the privval layout the signer answered its last PubKey
// request in: DialectV038, DialectV1, DialectAuto (both), or "" before
// any answer.
func (c *RemoteClient) PeerDialect() Dialect { return c.gate.peerDialect() }

// Refused is the last signer refused for its identity (an *IdentityError),
// nil if none.
func (c *RemoteClient) Refused() error {
	if c.auth == nil {
		return nil
	}
	return c.auth.refused.lastErr()
}

func (c *RemoteClient) GetPubKey() (crypto.PubKey, error) { return c.client.GetPubKey() }

// SignVote asks the signer and takes from its answer what CometBFT's
// consensus takes (types.SignAndCheckVote: the signature, the timestamp
// and the extension signature), onto the vote the node asked for. A
// signer may answer sparsely, with only those set (horcrux does: type,
// height, round and block ID zero); CometBFT's client copies the whole
// answer over the request, and consensus reads only those three fields,
// so a stock node accepts it. The request's own fields stay, so every
// layer above sees what was asked and can verify the signature over it.
func (c *RemoteClient) SignVote(chainID string, vote *cmtproto.Vote, ext bool) error {
	answer := *vote
	if err := c.client.SignVote(chainID, &answer, ext); err != nil {
		return err
	}
	*vote = takeVoteAnswer(*vote, &answer)
	return nil
}

// SignProposal is SignVote's rule for a proposal: the answer's signature
// and timestamp onto the proposal asked for.
func (c *RemoteClient) SignProposal(chainID string, p *cmtproto.Proposal) error {
	answer := *p
	if err := c.client.SignProposal(chainID, &answer); err != nil {
		return err
	}
	*p = takeProposalAnswer(*p, &answer)
	return nil
}

func (c *RemoteClient) SignBytes(b []byte) ([]byte, error) { return c.client.SignBytes(b) }

// Close stops listening and drops the connection.
func (c *RemoteClient) Close() error {
	err := c.endpoint.Stop()
	c.cleanup()
	if errors.Is(err, service.ErrAlreadyStopped) {
		return nil
	}
	return err
}

// authListener accepts only signers whose SecretConnection identity is
// allowed: anybody who can reach the port could otherwise offer signatures
// and learn what the validator is about to sign.
type authListener struct {
	*privval.TCPListener
	allowed []string
	logger  cmtlog.Logger
	refused refusals

	mu        sync.Mutex
	handshake int   // connections that failed the SecretConnection handshake
	lastFail  error // the last of them
}

func (l *authListener) Accept() (net.Conn, error) {
	for {
		c, err := l.TCPListener.Accept()
		if err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
				l.mu.Lock()
				l.handshake++
				l.lastFail = err
				l.mu.Unlock()
			}
			return nil, err
		}
		ie := checkIdentity(c, "signer", l.allowed)
		if ie == nil {
			return c, nil
		}
		if l.refused.note(ie) {
			l.logger.Error(ie.Error())
		}
		c.Close()
	}
}

func (l *authListener) failures() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.handshake, l.lastFail
}

// gateListener is the node's end of the link, which Cut cuts: while cut
// it hangs up on every connection. The connections it hands out report
// every error as one CometBFT's endpoint drops (lossConn), so the node
// takes the next connection when the link is back.
type gateListener struct {
	net.Listener
	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
	last  *dialectConn // the latest connection handed out
}

// peerDialect is the privval layout of the latest signer's PubKey answer.
func (g *gateListener) peerDialect() Dialect {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last == nil {
		return ""
	}
	return g.last.PeerDialect()
}

func (g *gateListener) Accept() (net.Conn, error) {
	for {
		c, err := g.Listener.Accept()
		if err != nil {
			return nil, err
		}
		g.mu.Lock()
		if g.cut {
			g.mu.Unlock()
			c.Close()
			continue
		}
		if g.conns == nil {
			g.conns = map[net.Conn]bool{}
		}
		g.conns[c] = true
		// Either dialect's answers reach CometBFT's v1 client in v1's
		// layout (dialect.go).
		dc := newDialectConn(&gatedConn{Conn: c, g: g}, DialectV1)
		g.last = dc
		g.mu.Unlock()
		return &lossConn{Conn: dc}, nil
	}
}

func (g *gateListener) setCut(cut bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cut = cut
	if cut {
		for c := range g.conns {
			_ = c.Close()
		}
		clear(g.conns)
	}
}

// gatedConn forgets itself when closed.
type gatedConn struct {
	net.Conn
	g *gateListener
}

func (c *gatedConn) Close() error {
	c.g.mu.Lock()
	delete(c.g.conns, c.Conn)
	c.g.mu.Unlock()
	return c.Conn.Close()
}

// ServerConfig configures the signer side of the hop.
type ServerConfig struct {
	Network string // tcp | unix
	Address string // where the node listens
	ChainID string
	// IdentityKey is the signer's SecretConnection identity (tcp only).
	IdentityKey ed25519.PrivKey
	// ExpectedNode is the node's SecretConnection identity (tcp only): a
	// node with another key is hung up on before any request. nil: any
	// node (a stock CometBFT v1.0 node makes a new listener key at every
	// start, so it cannot be pinned).
	ExpectedNode crypto.PubKey
	Signer       Signer // the guarded backend chain that really signs
	// Dialect is the privval layout the node reads (dialect.go): v1 for a
	// CometBFT v1 node, v0.38 for v0.34 to v0.40; "" or auto answers in
	// both at once.
	Dialect Dialect
	// RedialForever is kept for callers; the server always dials until the
	// node is up and again after it restarts (tmkms behaviour), until Stop.
	RedialForever bool
	Logger        cmtlog.Logger
	// Clock spaces the redials to a node that is not there; nil: the real
	// clock.
	Clock clockwork.Clock
}

// RemoteServer is the signer side: it dials the node and answers its
// requests with Signer.
type RemoteServer struct {
	mu       sync.Mutex
	cfg      ServerConfig
	redialer *redialer
	dialer   *privval.SignerDialerEndpoint
	server   *privval.SignerServer
	running  bool
	refused  refusals
}

// ServeRemote dials the node and serves signatures until Stop.
func ServeRemote(cfg ServerConfig) (*RemoteServer, error) {
	if cfg.Logger == nil {
		cfg.Logger = cmtlog.NewNopLogger()
	}
	s := &RemoteServer{cfg: cfg}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// Start (re)starts serving: used to bring a stopped signer back.
func (s *RemoteServer) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return nil
	}
	cfg := s.cfg
	var dial privval.SocketDialer
	switch cfg.Network {
	case NetTCP:
		dial = privval.DialTCPFn(cfg.Address, 5*time.Second, cfg.IdentityKey)
	case NetUnix:
		dial = privval.DialUnixFn(cfg.Address)
	default:
		return fmt.Errorf("remote signer: unknown network %q (allowed: tcp, unix)", cfg.Network)
	}
	if cfg.ExpectedNode != nil {
		dial = pinnedDial(dial, []string{IdentityOf(cfg.ExpectedNode)}, &s.refused, func(err error) { cfg.Logger.Error(err.Error()) })
	}
	// Our redialer waits for the node itself (and again after the node
	// goes away), so CometBFT's endpoint gets one "retry" that lasts as
	// long as needed and a connection it drops on any error.
	if cfg.Dialect == "" {
		cfg.Dialect = DialectAuto
	}
	s.redialer = newRedialer(dialectDial(dial, cfg.Dialect), cfg.Clock)
	s.dialer = privval.NewSignerDialerEndpoint(cfg.Logger.With("module", "privval"), s.redialer.Dial,
		privval.SignerDialerEndpointConnRetries(1))
	s.server = privval.NewSignerServer(s.dialer, cfg.ChainID, cfg.Signer)
	s.server.SetRequestHandler(handleRequest)
	if err := s.server.Start(); err != nil {
		return fmt.Errorf("remote signer: %w", err)
	}
	s.running = true
	return nil
}

// Refused is the last node refused for its identity (an *IdentityError),
// nil if none.
func (s *RemoteServer) Refused() error { return s.refused.lastErr() }

// Stop closes the connection and stops answering; Start brings it back.
func (s *RemoteServer) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return nil
	}
	s.running = false
	s.redialer.Stop()
	err := s.server.Stop()
	_ = s.dialer.Close()
	if errors.Is(err, service.ErrAlreadyStopped) {
		return nil
	}
	return err
}

// FormatAddr turns a transport and address into CometBFT's laddr form.
func FormatAddr(network, address string) string {
	return network + "://" + strings.TrimPrefix(address, network+"://")
}

// handleRequest answers one request of a node as CometBFT's own handler
// does, but refuses a sign request that carries no vote or proposal: the
// stock handler dereferences it, and the panic would take the whole
// signer down (any peer on the connection could send one).
func handleRequest(pv Signer, req privvalproto.Message, chainID string) (privvalproto.Message, error) {
	switch r := req.Sum.(type) {
	case *privvalproto.Message_SignVoteRequest:
		if r.SignVoteRequest.Vote == nil {
			return privvalproto.Message{Sum: &privvalproto.Message_SignedVoteResponse{SignedVoteResponse: &privvalproto.SignedVoteResponse{
				Error: &privvalproto.RemoteSignerError{Description: "the sign request carries no vote"}}}}, nil
		}
	case *privvalproto.Message_SignProposalRequest:
		if r.SignProposalRequest.Proposal == nil {
			return privvalproto.Message{Sum: &privvalproto.Message_SignedProposalResponse{SignedProposalResponse: &privvalproto.SignedProposalResponse{
				Error: &privvalproto.RemoteSignerError{Description: "the sign request carries no proposal"}}}}, nil
		}
	}
	return privval.DefaultValidationRequestHandler(pv, req, chainID)
}

// takeVoteAnswer is what CometBFT's consensus takes from a signer's answer
// to a vote (types.SignAndCheckVote: signature, timestamp, extension
// signature), put onto the vote the node asked for. The one rule for a
// signer valnet does not trust to echo the request: the connection
// (RemoteClient) and the node-side watch (Watched) both apply it.
func takeVoteAnswer(req cmtproto.Vote, answer *cmtproto.Vote) cmtproto.Vote {
	req.Signature, req.Timestamp, req.ExtensionSignature = answer.Signature, answer.Timestamp, answer.ExtensionSignature
	return req
}

// takeProposalAnswer is takeVoteAnswer for a proposal: its signature and
// timestamp.
func takeProposalAnswer(req cmtproto.Proposal, answer *cmtproto.Proposal) cmtproto.Proposal {
	req.Signature, req.Timestamp = answer.Signature, answer.Timestamp
	return req
}
