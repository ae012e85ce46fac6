package signerbench

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"
	cmtjson "github.com/cometbft/cometbft/libs/json"
	"github.com/cometbft/cometbft/privval"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/signers"
)

// transports of the remote rows, in output order.
var transports = []string{signers.NetTCP, signers.NetUnix}

// backend is a valnet signer chain measured end to end with SignVote.
type backend struct {
	name string
	note string
	slow bool // measured alone, not interleaved
	open func(env *backendEnv, stateFile string) (opened, error)
}

// opened is a ready chain: sign through s; the guard behind it persists to
// the state file it was opened with.
type opened struct {
	s     signers.Signer
	pub   crypto.PubKey
	close func()
}

var backends = []backend{
	{name: "local", note: "in-memory ed25519", open: openLocal},
	{name: "keyfile-every-sign", note: "bcrypt + decrypt per signature, as gnokms+gnokey", slow: true,
		open: openKeyfile(signers.ModeEverySign)},
	{name: "keyfile-once", note: "decrypted once at open", open: openKeyfile(signers.ModeOnce)},
	{name: "remote-tcp", note: "local behind privval over tcp + SecretConnection, timed at the node",
		open: openRemote(signers.NetTCP)},
	{name: "remote-unix", note: "local behind privval over a unix socket (plain), timed at the node",
		open: openRemote(signers.NetUnix)},
}

// backendEnv is what the backend rows share: one validator key, one
// encrypted key file, one scratch directory.
type backendEnv struct {
	opts  Options
	dir   string
	tmpfs bool
	key   crypto.PrivKey
}

func (e *backendEnv) validatorKey() (crypto.PrivKey, error) {
	if e.key == nil {
		secret := make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, err
		}
		k, err := signers.GenKey(signers.KeyTypeEd25519, secret)
		if err != nil {
			return nil, err
		}
		e.key = k
	}
	return e.key, nil
}

func build(spec signers.Spec) (opened, error) {
	b, err := signers.Build(spec)
	if err != nil {
		return opened{}, err
	}
	return opened{s: b.Signer, pub: b.PubKey, close: func() { _ = b.Close() }}, nil
}

func openLocal(env *backendEnv, stateFile string) (opened, error) {
	key, err := env.validatorKey()
	if err != nil {
		return opened{}, err
	}
	return build(signers.Spec{Type: signers.TypeLocal, Key: key, StateFile: stateFile})
}

func openKeyfile(mode string) func(*backendEnv, string) (opened, error) {
	return func(env *backendEnv, stateFile string) (opened, error) {
		key, err := env.validatorKey()
		if err != nil {
			return opened{}, err
		}
		// Both modes share one file: Build writes it on first use.
		return build(signers.Spec{Type: signers.TypeKeyfile, Key: key, StateFile: stateFile,
			Keyfile: &signers.KeyfileSpec{Path: filepath.Join(env.dir, "validator.key"), Mode: mode,
				Cost: env.opts.KeyfileCost, Passphrase: []byte("valnet bench passphrase")}})
	}
}

func openRemote(network string) func(*backendEnv, string) (opened, error) {
	return func(env *backendEnv, stateFile string) (opened, error) {
		inner, err := openLocal(env, stateFile)
		if err != nil {
			return opened{}, err
		}
		addr, sockDir := "127.0.0.1:0", ""
		if network == signers.NetUnix {
			// Not under Dir: a socket path must fit in ~100 bytes.
			if sockDir, err = os.MkdirTemp("", "vnb-"); err != nil {
				inner.close()
				return opened{}, err
			}
			addr = filepath.Join(sockDir, "signer.sock")
		}
		nodeKey, signerKey := ed25519.GenPrivKey(), ed25519.GenPrivKey()
		client, err := signers.ListenRemote(signers.ClientConfig{Network: network, Address: addr,
			ChainID: benchChainID, NodeKey: nodeKey, AllowedSigners: []crypto.PubKey{signerKey.PubKey()}})
		if err != nil {
			inner.close()
			return opened{}, err
		}
		server, err := signers.ServeRemote(signers.ServerConfig{Network: network, Address: client.Addr(),
			ChainID: benchChainID, IdentityKey: signerKey, Signer: inner.s})
		cleanup := func() {
			if server != nil {
				_ = server.Stop()
			}
			_ = client.Close()
			inner.close()
			if sockDir != "" {
				_ = os.RemoveAll(sockDir)
			}
		}
		if err == nil {
			err = client.WaitForSigner(10 * time.Second)
		}
		if err != nil {
			cleanup()
			return opened{}, err
		}
		return opened{s: client, pub: inner.pub, close: cleanup}, nil
	}
}

// runBackends signs one precommit per height through each of bs. Every
// signature is at a new height, so the guard writes and fsyncs its state
// file every time, as it does in consensus. The fast chains are measured
// interleaved (see measureInterleaved) so that local, keyfile-once and the
// remote rows are comparable; a slow one is measured alone, since it
// would only stretch the others' run. Rows come back in bs's order.
func runBackends(ctx context.Context, env *backendEnv, bs []backend) ([]Row, error) {
	rows := make([]Row, len(bs))
	var fast []int
	for i, b := range bs {
		if !b.slow {
			fast = append(fast, i)
		}
	}
	if len(fast) > 0 {
		names := make([]string, len(fast))
		group := make([]backend, len(fast))
		for j, i := range fast {
			names[j], group[j] = bs[i].name, bs[i]
		}
		progress(env.opts, strings.Join(names, ", "), OpSignVote+" (interleaved)")
		got, err := runChains(ctx, env, group)
		if err != nil {
			return nil, err
		}
		for j, i := range fast {
			rows[i] = got[j]
		}
	}
	for i, b := range bs {
		if b.slow {
			progress(env.opts, b.name, OpSignVote)
			got, err := runChains(ctx, env, []backend{b})
			if err != nil {
				return nil, err
			}
			rows[i] = got[0]
		}
	}
	return rows, nil
}

// chain is one opened backend being measured.
type chain struct {
	b         backend
	o         opened
	stateFile string
	votes     []*cmtproto.Vote
	last      int
	row       Row // set when the chain failed before measuring
}

// runChains opens bs, measures them together and checks what they signed.
// Only a cancelled ctx is an error; a chain that fails gets a FAILED row.
func runChains(ctx context.Context, env *backendEnv, bs []backend) ([]Row, error) {
	chains := make([]*chain, len(bs))
	var live []*chain
	for i, b := range bs {
		c := &chain{b: b, stateFile: filepath.Join(env.dir, b.name, "priv_validator_state.json"), last: -1}
		chains[i] = c
		o, err := b.open(env, c.stateFile)
		if err != nil {
			c.row = failedRow(GroupBackend, b.name, OpSignVote, fmt.Errorf("open: %w", err))
			continue
		}
		defer o.close()
		c.o = o
		// Votes are built before timing; only SignVote is timed.
		c.votes = make([]*cmtproto.Vote, env.opts.Warmup+env.opts.Iterations)
		addr := o.pub.Address()
		for h := range c.votes {
			c.votes[h] = benchVote(benchHeight+int64(h), addr)
		}
		live = append(live, c)
	}
	ops := make([]op, len(live))
	for i, c := range live {
		ops[i] = func(seq int) error {
			c.last = seq
			return c.o.s.SignVote(benchChainID, c.votes[seq], false)
		}
	}
	got, err := measureInterleaved(ctx, env.opts, ops)
	if err != nil {
		return nil, err
	}
	for i, c := range live {
		s := got[i]
		if err := s.err; err != nil {
			c.row = failedRow(GroupBackend, c.b.name, OpSignVote, err)
			continue
		}
		if err := checkSigned(c.o.pub, c.votes[0], c.votes[c.last]); err != nil {
			c.row = failedRow(GroupBackend, c.b.name, OpSignVote, err)
			continue
		}
		if err := checkPersisted(c.stateFile, c.votes[c.last].Height); err != nil {
			c.row = failedRow(GroupBackend, c.b.name, OpSignVote, err)
			continue
		}
		note := c.b.note
		if len(live) > 1 {
			note = joinNote(note, "interleaved with the other fast backends")
		}
		if env.tmpfs {
			note = joinNote(note, "state dir is on tmpfs: fsync is free here")
		}
		c.row = s.row(GroupBackend, c.b.name, OpSignVote, note)
	}
	rows := make([]Row, len(chains))
	for i, c := range chains {
		rows[i] = c.row
	}
	return rows, nil
}

// checkSigned verifies the first and last signatures the chain returned.
func checkSigned(pub crypto.PubKey, votes ...*cmtproto.Vote) error {
	for _, v := range votes {
		if !pub.VerifySignature(types.VoteSignBytes(benchChainID, v), v.Signature) {
			return fmt.Errorf("signature at height %d does not verify", v.Height)
		}
	}
	return nil
}

// checkPersisted reads the guard's state file back: the last height
// signed must be on disk, or the row did not measure the real path.
func checkPersisted(stateFile string, height int64) error {
	data, err := os.ReadFile(stateFile)
	if err != nil {
		return fmt.Errorf("guard state: %w", err)
	}
	var st privval.FilePVLastSignState
	if err := cmtjson.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("guard state: %w", err)
	}
	if st.Height != height {
		return fmt.Errorf("guard state holds height %d, want %d", st.Height, height)
	}
	return nil
}

// overhead subtracts the direct row from the remote one, percentile by
// percentile.
func overhead(name string, direct, remote Row) Row {
	r := Row{Group: GroupTransport, Name: name, Op: OpSignVote}
	if direct.N == 0 || remote.N == 0 {
		r.Note = NotAvailablePrefix + "needs both the direct and the remote row measured"
		return r
	}
	r.N = min(direct.N, remote.N)
	r.P50US = round(remote.P50US-direct.P50US, 3)
	r.P99US = round(remote.P99US-direct.P99US, 3)
	r.Note = fmt.Sprintf("%s minus %s per percentile (not a percentile of differences)", remote.Name, direct.Name)
	return r
}
