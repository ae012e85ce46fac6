package signers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	privvalproto "github.com/cometbft/cometbft/api/cometbft/privval/v1"
	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"
	cmtjson "github.com/cometbft/cometbft/libs/json"
	cmtlog "github.com/cometbft/cometbft/libs/log"
	"github.com/cometbft/cometbft/libs/service"
	"github.com/cometbft/cometbft/privval"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/signers/profiles"
)

// valnet signer serve: the signer chain of Build as a standalone remote
// signer for any CometBFT v1 node (like tmkms): it dials the node's
// priv_validator_laddr, redials for as long as it runs, prints one line per
// signature and a latency summary when it stops.

// Default file names of a standalone signer.
const (
	DefaultServeStateName    = "valnet_signer_state.json"
	DefaultServeIdentityName = "valnet_signer_identity.json"
)

// Fault actions a standalone signer takes (the scenario names).
const (
	FaultActionDelay = "signer-delay"
	FaultActionDrop  = "signer-drop"
	FaultActionError = "signer-error"
)

// ServeFaultActions lists the fault actions of a standalone signer.
var ServeFaultActions = []string{FaultActionDelay, FaultActionDrop, FaultActionError}

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
	IdentityKey   string
	Profile       string        // simulated: a built-in profile name
	Latency       *latency.Spec // injected delay before every signature; nil: none
	LatencyPhases []string      // phases Latency applies to; empty: all
	CPUScale      float64       // 0 or 1: no scaling
	Passphrase    []byte        // keyfile
	Decrypt       string        // keyfile: every-sign (default) | once
	Seed          int64         // seed of latency and device-model draws
	Faults        []ServeFault
	// Log receives status lines (connected, connection lost, faults);
	// nil: discarded. Signature lines and the summary go to out.
	Log io.Writer
}

// ServeFault is a fault of a standalone signer. It has no view of the
// chain but the requests it gets: Height is reached with the first
// signature request at Height or above.
type ServeFault struct {
	Action   string // signer-delay | signer-drop | signer-error
	Height   int64  // >= 1
	Round    int32  // drop, error at one height only (Duration 0)
	HasRound bool
	// Duration: signer-delay, how long the delay lasts (0: until the signer
	// stops); signer-drop, signer-error, the window in which signatures
	// fail (0: only signatures of Height, and of Round if HasRound).
	Duration time.Duration
	Latency  *latency.Spec // signer-delay: the extra delay, required
	Phases   []string      // empty: all
}

// DefaultStateFile is the state file of a signer with no state file set:
// valnet_signer_state.json beside the key file, apart from the node's
// data/priv_validator_state.json.
func DefaultStateFile(keyFile string) string {
	return filepath.Join(filepath.Dir(keyFile), DefaultServeStateName)
}

// DefaultIdentityFile is the identity key of a signer with none set.
func DefaultIdentityFile(stateFile string) string {
	return filepath.Join(filepath.Dir(stateFile), DefaultServeIdentityName)
}

// ParseNodeAddr splits a node's priv_validator_laddr into network and
// address.
func ParseNodeAddr(s string) (network, address string, err error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return "", "", fmt.Errorf("node address %q has no scheme: write tcp://host:port or unix:///path/to/socket", s)
	}
	switch scheme {
	case NetTCP:
		host, port, err := net.SplitHostPort(rest)
		if err != nil {
			return "", "", fmt.Errorf("node address %q: want tcp://host:port (%v)", s, err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", "", fmt.Errorf("node address %q: port %q is not a port number", s, port)
		}
		return NetTCP, net.JoinHostPort(host, port), nil
	case NetUnix:
		if rest == "" {
			return "", "", fmt.Errorf("node address %q: no socket path (write unix:///path/to/socket)", s)
		}
		return NetUnix, rest, nil
	default:
		return "", "", fmt.Errorf("node address %q: unsupported scheme %q (allowed: tcp, unix)", s, scheme)
	}
}

// LoadPrivValidatorKey reads the private key of a CometBFT
// priv_validator_key.json (ed25519 or secp256k1).
func LoadPrivValidatorKey(path string) (crypto.PrivKey, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("key file %s: no such file", path)
	}
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("-----BEGIN")) {
		return nil, fmt.Errorf("key file %s is an armored (encrypted) key file: use type keyfile", path)
	}
	var k privval.FilePVKey
	if err := cmtjson.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("key file %s is not a CometBFT priv_validator_key.json: %v", path, err)
	}
	if k.PrivKey == nil {
		return nil, fmt.Errorf("key file %s has no priv_key", path)
	}
	if k.PubKey != nil && !bytes.Equal(k.PubKey.Bytes(), k.PrivKey.PubKey().Bytes()) {
		return nil, fmt.Errorf("key file %s: pub_key does not belong to priv_key", path)
	}
	return k.PrivKey, nil
}

// identityFile is CometBFT's node_key.json format.
type identityFile struct {
	PrivKey crypto.PrivKey `json:"priv_key"`
}

// LoadOrGenIdentity reads the signer's SecretConnection identity from path,
// or generates one and saves it there (0600) if the file does not exist.
func LoadOrGenIdentity(path string) (key ed25519.PrivKey, created bool, err error) {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		key = ed25519.GenPrivKey()
		b, err := cmtjson.Marshal(identityFile{PrivKey: key})
		if err == nil {
			err = os.MkdirAll(filepath.Dir(path), 0o700)
		}
		if err == nil {
			err = writeNewFile(path, b)
		}
		if err != nil {
			return nil, false, fmt.Errorf("identity key %s: %w", path, err)
		}
		return key, true, nil
	case err != nil:
		return nil, false, fmt.Errorf("identity key: %w", err)
	}
	var f identityFile
	if err := cmtjson.Unmarshal(data, &f); err != nil {
		return nil, false, fmt.Errorf("identity key %s is not a node_key.json-style file: %v", path, err)
	}
	k, ok := f.PrivKey.(ed25519.PrivKey)
	if !ok {
		return nil, false, fmt.Errorf("identity key %s: want an ed25519 key (SecretConnection needs one)", path)
	}
	return k, false, nil
}

// Validate checks cfg without touching any file.
func (cfg *ServeConfig) Validate() error {
	if cfg.Node == "" {
		return errors.New("node is required: the node's priv_validator_laddr, e.g. tcp://127.0.0.1:26659")
	}
	if _, _, err := ParseNodeAddr(cfg.Node); err != nil {
		return err
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
	for i, f := range cfg.Faults {
		if err := f.Validate(); err != nil {
			return fmt.Errorf("faults[%d]: %w", i, err)
		}
	}
	return nil
}

// Validate checks one fault.
func (f ServeFault) Validate() error {
	switch f.Action {
	case FaultActionDelay, FaultActionDrop, FaultActionError:
	case "signer-outage":
		return errors.New("signer-outage does not apply to a standalone signer (it has no node side to cut off): stop the signer process instead")
	case "signer-restart":
		return errors.New("signer-restart does not apply to a standalone signer: restart the signer process instead")
	case "":
		return fmt.Errorf("action is required (allowed: %s)", strings.Join(ServeFaultActions, ", "))
	default:
		return fmt.Errorf("unknown fault action %q (allowed: %s)", f.Action, strings.Join(ServeFaultActions, ", "))
	}
	if f.Height < 1 {
		return fmt.Errorf("%s: at.height must be at least 1, got %d (a standalone signer knows heights only, not times)", f.Action, f.Height)
	}
	if f.Duration < 0 {
		return fmt.Errorf("%s: duration must not be negative, got %v", f.Action, f.Duration)
	}
	if f.HasRound {
		switch {
		case f.Action == FaultActionDelay:
			return errors.New("signer-delay: at.round applies only to signer-drop and signer-error")
		case f.Duration > 0:
			return fmt.Errorf("%s: at.round applies only to a fault at one height (no duration)", f.Action)
		case f.Round < 0:
			return fmt.Errorf("%s: at.round must be at least 0, got %d", f.Action, f.Round)
		}
	}
	if f.Action == FaultActionDelay {
		if f.Latency == nil {
			return errors.New("signer-delay needs latency: the extra delay before each signature, e.g. latency: 2s")
		}
		if err := f.Latency.Validate(); err != nil {
			return fmt.Errorf("signer-delay: latency: %w", err)
		}
	} else if f.Latency != nil {
		return fmt.Errorf("%s takes no latency (only signer-delay does)", f.Action)
	}
	if err := checkPhases(f.Phases); err != nil {
		return fmt.Errorf("%s: phases: %w", f.Action, err)
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
	started   time.Time

	// Signatures are printed from a queue: a write to a slow or blocked
	// stdout must not hold up the node, which waits for each signature.
	records chan SignRecord
	flush   chan struct{} // closed by Stop: print what is queued, then the summary
	drained chan struct{}
	out     io.Writer
	stats   map[string]*phaseStats // drain's own until drained

	logMu sync.Mutex
	log   io.Writer

	connMu     sync.Mutex
	conn       *nodeConn
	everUp     bool
	dialFailed bool // a failed dial was reported since the last connection

	chainMu   sync.Mutex
	badChains map[string]bool // chain IDs a node asked for that were refused, reported once

	faultMu sync.Mutex
	faults  []*serveFault
}

type phaseStats struct {
	ok     []time.Duration
	errors int
}

type serveFault struct {
	ServeFault
	id      string
	label   string
	started bool
	timer   *time.Timer
}

// RunServe serves signatures until ctx is done, then stops and writes the
// summary to out. It returns an error only if the signer could not start.
func RunServe(ctx context.Context, cfg ServeConfig, out io.Writer) error {
	s, err := StartServe(cfg, out)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return s.Stop()
}

// StartServe checks cfg, opens the key and the double-sign guard (so a
// wrong passphrase or a state file in use fails here, before any dialing)
// and starts dialing the node in the background.
func StartServe(cfg ServeConfig, out io.Writer) (*Serve, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Type == "" {
		cfg.Type = TypeLocal
	}
	s := &Serve{cfg: cfg, out: out, log: cfg.Log, stopCh: make(chan struct{}),
		records: make(chan SignRecord, 4096), flush: make(chan struct{}), drained: make(chan struct{}),
		stats: map[string]*phaseStats{}, badChains: map[string]bool{}}
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
	for i, f := range cfg.Faults {
		sf := &serveFault{ServeFault: f, id: fmt.Sprintf("faults[%d]:%s", i, f.Action)}
		sf.label = fmt.Sprintf("fault %d (%s at h=%d", i, f.Action, f.Height)
		if f.HasRound {
			sf.label += fmt.Sprintf(" r=%d", f.Round)
		}
		sf.label += ")"
		s.faults = append(s.faults, sf)
		// A drop or error at one height is armed now, so it matches that
		// height exactly whatever else happens.
		if f.Action != FaultActionDelay && f.Duration == 0 {
			s.built.Faults.SetFailure(sf.id, sf.rule(true))
		}
	}
	h, r, step := lastSigned(s.built)
	s.logf("key %X (%s), signer %s, chain %s", s.built.PubKey.Address(), KeyTypeOf(s.built.PubKey), s.built.Label, cfg.ChainID)
	s.logf("state file %s (last signed h=%d r=%d step=%d; the node's own priv_validator_state.json is not used)", s.stateFile, h, r, step)

	s.started = time.Now()
	go s.drain()
	s.endpoint = privval.NewSignerDialerEndpoint(cmtlog.NewNopLogger(), s.dial,
		// The dial function waits for the node itself, for as long as it
		// takes; one "retry" is one call to it.
		privval.SignerDialerEndpointConnRetries(1))
	s.server = privval.NewSignerServer(s.endpoint, cfg.ChainID, &faultTrigger{s: s, inner: s.built.Signer})
	s.server.SetRequestHandler(s.handle)
	if err := s.server.Start(); err != nil {
		_ = s.built.Close()
		close(s.flush)
		return nil, fmt.Errorf("remote signer: %w", err)
	}
	s.logf("dialing %s; redialing until the node is up, and again whenever it goes away", FormatAddr(s.network, s.address))
	return s, nil
}

// spec is the Build spec of cfg.
func (s *Serve) spec() (Spec, error) {
	cfg := s.cfg
	spec := Spec{Type: cfg.Type, StateFile: s.stateFile, CPUScale: cfg.CPUScale, Latency: cfg.Latency,
		Phases: cfg.LatencyPhases, Seed: cfg.Seed, Stream: "signer", Obs: ObserverFunc(s.signDone)}
	switch cfg.Type {
	case TypeKeyfile:
		// Build would create a missing key file; serve only uses one.
		data, err := os.ReadFile(cfg.KeyFile)
		if errors.Is(err, fs.ErrNotExist) {
			return spec, fmt.Errorf("key file %s: no such file", cfg.KeyFile)
		}
		if err != nil {
			return spec, fmt.Errorf("key file: %w", err)
		}
		if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
			return spec, fmt.Errorf("key file %s looks like a priv_validator_key.json: use type local (or simulated), or give the armored key file", cfg.KeyFile)
		}
		mode := cfg.Decrypt
		if mode == "" {
			mode = ModeEverySign
		}
		spec.Keyfile = &KeyfileSpec{Path: cfg.KeyFile, Mode: mode, Passphrase: cfg.Passphrase}
	default:
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

// Stop stops serving, closes the signer chain (releasing the state file's
// lock) and writes the summary. It may be called more than once.
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
		s.faultMu.Lock()
		for _, f := range s.faults {
			if f.timer != nil {
				f.timer.Stop()
			}
		}
		s.faultMu.Unlock()
		if err := s.built.Close(); err != nil && s.stopErr == nil {
			s.stopErr = err
		}
		close(s.flush)
		<-s.drained
		s.writeSummary(time.Since(s.started))
	})
	return s.stopErr
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

// errStopped ends the dial loop when the signer stops.
var errStopped = errors.New("signer stopped")

// dial connects to the node, retrying every 100 ms until it is up or the
// signer stops. CometBFT's own retry loop cannot be stopped while it
// redials, so it is given one "retry" that lasts as long as needed.
func (s *Serve) dial() (net.Conn, error) {
	var dial privval.SocketDialer
	if s.network == NetTCP {
		dial = privval.DialTCPFn(s.address, 5*time.Second, s.identity)
	} else {
		dial = privval.DialUnixFn(s.address)
	}
	for {
		if s.stopping() {
			return nil, errStopped
		}
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
		s.connMu.Lock()
		first := !s.dialFailed
		s.dialFailed = true
		s.connMu.Unlock()
		if first {
			s.logf("node not reachable (%v); redialing every 100ms", err)
		}
		select {
		case <-s.stopCh:
			return nil, errStopped
		case <-time.After(100 * time.Millisecond):
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
	return privval.DefaultValidationRequestHandler(pv, req, chainID)
}

// signDone queues one finished signature for drain. A full queue makes
// the signer wait rather than lose a line; after Stop the record is
// dropped: the node never got that signature.
func (s *Serve) signDone(r SignRecord) {
	select {
	case <-s.flush:
	case s.records <- r:
	}
}

// drain prints queued signatures until Stop, then what is left.
func (s *Serve) drain() {
	defer close(s.drained)
	for {
		select {
		case r := <-s.records:
			s.print(r)
		case <-s.flush:
			for {
				select {
				case r := <-s.records:
					s.print(r)
				default:
					return
				}
			}
		}
	}
}

// print writes one signature's line and records it for the summary.
func (s *Serve) print(r SignRecord) {
	st := s.stats[r.Phase]
	if st == nil {
		st = &phaseStats{}
		s.stats[r.Phase] = st
	}
	if r.Err != nil {
		st.errors++
		fmt.Fprintf(s.out, "%s h=%d r=%d ERROR %v\n", r.Phase, r.Height, r.Round, r.Err)
		return
	}
	st.ok = append(st.ok, r.Latency)
	fmt.Fprintf(s.out, "%s h=%d r=%d %s\n", r.Phase, r.Height, r.Round, fmtMS(r.Latency))
}

func fmtMS(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + "ms"
}

// writeSummary prints count, errors, p50, p99 and max of each phase.
// Percentiles are nearest-rank over the signatures made (refused ones have
// no signing time), as in valnet's run results.
func (s *Serve) writeSummary(ran time.Duration) {
	total, errs := 0, 0
	for _, st := range s.stats {
		total += len(st.ok) + st.errors
		errs += st.errors
	}
	fmt.Fprintf(s.out, "summary: %d signature requests, %d refused, in %s\n", total, errs, ran.Round(time.Millisecond))
	fmt.Fprintf(s.out, "%-10s %6s %6s %10s %10s %10s\n", "phase", "count", "errors", "p50", "p99", "max")
	phases := phase.All()
	for p := range s.stats {
		if !slices.Contains(phases, p) {
			phases = append(phases, p)
		}
	}
	for _, p := range phases {
		st := s.stats[p]
		if st == nil {
			st = &phaseStats{}
		}
		p50, p99, top := "-", "-", "-"
		if n := len(st.ok); n > 0 {
			sorted := slices.Clone(st.ok)
			slices.Sort(sorted)
			p50, p99, top = fmtMS(nearestRank(sorted, 50)), fmtMS(nearestRank(sorted, 99)), fmtMS(sorted[n-1])
		}
		fmt.Fprintf(s.out, "%-10s %6d %6d %10s %10s %10s\n", p, len(st.ok), st.errors, p50, p99, top)
	}
}

func nearestRank(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p * float64(len(sorted)) / 100))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// faultTrigger sits outside the whole chain and starts faults when the
// first request at their height arrives, before that request goes through
// the chain, so the request itself is already affected.
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

// reached starts every fault whose height has come. A fault whose height
// had passed before the signer started starts with the first request.
func (s *Serve) reached(h int64) {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	for _, f := range s.faults {
		if f.started || h < f.Height || s.stopping() {
			continue
		}
		f.started = true
		s.startFault(f, h)
	}
}

func (f *serveFault) rule(atHeight bool) FailRule {
	r := FailRule{Mode: FailError, Phases: f.Phases}
	if f.Action == FaultActionDrop {
		r.Mode = FailDrop
	}
	if atHeight {
		r.Height, r.Round, r.HasRound = f.Height, f.Round, f.HasRound
	}
	return r
}

// startFault switches f on at height h; called with faultMu held.
func (s *Serve) startFault(f *serveFault, h int64) {
	phases := "all phases"
	if len(f.Phases) > 0 {
		phases = strings.Join(f.Phases, ", ")
	}
	window := "until the signer stops"
	if f.Duration > 0 {
		window = "for " + f.Duration.String()
	}
	verb := "drops"
	if f.Action == FaultActionError {
		verb = "fails"
	}
	faults := s.built.Faults
	switch {
	case f.Action == FaultActionDelay:
		model, err := latency.New(*f.Latency, s.cfg.Seed, f.id)
		if err != nil { // checked by Validate
			s.logf("%s not applied: %v", f.label, err)
			return
		}
		faults.SetDelay(f.id, model, f.Phases)
		s.logf("%s started at h=%d: adds %s to %s %s", f.label, h, model, phases, window)
		if f.Duration > 0 {
			f.timer = time.AfterFunc(f.Duration, func() {
				faults.ClearDelay(f.id)
				s.logf("%s ended", f.label)
			})
		}
	case f.Duration == 0:
		// Armed at start; this only says it is now in play.
		s.logf("%s: %s %s signatures of h=%d", f.label, verb, phases, f.Height)
	default:
		faults.SetFailure(f.id, f.rule(false))
		s.logf("%s started at h=%d: %s %s signatures %s", f.label, h, verb, phases, window)
		f.timer = time.AfterFunc(f.Duration, func() {
			faults.ClearFailure(f.id)
			s.logf("%s ended", f.label)
		})
	}
}
