package signers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"

	privvalproto "github.com/cometbft/cometbft/api/cometbft/privval/v1"
	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"
	cmtlog "github.com/cometbft/cometbft/libs/log"
	"github.com/cometbft/cometbft/libs/service"
	"github.com/cometbft/cometbft/privval"
	"github.com/jonboulle/clockwork"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/signers/profiles"
)

// The library part of `valnet signer serve`: the signer chain of Build as
// a standalone remote signer for any CometBFT v1 node (like tmkms). It
// dials the node's priv_validator_laddr (serve_dial.go), redials for as
// long as it runs, and reports every signature to an Observer; the
// command prints them and runs the fault timeline (cmd/valnet/signer*.go).

// ServeConfig configures a standalone signer.
type ServeConfig struct {
	// Node is the node's priv_validator_laddr: tcp://host:port (over
	// SecretConnection) or unix:///path.
	Node    string
	ChainID string
	Type    string // local (default) | keyfile | simulated
	// KeyFile: local and simulated, a CometBFT priv_validator_key.json;
	// keyfile, the armored key file. It must exist: serve never creates keys.
	KeyFile string
	// StateFile is the double-sign guard's high-water mark; "" is
	// DefaultStateFile(KeyFile). It is never the node's own
	// data/priv_validator_state.json unless set to it.
	StateFile string
	// IdentityKey is the signer's SecretConnection identity (tcp only), a
	// node_key.json-style file, generated if missing; "" is
	// valnet_signer_identity.json beside StateFile.
	IdentityKey string
	// NodeID, when set, is the node's SecretConnection identity (tcp only,
	// an address in hex): a node with another key is refused before it can
	// ask anything. "" accepts any node: a stock CometBFT v1.0 node makes a
	// new listener key at every start and cannot be pinned.
	NodeID string
	// Dialect is the privval layout the node reads (dialect.go): v1 for
	// CometBFT v1, v0.38 for v0.34 to v0.40; "" or auto answers PubKey in
	// both layouts at once, which every version reads.
	Dialect       Dialect
	Profile       string        // simulated: a built-in profile name
	Latency       *latency.Spec // injected delay before every signature; nil: none
	LatencyPhases []string      // phases Latency applies to; empty: all
	CPUScale      float64       // 0 or 1: no scaling
	Passphrase    []byte        // keyfile
	Decrypt       string        // keyfile: every-sign (default) | once
	Seed          int64         // seed of latency and device-model draws
	// Obs receives every signature, made or refused; it must not block
	// for long (the node waits for each signature). nil: none.
	Obs Observer
	// Timeline, when set, follows the heights the signer is asked to sign:
	// a fault timeline over the chain's Faults.
	Timeline ServeTimeline
	// Log receives status lines (connected, connection lost, faults);
	// nil: discarded.
	Log io.Writer
	// Clock is the signer chain's clock (Spec.Clock) and spaces the
	// redials to the node; nil: the real clock.
	Clock clockwork.Clock
}

// ServeTimeline is told what a standalone signer sees of the chain: the
// requests it gets. It has no view of the chain but those.
type ServeTimeline interface {
	// Arm is called once, before the first dial, with the chain's faults
	// and the signer's status log.
	Arm(f *Faults, logf func(format string, args ...any))
	// Reached is called with the height of each signature request before
	// the request goes through the chain, so a fault it starts already
	// affects that request.
	Reached(height int64)
	// Stop is called when the signer stops; Reached is not called after.
	Stop()
}

// Validate checks cfg without touching any file.
func (cfg *ServeConfig) Validate() error {
	if cfg.Node == "" {
		return errors.New("node is required: the node's priv_validator_laddr, e.g. tcp://127.0.0.1:26659")
	}
	if _, _, err := ParseNodeAddr(cfg.Node); err != nil {
		return err
	}
	if cfg.NodeID != "" {
		if network, _, _ := ParseNodeAddr(cfg.Node); network != NetTCP {
			return fmt.Errorf("node_id applies to a tcp node only (a unix socket has no SecretConnection identity), node is %s", cfg.Node)
		}
		if _, err := ParseIdentity(cfg.NodeID); err != nil {
			return fmt.Errorf("node_id: %w", err)
		}
	}
	if cfg.Dialect != "" {
		if _, err := ParseDialect(string(cfg.Dialect)); err != nil {
			return err
		}
	}
	if cfg.ChainID == "" {
		return errors.New("chain_id is required: the chain the node runs (the node refuses a signer of another chain)")
	}
	if cfg.KeyFile == "" {
		return errors.New("key_file is required: the validator's priv_validator_key.json, or its armored key file for type keyfile")
	}
	typ := cfg.Type
	if typ == "" {
		typ = TypeLocal
	}
	switch typ {
	case TypeLocal, TypeKeyfile, TypeSimulated:
	default:
		return fmt.Errorf("unknown signer type %q (allowed: local, keyfile, simulated)", cfg.Type)
	}
	if typ == TypeSimulated && cfg.Profile == "" {
		return fmt.Errorf("type simulated needs a profile (built-in: %s)", strings.Join(profiles.Names(), ", "))
	}
	if cfg.Profile != "" {
		if typ != TypeSimulated {
			return fmt.Errorf("profile %s given, but type is %s: a profile applies only to type simulated", cfg.Profile, typ)
		}
		if _, ok := profiles.Builtin(cfg.Profile); !ok {
			return fmt.Errorf("unknown profile %q (built-in: %s)", cfg.Profile, strings.Join(profiles.Names(), ", "))
		}
	}
	if typ == TypeKeyfile {
		if len(cfg.Passphrase) == 0 {
			return errors.New("type keyfile needs a passphrase (passphrase_env or passphrase_file)")
		}
		if d := cfg.Decrypt; d != "" && d != ModeEverySign && d != ModeOnce {
			return fmt.Errorf("unknown decrypt mode %q (allowed: %s, %s)", d, ModeEverySign, ModeOnce)
		}
	} else {
		if len(cfg.Passphrase) > 0 {
			return fmt.Errorf("a passphrase applies only to type keyfile, not %s", typ)
		}
		if cfg.Decrypt != "" {
			return fmt.Errorf("decrypt applies only to type keyfile, not %s", typ)
		}
	}
	if cfg.CPUScale < 0 || math.IsNaN(cfg.CPUScale) || math.IsInf(cfg.CPUScale, 0) {
		return fmt.Errorf("cpu_scale must be a number > 0, got %g", cfg.CPUScale)
	}
	if cfg.Latency != nil {
		if err := cfg.Latency.Validate(); err != nil {
			return fmt.Errorf("latency: %w", err)
		}
	} else if len(cfg.LatencyPhases) > 0 {
		return errors.New("latency phases given without a latency")
	}
	if err := checkPhases(cfg.LatencyPhases); err != nil {
		return fmt.Errorf("latency phases: %w", err)
	}
	return nil
}

func checkPhases(phases []string) error {
	seen := map[string]bool{}
	for _, p := range phases {
		if !phase.Valid(p) {
			return fmt.Errorf("unknown phase %q (allowed: %s)", p, strings.Join(phase.All(), ", "))
		}
		if seen[p] {
			return fmt.Errorf("phase %q is listed twice", p)
		}
		seen[p] = true
	}
	return nil
}

// Serve is a running standalone signer.
type Serve struct {
	cfg       ServeConfig
	network   string
	address   string
	stateFile string
	built     *Built
	identity  ed25519.PrivKey
	endpoint  *privval.SignerDialerEndpoint
	server    *privval.SignerServer
	stopCh    chan struct{}
	stopOnce  sync.Once
	stopErr   error
	clock     clockwork.Clock
	dials     atomic.Int64 // dial attempts to the node, made or failed

	logMu sync.Mutex
	log   io.Writer

	connMu     sync.Mutex
	conn       *nodeConn
	everUp     bool
	dialFailed bool // a failed dial was reported since the last connection

	refused refusals // nodes refused for their identity

	chainMu   sync.Mutex
	badChains map[string]bool // chain IDs a node asked for that were refused, reported once
}

// RunServe serves signatures until ctx is done, then stops. It returns an
// error only if the signer could not start or stop cleanly.
func RunServe(ctx context.Context, cfg ServeConfig) error {
	s, err := StartServe(cfg)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return s.Stop()
}

// StartServe checks cfg, opens the key and the double-sign guard (so a
// wrong passphrase or a state file in use fails here, before any dialing)
// and starts dialing the node in the background.
func StartServe(cfg ServeConfig) (*Serve, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Type == "" {
		cfg.Type = TypeLocal
	}
	cfg.Dialect, _ = ParseDialect(string(cfg.Dialect))
	s := &Serve{cfg: cfg, log: cfg.Log, stopCh: make(chan struct{}), clock: clockOr(cfg.Clock), badChains: map[string]bool{}}
	s.network, s.address, _ = ParseNodeAddr(cfg.Node)
	s.stateFile = cfg.StateFile
	if s.stateFile == "" {
		s.stateFile = DefaultStateFile(cfg.KeyFile)
	}
	spec, err := s.spec()
	if err != nil {
		return nil, err
	}
	// The key and the guard first: a wrong passphrase or a state file in
	// use leaves nothing behind, not even a new identity file.
	if s.built, err = Build(spec); err != nil {
		return nil, err
	}
	if s.network == NetTCP {
		idPath := cfg.IdentityKey
		if idPath == "" {
			idPath = DefaultIdentityFile(s.stateFile)
		}
		var created bool
		if s.identity, created, err = LoadOrGenIdentity(idPath); err != nil {
			_ = s.built.Close()
			return nil, err
		}
		how := "from"
		if created {
			how = "generated, saved to"
		}
		s.logf("identity %X (%s %s)", s.identity.PubKey().Address(), how, idPath)
	}
	h, r, step := lastSigned(s.built)
	s.logf("key %X (%s), signer %s, chain %s", s.built.PubKey.Address(), KeyTypeOf(s.built.PubKey), s.built.Label, cfg.ChainID)
	s.logf("state file %s (last signed h=%d r=%d step=%d; the node's own priv_validator_state.json is not used)", s.stateFile, h, r, step)

	var pv Signer = s.built.Signer
	if cfg.Timeline != nil {
		cfg.Timeline.Arm(s.built.Faults, s.logf)
		pv = &faultTrigger{s: s, inner: pv}
	}
	s.endpoint = privval.NewSignerDialerEndpoint(cmtlog.NewNopLogger(), s.dial,
		// The dial function waits for the node itself, for as long as it
		// takes; one "retry" is one call to it.
		privval.SignerDialerEndpointConnRetries(1))
	s.server = privval.NewSignerServer(s.endpoint, cfg.ChainID, pv)
	s.server.SetRequestHandler(s.handle)
	if err := s.server.Start(); err != nil {
		s.stopTimeline()
		_ = s.built.Close()
		return nil, fmt.Errorf("remote signer: %w", err)
	}
	layout := string(cfg.Dialect)
	if cfg.Dialect == DialectAuto {
		layout = "auto: PubKey answered in v0.38's and v1's layouts at once"
	}
	s.logf("dialing %s (privval %s); redialing until the node is up, and again whenever it goes away", FormatAddr(s.network, s.address), layout)
	return s, nil
}

// spec is the Build spec of cfg.
func (s *Serve) spec() (Spec, error) {
	cfg := s.cfg
	spec := Spec{Type: cfg.Type, StateFile: s.stateFile, CPUScale: cfg.CPUScale, Latency: cfg.Latency,
		Phases: cfg.LatencyPhases, Seed: cfg.Seed, Stream: "signer", Obs: cfg.Obs, Clock: cfg.Clock}
	if cfg.Type == TypeKeyfile {
		kf, err := keyfileSpec(cfg.KeyFile, cfg.Decrypt, cfg.Passphrase)
		spec.Keyfile = kf
		return spec, err
	}
	key, err := LoadPrivValidatorKey(cfg.KeyFile)
	if err != nil {
		return spec, err
	}
	// KeyFile stays empty: Build must not write a key file.
	spec.Key = key
	if cfg.Type == TypeSimulated {
		p, _ := profiles.Builtin(cfg.Profile)
		spec.Profile = &p
	}
	return spec, nil
}

// lastSigned is the high-water mark the guard of b read from its state file.
func lastSigned(b *Built) (int64, int32, int8) {
	if in, err := b.slot.current(); err == nil {
		if g, ok := in.(*Guarded); ok {
			return g.LastSigned()
		}
	}
	return 0, 0, 0
}

// PubKey is the validator key the signer serves.
func (s *Serve) PubKey() crypto.PubKey { return s.built.PubKey }

// StateFile is the double-sign guard's state file in use.
func (s *Serve) StateFile() string { return s.stateFile }

// Stop stops serving and closes the signer chain (releasing the state
// file's lock). No signature is reported after it returns. It may be
// called more than once.
func (s *Serve) Stop() error {
	s.stopOnce.Do(func() {
		close(s.stopCh)
		s.connMu.Lock()
		if s.conn != nil {
			// A read in progress would hold the endpoint's lock until the
			// node's next ping; closing under it ends the read now.
			_ = s.conn.Conn.Close()
		}
		s.connMu.Unlock()
		if err := s.server.Stop(); err != nil && !errors.Is(err, service.ErrAlreadyStopped) {
			s.stopErr = err
		}
		s.stopTimeline()
		if err := s.built.Close(); err != nil && s.stopErr == nil {
			s.stopErr = err
		}
	})
	return s.stopErr
}

func (s *Serve) stopTimeline() {
	if s.cfg.Timeline != nil {
		s.cfg.Timeline.Stop()
	}
}

func (s *Serve) stopping() bool {
	select {
	case <-s.stopCh:
		return true
	default:
		return false
	}
}

func (s *Serve) logf(format string, args ...any) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.log, "valnet signer: "+format+"\n", args...)
}

// handle answers one request of the node. A node of another chain gets
// CometBFT's refusal, and the operator a line saying why.
func (s *Serve) handle(pv Signer, req privvalproto.Message, chainID string) (privvalproto.Message, error) {
	var asked string
	switch r := req.Sum.(type) {
	case *privvalproto.Message_PubKeyRequest:
		asked = r.PubKeyRequest.GetChainId()
	case *privvalproto.Message_SignVoteRequest:
		asked = r.SignVoteRequest.GetChainId()
	case *privvalproto.Message_SignProposalRequest:
		asked = r.SignProposalRequest.GetChainId()
	default:
		asked = chainID
	}
	if asked != chainID {
		s.chainMu.Lock()
		first := !s.badChains[asked]
		s.badChains[asked] = true
		s.chainMu.Unlock()
		if first {
			s.logf("refusing the node: it runs chain %q, this signer serves chain %q (chain_id)", asked, chainID)
		}
	}
	return handleRequest(pv, req, chainID)
}

// faultTrigger sits outside the whole chain and tells the timeline the
// height of each request before the request goes through the chain, so a
// fault it starts already affects that request.
type faultTrigger struct {
	s     *Serve
	inner Signer
}

func (t *faultTrigger) GetPubKey() (crypto.PubKey, error) { return t.inner.GetPubKey() }

func (t *faultTrigger) SignVote(chainID string, vote *cmtproto.Vote, ext bool) error {
	t.s.reached(vote.Height)
	return t.inner.SignVote(chainID, vote, ext)
}

func (t *faultTrigger) SignProposal(chainID string, p *cmtproto.Proposal) error {
	t.s.reached(p.Height)
	return t.inner.SignProposal(chainID, p)
}

func (t *faultTrigger) SignBytes(b []byte) ([]byte, error) { return t.inner.SignBytes(b) }

func (s *Serve) reached(h int64) {
	if !s.stopping() {
		s.cfg.Timeline.Reached(h)
	}
}
