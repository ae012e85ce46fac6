package signerbench

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
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
	{name: "keyfile-every-sign", note: "bcrypt + decrypt per signature, as gnokms+gnokey",
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

// runBackend signs one precommit per height through b. Every signature is
// at a new height, so the guard writes and fsyncs its state file every
// time, as it does in consensus.
func runBackend(ctx context.Context, env *backendEnv, b backend) (Row, error) {
	note := b.note
	if env.tmpfs {
		note = joinNote(note, "state dir is on tmpfs: fsync is free here")
	}
	fail := func(err error) (Row, error) {
		if ctx.Err() != nil {
			return Row{}, ctx.Err()
		}
		return failedRow(GroupBackend, b.name, OpSignVote, err), nil
	}
	stateFile := filepath.Join(env.dir, b.name, "priv_validator_state.json")
	o, err := b.open(env, stateFile)
	if err != nil {
		return fail(fmt.Errorf("open: %w", err))
	}
	defer o.close()

	// Votes are built before timing; only SignVote is timed.
	votes := make([]*cmtproto.Vote, env.opts.Warmup+env.opts.Iterations)
	addr := o.pub.Address()
	for i := range votes {
		votes[i] = benchVote(benchHeight+int64(i), addr)
	}
	last := -1
	s, err := measure(ctx, env.opts, func(seq int) error {
		last = seq
		return o.s.SignVote(benchChainID, votes[seq], false)
	})
	if err != nil {
		return fail(err)
	}
	if err := checkSigned(o.pub, votes[0], votes[last]); err != nil {
		return fail(err)
	}
	if err := checkPersisted(stateFile, votes[last].Height); err != nil {
		return fail(err)
	}
	return s.row(GroupBackend, b.name, OpSignVote, note), nil
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
