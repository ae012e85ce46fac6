package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto"
	cmtlog "github.com/cometbft/cometbft/libs/log"

	"github.com/valnet/valnet/internal/links"
	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers"
	"github.com/valnet/valnet/signers/ledger"
	"github.com/valnet/valnet/signers/pkcs11"
	"github.com/valnet/valnet/signers/threshold"
)

// validatorSigner is everything the runner holds for one validator's
// signer: the built chain (backend, guard, faults, latency), and for a
// remote signer the two ends of the hop.
type validatorSigner struct {
	built  *signers.Built
	node   signers.Signer // what the node signs with
	client *signers.RemoteClient
	server *signers.RemoteServer
	// external is the node's listener for a signer valnet does not run
	// (type external): its outage is cut at the node's end.
	external *signers.RemoteClient
	// cluster is the cosigners of a threshold signer (a MODEL).
	cluster *threshold.Cluster
	log     *os.File
}

// openSigner builds m's signer chain. With via tcp or unix the chain runs
// behind CometBFT's remote-signer protocol: the node side listens (as a
// node with priv_validator_laddr), the signer side dials in, and both ends
// time every signature.
func (r *run) openSigner(ctx context.Context, m *member, sockDir string) (*validatorSigner, error) {
	name := m.plan.Name
	sp := m.plan.Signer
	obs := func(side string) signers.Observer {
		return signers.ObserverFunc(func(s signers.SignRecord) {
			e := eventlog.Event{Time: s.Start.Add(s.Latency), Kind: eventlog.KindSign, Node: name, Side: side,
				Validator: name, Height: s.Height, Round: s.Round, Phase: s.Phase, BlockID: s.BlockID,
				LatencyMS: ms(s.Latency), InjectedMS: ms(s.Injected)}
			if s.OnDevice {
				q := ms(s.Queued)
				e.QueueMS = &q
			}
			if s.Err != nil {
				e.Error, e.Failure = s.Err.Error(), signers.FailureOf(s.Err)
			}
			r.rec.EmitAsync(e)
		})
	}
	// requested records each signature the node asks for before the signer
	// answers: a signer that never answers leaves a sign_request without
	// its sign event.
	requested := func(s signers.Signer) signers.Signer {
		return &requestNoter{Signer: s, note: func(phase string, h int64, round int32) {
			r.rec.EmitAsync(eventlog.Event{Time: time.Now(), Kind: eventlog.KindSignRequest, Node: name,
				Validator: name, Height: h, Round: round, Phase: phase})
		}}
	}
	remote := sp.Via == scenarios.ViaTCP || sp.Via == scenarios.ViaUnix
	spec := signers.Spec{
		Type:      sp.Type,
		Key:       m.key,
		KeyFile:   m.config.PrivValidatorKeyFile(),
		StateFile: m.config.PrivValidatorStateFile(),
		CPUScale:  sp.CPUScale,
		Seed:      r.seed,
		Stream:    name,
		Device:    r.device(sp.Device),
	}
	if remote && r.remoteSigning == nil {
		spec.Obs = obs(eventlog.SideSigner)
	} else {
		// Direct, or a node in another process: the signer's view is the
		// only one valnet has.
		spec.Obs = obs("")
	}
	if l := sp.Latency; l != nil {
		spec.Latency = &l.Spec
		spec.Phases = l.Phases
	}
	if kf := sp.Keyfile; kf != nil {
		pass, err := signers.ReadPassphrase(kf.PassphraseEnv, kf.PassphraseFile)
		if err != nil {
			return nil, fmt.Errorf("validator %s: %w", name, err)
		}
		path := kf.Path
		if path == "" {
			path = filepath.Join(m.config.RootDir, "config", "priv_validator_key.armor")
		}
		spec.Keyfile = &signers.KeyfileSpec{Path: path, Mode: kf.Decrypt, Cost: kf.BcryptCost, Passphrase: pass}
	}
	if pp := sp.PKCS11; pp != nil {
		cfg, err := r.pkcs11Config(name, pp)
		if err != nil {
			return nil, fmt.Errorf("validator %s: %w", name, err)
		}
		spec.PKCS11 = cfg
	}
	if lp := sp.Ledger; lp != nil {
		t := ledger.NanoSPlus.With(lp.HostStall, lp.Wire, lp.DeviceSign)
		spec.Ledger = &signers.LedgerSpec{Connection: lp.Connection, Serial: lp.Serial, ChunkSize: lp.ChunkSize,
			ConfirmDelay: lp.ConfirmDelay, Timing: t}
	}
	if sp.Type == scenarios.SignerSimulated {
		p, err := r.plan.DeviceProfile(sp.Profile)
		if err != nil {
			return nil, fmt.Errorf("validator %s: %w", name, err)
		}
		spec.Profile = &p
	}
	vs := &validatorSigner{}
	if ep := sp.External; ep != nil {
		var err error
		if vs.external, err = r.openExternal(ctx, vs, m, ep); err != nil {
			vs.close()
			return nil, fmt.Errorf("validator %s: %w", name, err)
		}
		spec.Type, spec.External, spec.ExternalLabel = signers.TypeExternal, vs.external, externalLabel(ep, r.remoteSigning != nil)
	}
	if sp.Threshold != nil {
		var err error
		if vs.cluster, err = r.openThreshold(m); err != nil {
			vs.close()
			return nil, fmt.Errorf("validator %s: %w", name, err)
		}
		spec.Type, spec.Threshold = signers.TypeThreshold, vs.cluster
	}
	built, err := signers.Build(spec)
	if err != nil {
		vs.close()
		return nil, fmt.Errorf("validator %s: %w", name, err)
	}
	if err := checkPeerDialect(vs.external, sp.Dialect); err != nil {
		vs.close()
		_ = built.Close()
		return nil, fmt.Errorf("validator %s: %w", name, err)
	}
	vs.built, vs.node = built, requested(built.Signer)
	if r.remoteSigning != nil {
		// The node is elsewhere: its requests are seen where they reach
		// the signer chain.
		vs.node = nil
		if err := r.serveToNode(vs, m, sockDir, requested(built.Signer)); err != nil {
			vs.close()
			return nil, fmt.Errorf("validator %s: %w", name, err)
		}
		return vs, nil
	}
	if !remote {
		return vs, nil
	}
	if err := r.openRemote(vs, m, sockDir, obs("")); err != nil {
		vs.close()
		return nil, fmt.Errorf("validator %s: %w", name, err)
	}
	vs.node = requested(vs.node)
	return vs, nil
}

// requestNoter tells note of every vote and proposal signature asked of
// the signer it wraps, before passing the request on.
type requestNoter struct {
	signers.Signer
	note func(phase string, height int64, round int32)
}

var (
	_ signers.Signer = (*requestNoter)(nil)
	_ signers.Closer = (*requestNoter)(nil)
)

func (s *requestNoter) SignVote(chainID string, vote *cmtproto.Vote, signExtension bool) error {
	s.note(signers.VotePhase(vote), vote.Height, vote.Round)
	return s.Signer.SignVote(chainID, vote, signExtension)
}

func (s *requestNoter) SignProposal(chainID string, proposal *cmtproto.Proposal) error {
	s.note(phase.Proposal, proposal.Height, proposal.Round)
	return s.Signer.SignProposal(chainID, proposal)
}

func (s *requestNoter) Close() error { return signers.Close(s.Signer) }

// openRemote puts the signer behind the remote-signer hop and waits until
// the signer has connected, as a node would before it starts.
func (r *run) openRemote(vs *validatorSigner, m *member, sockDir string, nodeObs signers.Observer) error {
	name := m.plan.Name
	logFile, err := vs.openLog(m)
	if err != nil {
		return err
	}
	logger := cmtlog.NewTMLogger(cmtlog.NewSyncWriter(logFile))
	network, addr := signers.NetTCP, "127.0.0.1:0"
	if m.plan.Signer.Via == scenarios.ViaUnix {
		network, addr = signers.NetUnix, filepath.Join(sockDir, name+".sock")
	}
	identity := signerIdentity(r.seed, name)
	vs.client, err = signers.ListenRemote(signers.ClientConfig{Network: network, Address: addr, ChainID: r.plan.ChainID,
		NodeKey: nodeSignerKey(r.seed, name), AllowedSigners: []crypto.PubKey{identity.PubKey()}, Logger: logger.With("side", "node")})
	if err != nil {
		return err
	}
	dial, err := r.signerLinkRoute(m, vs.client.Addr(), "")
	if err != nil {
		return err
	}
	vs.server, err = signers.ServeRemote(signers.ServerConfig{Network: network, Address: dial, ChainID: r.plan.ChainID,
		IdentityKey: identity, ExpectedNode: nodeSignerKey(r.seed, name).PubKey(), Signer: vs.built.Signer,
		RedialForever: true, Logger: logger.With("side", "signer")})
	if err != nil {
		return err
	}
	if err := vs.client.WaitForSigner(30 * time.Second); err != nil {
		if refused := vs.server.Refused(); refused != nil {
			err = fmt.Errorf("%w (%v)", refused, err)
		}
		return fmt.Errorf("remote signer did not connect: %w", err)
	}
	vs.node = signers.Instrument(vs.client, nodeObs)
	return nil
}

// serveToNode is the signer of a node in another process (or container):
// the node listens on priv_validator_laddr, as any CometBFT node with a
// remote signer, and the signer dials it until it is up, and again after a
// restart. via tcp uses TCP with SecretConnection; direct and unix use a
// unix socket.
func (r *run) serveToNode(vs *validatorSigner, m *member, sockDir string, signer signers.Signer) error {
	name := m.plan.Name
	logFile, err := vs.openLog(m)
	if err != nil {
		return err
	}
	ep, err := r.remoteSigning.SignerEndpoint(name, m.plan.Signer.Via == scenarios.ViaTCP, sockDir)
	if err != nil {
		return err
	}
	m.config.PrivValidatorListenAddr = ep.Listen
	network, addr := ep.Network, ep.Addr
	if addr, err = r.signerLinkRoute(m, addr, ""); err != nil {
		return err
	}
	dialect := signers.Dialect(m.flavor.Line.Dialect) // the node's own layout
	if d := m.plan.Signer.Dialect; d != "" && m.plan.Signer.External == nil {
		dialect = signers.Dialect(d) // checked against the node's before the run
	}
	vs.server, err = signers.ServeRemote(signers.ServerConfig{Network: network, Address: addr, ChainID: r.plan.ChainID,
		IdentityKey: signerIdentity(r.seed, name), Signer: signer, RedialForever: true, Dialect: dialect,
		Logger: cmtlog.NewTMLogger(cmtlog.NewSyncWriter(logFile)).With("side", "signer")})
	return err
}

// signerLinkRoute is where m's signer dials its node: through the fabric
// when the signer has a link (signer.link, via tcp), shaped both ways, so
// that every signature pays the link's round trip; else addr itself. The
// fabric's proxy listens on listen when it is given (an external signer
// dials the address the scenario names).
func (r *run) signerLinkRoute(m *member, addr, listen string) (string, error) {
	lp := m.plan.Signer.Link
	if lp == nil {
		return addr, nil
	}
	if r.fabric == nil {
		return "", fmt.Errorf("validator %s: a signer link needs the link fabric, which this run did not start", m.plan.Name)
	}
	name, far := m.plan.Name, scenarios.SignerEndpoint(m.plan.Name)
	for _, dir := range [][2]string{{far, name}, {name, far}} {
		l, err := links.FromPlan(*lp, r.seed, "signer-link:"+dir[0]+"->"+dir[1])
		if err != nil {
			return "", fmt.Errorf("validator %s: signer link: %w", name, err)
		}
		r.setLink(dir[0], dir[1], l)
	}
	var route string
	var err error
	if listen != "" {
		route, err = r.fabric.RouteAt(far, name, listen, addr)
	} else {
		route, err = r.fabric.Route(far, name, addr)
	}
	if err != nil {
		return "", fmt.Errorf("validator %s: signer link: %w", name, err)
	}
	return route, nil
}

// openLog opens the signer's log in its validator's home (signer.log),
// kept until close.
func (vs *validatorSigner) openLog(m *member) (*os.File, error) {
	if vs.log != nil {
		return vs.log, nil
	}
	if err := os.MkdirAll(m.config.RootDir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(m.config.RootDir, "signer.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err == nil {
		vs.log = f
	}
	return f, err
}

// release ends any signature waiting in a model, so no node is held up
// by its signer while it stops.
func (vs *validatorSigner) release() {
	if vs.built != nil {
		_ = vs.built.Close()
	}
}

// close stops both ends of the hop and the signer.
func (vs *validatorSigner) close() {
	if vs.server != nil {
		_ = vs.server.Stop()
	}
	if vs.client != nil {
		_ = vs.client.Close()
	}
	if vs.external != nil {
		_ = vs.external.Close()
	}
	vs.release()
	if vs.cluster != nil {
		_ = vs.cluster.Close()
	}
	if vs.log != nil {
		_ = vs.log.Close()
	}
}

// pkcs11Config provisions a throwaway SoftHSM2 token for the validator
// (provision: softhsm; every token of a run lives in <run>/hsm, since
// SoftHSM reads one configuration per process), or reads the PIN of a
// token of the user's. Either way the validator's key is the token's:
// the genesis is built from the public key the signer reads from it.
func (r *run) pkcs11Config(name string, p *scenarios.PKCS11Plan) (*pkcs11.Config, error) {
	if p.Provision == scenarios.ProvisionSoftHSM {
		token := p.Token
		if token == "" {
			token = pkcs11.DefaultTokenLabel(name)
		}
		cfg, err := pkcs11.ProvisionModule(p.Module, filepath.Join(r.opts.OutDir, "hsm"), token, p.Key)
		return &cfg, err
	}
	pin, err := pkcs11.ReadPIN(p.PinEnv, p.PinFile)
	if err != nil {
		return nil, err
	}
	return &pkcs11.Config{Module: p.Module, Token: p.Token, Slot: p.Slot, HasSlot: p.HasSlot, KeyLabel: p.Key, PIN: pin}, nil
}

// checkPeerDialect: an external signer declared to speak one privval
// layout (signer.dialect) that answered its PubKey in the other is
// refused: valnet would read it, but the signer is not what the scenario
// says, and the node it is meant for may not read it.
func checkPeerDialect(c *signers.RemoteClient, declared string) error {
	if c == nil || declared == "" {
		return nil
	}
	saw := c.PeerDialect()
	if saw == "" || saw == signers.DialectAuto || string(saw) == declared {
		return nil
	}
	names := map[signers.Dialect]string{signers.DialectV038: "v0.38's (tendermint.privval: the key in field 1)", signers.DialectV1: "v1's (cometbft.privval.v1: pub_key_bytes and pub_key_type)"}
	return fmt.Errorf("signer.dialect %s, but your signer answered PubKey in %s layout: set dialect: %s (or auto)", declared, names[saw], saw)
}
