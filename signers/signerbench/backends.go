package signerbench

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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
	note  string // replaces the backend's note when set
	// inner, for a remote chain, is how long the signer side took for the
	// last signature: the chain's own time, without the hop.
	inner func() time.Duration
}

var backends = []backend{
	{name: "local", note: "ed25519 key in memory", open: openLocal},
	{name: "keyfile-every-sign", note: "bcrypt + decrypt per signature", slow: true,
		open: openKeyfile(signers.ModeEverySign)},
	{name: "keyfile-once", note: "decrypted once at open", open: openKeyfile(signers.ModeOnce)},
	{name: "remote-tcp", note: "local via privval tcp + SecretConnection",
		open: openRemote(signers.NetTCP)},
	{name: "remote-unix", note: "local via privval unix socket",
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
		o, err := build(signers.Spec{Type: signers.TypeKeyfile, Key: key, StateFile: stateFile,
			Keyfile: &signers.KeyfileSpec{Path: filepath.Join(env.dir, "validator.key"), Mode: mode,
				Cost: env.opts.KeyfileCost, Passphrase: []byte("valnet bench passphrase")}})
		if mode == signers.ModeEverySign {
			o.note = fmt.Sprintf("bcrypt cost %d + decrypt per signature, as gnokms+gnokey", env.opts.KeyfileCost)
		}
		return o, err
	}
}

func openRemote(network string) func(*backendEnv, string) (opened, error) {
	return func(env *backendEnv, stateFile string) (o opened, err error) {
		var undo []func() // run in reverse on failure, or by close
		cleanup := func() {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
		defer func() {
			if err != nil {
				cleanup()
			}
		}()
		inner, err := openLocal(env, stateFile)
		if err != nil {
			return opened{}, err
		}
		undo = append(undo, inner.close)
		addr := "127.0.0.1:0"
		if network == signers.NetUnix {
			// Not under Dir: a socket path must fit in ~100 bytes.
			sockDir, err := os.MkdirTemp("", "vnb-")
			if err != nil {
				return opened{}, err
			}
			undo = append(undo, func() { _ = os.RemoveAll(sockDir) })
			addr = filepath.Join(sockDir, "signer.sock")
		}
		nodeKey, signerKey := ed25519.GenPrivKey(), ed25519.GenPrivKey()
		client, err := signers.ListenRemote(signers.ClientConfig{Network: network, Address: addr,
			ChainID: benchChainID, NodeKey: nodeKey, AllowedSigners: []crypto.PubKey{signerKey.PubKey()}})
		if err != nil {
			return opened{}, err
		}
		timed := &timedSigner{Signer: inner.s}
		server, err := signers.ServeRemote(signers.ServerConfig{Network: network, Address: client.Addr(),
			ChainID: benchChainID, IdentityKey: signerKey, Signer: timed})
		if err != nil {
			_ = client.Close()
			return opened{}, err
		}
		// Node side first: a signer stopped while still connected waits out
		// its read timeout (~3 s) before Stop returns.
		undo = append(undo, func() { _ = server.Stop() }, func() { _ = client.Close() })
		if err := client.WaitForSigner(10 * time.Second); err != nil {
			return opened{}, fmt.Errorf("signer did not connect: %w", err)
		}
		return opened{s: client, pub: inner.pub, close: cleanup, inner: timed.lastVote}, nil
	}
}

// timedSigner times SignVote on the signer side of the hop. The node-side
// time of the same signature minus this is the hop alone, signature by
// signature, whatever the fsync inside took: subtracting two separately
// measured rows instead leaves the transport (tens of µs) buried in fsync
// noise (hundreds).
type timedSigner struct {
	signers.Signer
	last atomic.Int64 // ns; written by the server goroutine
}

func (t *timedSigner) SignVote(chainID string, vote *cmtproto.Vote, ext bool) error {
	t0 := time.Now()
	err := t.Signer.SignVote(chainID, vote, ext)
	t.last.Store(int64(time.Since(t0)))
	return err
}

func (t *timedSigner) lastVote() time.Duration { return time.Duration(t.last.Load()) }

// backendResult is what one backend row measured.
type backendResult struct {
	row Row
	// hop, for a remote chain, is node-side minus signer-side time of each
	// timed signature; nil otherwise.
	hop *samples
}

// runBackends signs one precommit per height through each of bs. Every
// signature is at a new height, so the guard writes and fsyncs its state
// file every time, as it does in consensus. The fast chains are measured
// interleaved (see measureInterleaved) so that their rows are comparable;
// a slow one is measured alone, since it would only stretch the others'
// run. Results come back in bs's order.
func runBackends(ctx context.Context, env *backendEnv, bs []backend) ([]backendResult, error) {
	res := make([]backendResult, len(bs))
	var fast, slow []int
	for i, b := range bs {
		if b.slow {
			slow = append(slow, i)
		} else {
			fast = append(fast, i)
		}
	}
	// Each group is measured together; groups one after the other.
	groups := [][]int{fast}
	for _, i := range slow {
		groups = append(groups, []int{i})
	}
	for _, g := range groups {
		if len(g) == 0 {
			continue
		}
		group := make([]backend, len(g))
		names := make([]string, len(g))
		for j, i := range g {
			group[j], names[j] = bs[i], bs[i].name
		}
		op := OpSignVote
		if len(g) > 1 {
			op += " (interleaved)"
		}
		progress(env.opts, strings.Join(names, ", "), op)
		got, err := runChains(ctx, env, group)
		if err != nil {
			return nil, err
		}
		for j, i := range g {
			res[i] = got[j]
		}
	}
	return res, nil
}

// chain is one opened backend being measured.
type chain struct {
	b         backend
	o         opened
	stateFile string
	votes     []*cmtproto.Vote
	innerD    []time.Duration // signer-side time by seq (remote chains)
	last      int
	res       backendResult
}

// runChains opens bs, measures them together and checks what they signed.
// Only a cancelled ctx is an error; a chain that fails gets a FAILED row.
func runChains(ctx context.Context, env *backendEnv, bs []backend) ([]backendResult, error) {
	chains := make([]*chain, len(bs))
	var live []*chain
	for i, b := range bs {
		c := &chain{b: b, stateFile: filepath.Join(env.dir, b.name, "priv_validator_state.json"), last: -1}
		chains[i] = c
		o, err := b.open(env, c.stateFile)
		if err != nil {
			c.res.row = failedRow(GroupBackend, b.name, OpSignVote, fmt.Errorf("open: %w", err))
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
		if o.inner != nil {
			c.innerD = make([]time.Duration, len(c.votes))
		}
		live = append(live, c)
	}
	if len(live) > 0 {
		if err := measureChains(ctx, env, live); err != nil {
			return nil, err
		}
	}
	res := make([]backendResult, len(chains))
	for i, c := range chains {
		res[i] = c.res
	}
	return res, nil
}

// measureChains times live interleaved and sets each one's result.
func measureChains(ctx context.Context, env *backendEnv, live []*chain) error {
	ops := make([]op, len(live))
	for i, c := range live {
		ops[i] = func(seq int) error {
			c.last = seq
			err := c.o.s.SignVote(benchChainID, c.votes[seq], false)
			if c.innerD != nil {
				// Read after the reply: the signer stored it before sending.
				c.innerD[seq] = c.o.inner()
			}
			return err
		}
	}
	got, err := measureInterleaved(ctx, env.opts, ops)
	if err != nil {
		return err
	}
	for i, c := range live {
		s := got[i]
		if err := s.err; err != nil {
			c.res.row = failedRow(GroupBackend, c.b.name, OpSignVote, err)
			continue
		}
		if err := checkSigned(c.o.pub, c.votes[0], c.votes[c.last]); err != nil {
			c.res.row = failedRow(GroupBackend, c.b.name, OpSignVote, err)
			continue
		}
		if err := checkPersisted(c.stateFile, c.votes[c.last].Height); err != nil {
			c.res.row = failedRow(GroupBackend, c.b.name, OpSignVote, err)
			continue
		}
		note := c.b.note
		if c.o.note != "" {
			note = c.o.note
		}
		if len(live) > 1 {
			note = joinNote(note, "interleaved")
		}
		if env.tmpfs {
			note = joinNote(note, "state dir is on tmpfs: fsync is free here")
		}
		c.res.row = s.row(GroupBackend, c.b.name, OpSignVote, note)
		if c.innerD != nil {
			hop := samples{d: make([]time.Duration, len(s.d)), seq: s.seq, capped: s.capped}
			for j, d := range s.d {
				hop.d[j] = d - c.innerD[s.seq[j]]
			}
			c.res.hop = &hop
		}
	}
	return nil
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

// overhead is the hop of a remote row alone: per signature, node-side
// minus signer-side time.
func overhead(name string, remote backendResult) Row {
	if remote.hop == nil {
		return Row{Group: GroupTransport, Name: name, Op: OpSignVote,
			Note: NotAvailablePrefix + "its remote row was not measured"}
	}
	r := remote.hop.row(GroupTransport, name, OpSignVote, "node-side minus signer-side time of each signature")
	r.OpsPerS = 0 // a hop alone is not a rate anyone gets
	return r
}
