package signers

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/privval"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/internal/syncbuf"
	"github.com/valnet/valnet/latency"
)

// writePrivValidatorKey writes testKey() as CometBFT's priv_validator_key.json.
func writePrivValidatorKey(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "priv_validator_key.json")
	if err := saveKey(privval.NewFilePV(testKey(), path, "")); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeNode listens as a node with priv_validator_laddr set at addr
// ("127.0.0.1:0" for any port).
func fakeNode(t *testing.T, addr string) *RemoteClient {
	t.Helper()
	c, err := ListenRemote(ClientConfig{Network: NetTCP, Address: addr, ChainID: chainID,
		NodeKey: ed25519.GenPrivKeyFromSecret([]byte("node"))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func serveConfig(t *testing.T, node *RemoteClient) ServeConfig {
	dir := t.TempDir()
	return ServeConfig{Node: "tcp://" + node.Addr(), ChainID: chainID, KeyFile: writePrivValidatorKey(t, dir)}
}

func startServe(t *testing.T, cfg ServeConfig) (*Serve, *recordingObserver, *syncbuf.Buffer) {
	t.Helper()
	obs, log := &recordingObserver{}, &syncbuf.Buffer{}
	cfg.Obs, cfg.Log = obs, log
	s, err := StartServe(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return s, obs, log
}

// records lists what obs got, as "phase h=H ok|ERROR".
func (o *recordingObserver) lines() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, r := range o.recs {
		l := fmt.Sprintf("%s h=%d r=%d ok", r.Phase, r.Height, r.Round)
		if r.Err != nil {
			l = fmt.Sprintf("%s h=%d r=%d ERROR %v", r.Phase, r.Height, r.Round, r.Err)
		}
		out = append(out, l)
	}
	return out
}

func waitSigner(t *testing.T, node *RemoteClient, log *syncbuf.Buffer) {
	t.Helper()
	if err := node.WaitForSigner(10 * time.Second); err != nil {
		t.Fatalf("signer did not connect: %v\nlog:\n%s", err, log)
	}
}

func signVote(t *testing.T, node *RemoteClient, typ cmtproto.SignedMsgType, h int64) error {
	t.Helper()
	v := vote(typ, h, 0, 0xAA)
	if err := node.SignVote(chainID, v, false); err != nil {
		return err
	}
	verifyVote(t, node, v)
	return nil
}

func TestServeSignsAndReports(t *testing.T) {
	node := fakeNode(t, "127.0.0.1:0")
	cfg := serveConfig(t, node)
	ctx, cancel := context.WithCancel(context.Background())
	obs, log := &recordingObserver{}, &syncbuf.Buffer{}
	cfg.Obs, cfg.Log = obs, log
	done := make(chan error, 1)
	go func() { done <- RunServe(ctx, cfg) }()
	waitSigner(t, node, log)

	pub, err := node.GetPubKey()
	if err != nil || !bytes.Equal(pub.Bytes(), testKey().PubKey().Bytes()) {
		t.Fatalf("node got pubkey %v (%v), want the key file's", pub, err)
	}
	p := proposal(1, 0, 0xAA, time.Unix(1700000000, 0).UTC())
	if err := node.SignProposal(chainID, p); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []cmtproto.SignedMsgType{types.PrevoteType, types.PrecommitType} {
		if err := signVote(t, node, typ, 1); err != nil {
			t.Fatal(err)
		}
	}
	// The guard refuses a conflicting vote: a record with its error.
	if err := node.SignVote(chainID, vote(types.PrecommitType, 1, 0, 0xBB), false); err == nil {
		t.Fatal("conflicting precommit signed")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RunServe did not return after cancel")
	}
	got := obs.lines()
	want := []string{"proposal h=1 r=0 ok", "prevote h=1 r=0 ok", "precommit h=1 r=0 ok"}
	if len(got) != 4 || !slices.Equal(got[:3], want) || !strings.Contains(got[3], "precommit h=1 r=0 ERROR") || !strings.Contains(got[3], "conflicting data") {
		t.Errorf("records %q, want %q and the refused precommit", got, want)
	}
	for _, s := range []string{"connected to the node", "valnet_signer_state.json", "the node's own priv_validator_state.json is not used"} {
		if !strings.Contains(log.String(), s) {
			t.Errorf("log lacks %q:\n%s", s, log)
		}
	}
	// The lock is released: another signer may take the state file now.
	g, err := OpenGuard(PrivKeySigner{Key: testKey()}, DefaultStateFile(cfg.KeyFile))
	if err != nil {
		t.Fatalf("state file still locked after stop: %v", err)
	}
	if h, _, _ := g.LastSigned(); h != 1 {
		t.Errorf("high-water mark height %d, want 1", h)
	}
	g.Close()
}

func TestServeReconnectsAfterTheNodeComesBack(t *testing.T) {
	node := fakeNode(t, "127.0.0.1:0")
	addr := node.Addr()
	s, obs, log := startServe(t, serveConfig(t, node))
	waitSigner(t, node, log)
	if err := signVote(t, node, types.PrevoteType, 1); err != nil {
		t.Fatal(err)
	}
	// The node goes away (a restart): its listener and the connection close.
	// CometBFT's listener drops the connection before it closes, so the
	// signer's first redial can land on it; that connection then dies by
	// the 5 s read deadline. A real node's exit closes everything at once.
	node.Close()
	// The node is gone for as long as it takes the signer to see it: its
	// connection lost and a redial that found nobody (the first redial
	// may land on the dying listener; that one ends by its read deadline).
	eventually(t, "the signer to find the node gone", func() bool {
		return strings.Contains(log.String(), "connection to the node lost") && strings.Contains(log.String(), "node not reachable (")
	})
	node = fakeNode(t, addr)
	waitSigner(t, node, log)
	if err := signVote(t, node, types.PrevoteType, 2); err != nil {
		t.Fatalf("after the node came back: %v\nlog:\n%s", err, log)
	}
	s.Stop()
	if !slices.Contains(obs.lines(), "prevote h=2 r=0 ok") {
		t.Errorf("no record of the signature after reconnecting: %q", obs.lines())
	}
	for _, s := range []string{"connection to the node lost", "reconnected to the node"} {
		if !strings.Contains(log.String(), s) {
			t.Errorf("log lacks %q:\n%s", s, log)
		}
	}
}

func TestServeWaitsForANodeThatIsNotUpYet(t *testing.T) {
	// Take a free port, then start the signer before anything listens on it.
	probe := fakeNode(t, "127.0.0.1:0")
	addr := probe.Addr()
	probe.Close()
	// On a fake clock the pause between dials is exact: the first dial
	// fails, then nothing is dialled until 100 ms have passed.
	clk := newFakeClock()
	dir := t.TempDir()
	s, _, log := startServe(t, ServeConfig{Node: "tcp://" + addr, ChainID: chainID, KeyFile: writePrivValidatorKey(t, dir), Clock: clk})
	awaitWaiters(t, clk, 1) // the first dial failed; the pause began
	if n := s.dials.Load(); n != 1 {
		t.Fatalf("%d dials before the first pause, want 1", n)
	}
	node := fakeNode(t, addr)
	clk.Advance(redialPause - 1)
	if !waiting(clk, 1) || s.dials.Load() != 1 {
		t.Fatalf("redialed before the pause of %v was over (%d dials)", redialPause, s.dials.Load())
	}
	clk.Advance(1)
	waitSigner(t, node, log)
	if n := s.dials.Load(); n != 2 {
		t.Errorf("%d dials, want the failed one and the one after the pause", n)
	}
	if err := signVote(t, node, types.PrevoteType, 1); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "node not reachable (") {
		t.Errorf("log does not say it waits for the node:\n%s", log)
	}
}

// fakeTimeline drops every signature from the first request at or above
// height on, and records what the signer told it.
type fakeTimeline struct {
	height int64

	mu      sync.Mutex
	faults  *Faults
	reached []int64
	stopped bool
}

func (f *fakeTimeline) Arm(fs *Faults, logf func(string, ...any)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = fs
	logf("fake timeline armed")
}

func (f *fakeTimeline) Reached(h int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reached = append(f.reached, h)
	if h >= f.height {
		f.faults.SetFailure("fake", FailRule{Mode: FailDrop})
	}
}

func (f *fakeTimeline) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
}

// TestServeTellsTheTimelineFirst: the timeline is armed before the first
// dial, hears each request's height before the request is signed (so the
// fault it starts hits that request), and is stopped with the signer.
func TestServeTellsTheTimelineFirst(t *testing.T) {
	node := fakeNode(t, "127.0.0.1:0")
	cfg := serveConfig(t, node)
	tl := &fakeTimeline{height: 3}
	cfg.Timeline = tl
	s, obs, log := startServe(t, cfg)
	if !strings.Contains(log.String(), "valnet signer: fake timeline armed") {
		t.Errorf("not armed through the status log before dialing:\n%s", log)
	}
	waitSigner(t, node, log)
	for h := int64(1); h <= 3; h++ {
		err := signVote(t, node, types.PrevoteType, h)
		if (err != nil) != (h == 3) {
			t.Fatalf("h=%d: %v", h, err)
		}
	}
	s.Stop()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if !slices.Equal(tl.reached, []int64{1, 2, 3}) || !tl.stopped {
		t.Errorf("timeline reached %v, stopped %v; want [1 2 3], true", tl.reached, tl.stopped)
	}
	if got := obs.lines(); len(got) != 3 || !strings.Contains(got[2], "prevote h=3 r=0 ERROR signature dropped by fault fake") {
		t.Errorf("records %q", got)
	}
}

func TestServeKeyfileAndSimulated(t *testing.T) {
	dir := t.TempDir()
	armored := filepath.Join(dir, "key.armor")
	if err := WriteKeyFile(armored, testKey(), testPass, testCost); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  ServeConfig
		want string
	}{
		{"keyfile", ServeConfig{Type: TypeKeyfile, KeyFile: armored, Passphrase: testPass, Decrypt: ModeOnce}, "keyfile(once)"},
		{"simulated", ServeConfig{Type: TypeSimulated, Profile: "yubihsm2", KeyFile: writePrivValidatorKey(t, dir),
			StateFile: filepath.Join(dir, "sim-state.json")}, "simulated(model:yubihsm2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := fakeNode(t, "127.0.0.1:0")
			tc.cfg.Node, tc.cfg.ChainID = "tcp://"+node.Addr(), chainID
			s, obs, log := startServe(t, tc.cfg)
			waitSigner(t, node, log)
			if err := signVote(t, node, types.PrevoteType, 1); err != nil {
				t.Fatal(err)
			}
			s.Stop()
			if !strings.Contains(log.String(), tc.want) || !slices.Equal(obs.lines(), []string{"prevote h=1 r=0 ok"}) {
				t.Errorf("log lacks %q or records %q:\n%s", tc.want, obs.lines(), log)
			}
		})
	}
}

func TestServeOverAUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "pv.sock")
	node, err := ListenRemote(ClientConfig{Network: NetUnix, Address: sock, ChainID: chainID})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	dir := t.TempDir()
	_, _, log := startServe(t, ServeConfig{Node: "unix://" + sock, ChainID: chainID, KeyFile: writePrivValidatorKey(t, dir)})
	waitSigner(t, node, log)
	if err := signVote(t, node, types.PrevoteType, 1); err != nil {
		t.Fatal(err)
	}
	// A unix socket has no SecretConnection: no identity is made.
	if _, err := os.Stat(filepath.Join(dir, DefaultServeIdentityName)); !os.IsNotExist(err) {
		t.Errorf("identity file over unix: %v", err)
	}
}

func TestServeRefusesAStateFileInUse(t *testing.T) {
	node := fakeNode(t, "127.0.0.1:0")
	cfg := serveConfig(t, node)
	first, _, _ := startServe(t, cfg)
	_, err := StartServe(cfg)
	if err == nil || !strings.Contains(err.Error(), "another signer is using this state file") {
		t.Fatalf("second signer on %s: %v", first.StateFile(), err)
	}
}

func TestServeRefusesANodeOfAnotherChain(t *testing.T) {
	node, err := ListenRemote(ClientConfig{Network: NetTCP, Address: "127.0.0.1:0", ChainID: "other-chain",
		NodeKey: ed25519.GenPrivKeyFromSecret([]byte("node"))})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	_, _, log := startServe(t, ServeConfig{Node: "tcp://" + node.Addr(), ChainID: chainID, KeyFile: writePrivValidatorKey(t, t.TempDir())})
	waitSigner(t, node, log)
	if _, err := node.GetPubKey(); err == nil {
		t.Fatal("a node of another chain got the key")
	}
	if !strings.Contains(log.String(), `it runs chain "other-chain", this signer serves chain "valnet-test"`) {
		t.Errorf("log does not say why:\n%s", log)
	}
}

// --node-id: serve signs only for the node with that SecretConnection
// identity, and says whom it refused and whom it expected.
func TestServeRefusesAnUnexpectedNode(t *testing.T) {
	node := fakeNode(t, "127.0.0.1:0") // its key: GenPrivKeyFromSecret("node")
	nodeID := IdentityOf(ed25519.GenPrivKeyFromSecret([]byte("node")).PubKey())
	other := IdentityOf(ed25519.GenPrivKeyFromSecret([]byte("impostor")).PubKey())

	cfg := serveConfig(t, node)
	cfg.NodeID = other
	s, obs, log := startServe(t, cfg)
	want := fmt.Sprintf("refused the node: its SecretConnection identity is %s, expected %s (node_id); redialing every 100ms", nodeID, other)
	// The node's listener accepts the handshake before the signer hangs
	// up; the signer must say why and never serve. Refused, it redials
	// (the dial loop says the refusal before it redials). That a refusal
	// redialed is not said again is TestPinnedDialSaysEachRefusalOnce's:
	// here the node's listener takes seconds to accept anew.
	eventually(t, "a refusal and a redial", func() bool { return s.refused.count() >= 1 && s.dials.Load() >= 2 })
	if strings.Count(log.String(), want) != 1 || strings.Contains(log.String(), "connected to the node") {
		t.Fatalf("log does not say it once (%q):\n%s", want, log)
	}
	s.Stop()
	if len(obs.lines()) != 0 {
		t.Fatalf("signed for a refused node: %v", obs.lines())
	}

	cfg.NodeID = strings.ToLower(nodeID)
	_, _, log = startServe(t, cfg)
	waitSigner(t, node, log)
	if err := signVote(t, node, types.PrevoteType, 1); err != nil {
		t.Fatal(err)
	}
}

func TestServeKeepsItsIdentity(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "id.json")
	k1, created, err := LoadOrGenIdentity(path)
	if err != nil || !created {
		t.Fatalf("first load: created=%v err=%v", created, err)
	}
	k2, created, err := LoadOrGenIdentity(path)
	if err != nil || created || !bytes.Equal(k1, k2) {
		t.Fatalf("second load: created=%v err=%v same=%v", created, err, bytes.Equal(k1, k2))
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("identity file mode %v, want 0600", st.Mode().Perm())
	}
}

func TestServeStartErrors(t *testing.T) {
	dir := t.TempDir()
	keyJSON := writePrivValidatorKey(t, dir)
	armored := filepath.Join(dir, "key.armor")
	if err := WriteKeyFile(armored, testKey(), testPass, testCost); err != nil {
		t.Fatal(err)
	}
	base := ServeConfig{Node: "tcp://127.0.0.1:1", ChainID: chainID, KeyFile: keyJSON}
	tests := []struct {
		name string
		edit func(c *ServeConfig)
		want string
	}{
		{"no node", func(c *ServeConfig) { c.Node = "" }, "node is required"},
		{"bad scheme", func(c *ServeConfig) { c.Node = "http://127.0.0.1:26659" }, `unsupported scheme "http"`},
		{"no scheme", func(c *ServeConfig) { c.Node = "127.0.0.1:26659" }, "has no scheme"},
		{"bad port", func(c *ServeConfig) { c.Node = "tcp://127.0.0.1:x" }, "not a port number"},
		{"no chain", func(c *ServeConfig) { c.ChainID = "" }, "chain_id is required"},
		{"unknown type", func(c *ServeConfig) { c.Type = "pkcs11" }, `unknown signer type "pkcs11"`},
		{"simulated without profile", func(c *ServeConfig) { c.Type = TypeSimulated }, "needs a profile"},
		{"profile without simulated", func(c *ServeConfig) { c.Profile = "yubihsm2" }, "applies only to type simulated"},
		{"unknown profile", func(c *ServeConfig) { c.Type, c.Profile = TypeSimulated, "nope" }, `unknown profile "nope"`},
		{"passphrase for local", func(c *ServeConfig) { c.Passphrase = testPass }, "only to type keyfile"},
		{"key file missing", func(c *ServeConfig) { c.KeyFile = filepath.Join(dir, "nope.json") }, "no such file"},
		{"armored file as local", func(c *ServeConfig) { c.KeyFile = armored }, "use type keyfile"},
		{"json file as keyfile", func(c *ServeConfig) { c.Type, c.Passphrase = TypeKeyfile, testPass }, "looks like a priv_validator_key.json"},
		{"keyfile without passphrase", func(c *ServeConfig) { c.Type, c.KeyFile = TypeKeyfile, armored }, "needs a passphrase"},
		{"wrong passphrase", func(c *ServeConfig) {
			c.Type, c.KeyFile, c.Passphrase = TypeKeyfile, armored, []byte("wrong")
		}, "wrong passphrase"},
		{"bad latency", func(c *ServeConfig) { c.Latency = &latency.Spec{Dist: latency.Lognormal, P50: 2, P99: 1} }, "latency: p99"},
		{"phases without latency", func(c *ServeConfig) { c.LatencyPhases = []string{phase.Prevote} }, "latency phases given without a latency"},
		{"bad phase", func(c *ServeConfig) {
			c.Latency, c.LatencyPhases = &latency.Spec{Dist: latency.Fixed}, []string{"vote"}
		}, `unknown phase "vote"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.edit(&cfg)
			s, err := StartServe(cfg)
			if err == nil {
				s.Stop()
				t.Fatalf("started; want an error with %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q lacks %q", err, tc.want)
			}
		})
	}
}

func TestParseNodeAddr(t *testing.T) {
	for in, want := range map[string][2]string{
		"tcp://127.0.0.1:26659":  {NetTCP, "127.0.0.1:26659"},
		"unix:///tmp/pv.sock":    {NetUnix, "/tmp/pv.sock"},
		"tcp://[::1]:26659":      {NetTCP, "[::1]:26659"},
		"unix://relative/x.sock": {NetUnix, "relative/x.sock"},
	} {
		n, a, err := ParseNodeAddr(in)
		if err != nil || n != want[0] || a != want[1] {
			t.Errorf("ParseNodeAddr(%q) = %q %q %v", in, n, a, err)
		}
	}
}
