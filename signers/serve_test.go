package signers

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/privval"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/latency"
)

// syncBuffer is written by the signer's goroutines and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

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

func startServe(t *testing.T, cfg ServeConfig) (*Serve, *syncBuffer, *syncBuffer) {
	t.Helper()
	out, log := &syncBuffer{}, &syncBuffer{}
	cfg.Log = log
	s, err := StartServe(cfg, out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return s, out, log
}

func waitSigner(t *testing.T, node *RemoteClient, log *syncBuffer) {
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

func TestServeSignsPrintsAndSummarizes(t *testing.T) {
	node := fakeNode(t, "127.0.0.1:0")
	cfg := serveConfig(t, node)
	ctx, cancel := context.WithCancel(context.Background())
	out, log := &syncBuffer{}, &syncBuffer{}
	cfg.Log = log
	done := make(chan error, 1)
	go func() { done <- RunServe(ctx, cfg, out) }()
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
	// The guard refuses a conflicting vote: an ERROR line.
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
	for _, re := range []string{
		`(?m)^proposal h=1 r=0 \d+\.\d\dms$`,
		`(?m)^prevote h=1 r=0 \d+\.\d\dms$`,
		`(?m)^precommit h=1 r=0 \d+\.\d\dms$`,
		`(?m)^precommit h=1 r=0 ERROR .*conflicting data`,
		`(?m)^summary: 4 signature requests, 1 refused, in `,
		`(?m)^phase +count +errors +p50 +p99 +max$`,
		`(?m)^proposal +1 +0 +\d+\.\d\dms +\d+\.\d\dms +\d+\.\d\dms$`,
		`(?m)^precommit +1 +1 `,
	} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("output lacks %s:\n%s", re, out)
		}
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
	s, out, log := startServe(t, serveConfig(t, node))
	waitSigner(t, node, log)
	if err := signVote(t, node, types.PrevoteType, 1); err != nil {
		t.Fatal(err)
	}
	// The node goes away (a restart): its listener and the connection close.
	// CometBFT's listener drops the connection before it closes, so the
	// signer's first redial can land on it; that connection then dies by
	// the 5 s read deadline. A real node's exit closes everything at once.
	node.Close()
	time.Sleep(300 * time.Millisecond) // the signer redials into nothing for a while
	node = fakeNode(t, addr)
	waitSigner(t, node, log)
	if err := signVote(t, node, types.PrevoteType, 2); err != nil {
		t.Fatalf("after the node came back: %v\nlog:\n%s", err, log)
	}
	s.Stop() // lines are printed from a queue; Stop flushes it
	if !strings.Contains(out.String(), "prevote h=2 r=0 ") {
		t.Errorf("no line for the signature after reconnecting:\n%s", out)
	}
	for _, s := range []string{"connection to the node lost", "reconnected to the node"} {
		if !strings.Contains(log.String(), s) {
			t.Errorf("log lacks %q:\n%s", s, log)
		}
	}
}

// blockedWriter blocks every write until released, like a stdout piped
// into a pager that nobody reads.
type blockedWriter struct {
	release chan struct{}
	syncBuffer
}

func (b *blockedWriter) Write(p []byte) (int, error) {
	<-b.release
	return b.syncBuffer.Write(p)
}

func TestServeOutputDoesNotHoldUpSignatures(t *testing.T) {
	node := fakeNode(t, "127.0.0.1:0")
	cfg := serveConfig(t, node)
	cfg.Log = &syncBuffer{}
	out := &blockedWriter{release: make(chan struct{})}
	s, err := StartServe(cfg, out)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	waitSigner(t, node, cfg.Log.(*syncBuffer))
	done := make(chan error, 1)
	go func() {
		for h := int64(1); h <= 3; h++ {
			if err := signVote(t, node, types.PrevoteType, h); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("signatures waited for stdout")
	}
	close(out.release)
	s.Stop()
	for h := 1; h <= 3; h++ {
		if !strings.Contains(out.String(), fmt.Sprintf("prevote h=%d r=0 ", h)) {
			t.Errorf("line of h=%d lost:\n%s", h, out.String())
		}
	}
}

func TestServeWaitsForANodeThatIsNotUpYet(t *testing.T) {
	// Take a free port, then start the signer before anything listens on it.
	probe := fakeNode(t, "127.0.0.1:0")
	addr := probe.Addr()
	probe.Close()
	dir := t.TempDir()
	_, _, log := startServe(t, ServeConfig{Node: "tcp://" + addr, ChainID: chainID, KeyFile: writePrivValidatorKey(t, dir)})
	time.Sleep(300 * time.Millisecond)
	node := fakeNode(t, addr)
	waitSigner(t, node, log)
	if err := signVote(t, node, types.PrevoteType, 1); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "node not reachable (") {
		t.Errorf("log does not say it waits for the node:\n%s", log)
	}
}

func TestServeFaultAtHeightDropsThatHeight(t *testing.T) {
	node := fakeNode(t, "127.0.0.1:0")
	cfg := serveConfig(t, node)
	cfg.Faults = []ServeFault{
		{Action: FaultActionDrop, Height: 3, Phases: []string{phase.Prevote}},
		{Action: FaultActionDelay, Height: 5, Latency: &latency.Spec{Dist: "fixed", Value: 300 * time.Millisecond}},
	}
	s, out, log := startServe(t, cfg)
	waitSigner(t, node, log)
	for h := int64(1); h <= 5; h++ {
		start := time.Now()
		err := signVote(t, node, types.PrevoteType, h)
		took := time.Since(start)
		switch {
		case h == 3 && err == nil:
			t.Fatal("prevote at the fault's height was signed")
		case h == 3 && !strings.Contains(err.Error(), "signature dropped by fault"):
			t.Fatalf("h=3: %v", err)
		case h != 3 && err != nil:
			t.Fatalf("h=%d: %v", h, err)
		case h == 5 && took < 300*time.Millisecond:
			t.Errorf("h=5 took %v, want the fault's 300ms delay", took)
		case h < 5 && took > 250*time.Millisecond:
			t.Errorf("h=%d took %v before the delay fault", h, took)
		}
		// Other phases of the height are not dropped.
		if err := signVote(t, node, types.PrecommitType, h); err != nil && h != 3 {
			t.Fatalf("precommit h=%d: %v", h, err)
		} else if h == 3 && err != nil {
			t.Fatalf("precommit at the drop's height (prevote only): %v", err)
		}
	}
	s.Stop()
	if !regexp.MustCompile(`(?m)^prevote h=3 r=0 ERROR signature dropped by fault faults\[0\]:signer-drop$`).MatchString(out.String()) {
		t.Errorf("no ERROR line for the dropped prevote:\n%s", out)
	}
	for _, s := range []string{"fault 0 (signer-drop at h=3): drops prevote signatures of h=3", "fault 1 (signer-delay at h=5) started at h=5: adds fixed 300ms"} {
		if !strings.Contains(log.String(), s) {
			t.Errorf("log lacks %q:\n%s", s, log)
		}
	}
}

func TestServeFaultWindowEnds(t *testing.T) {
	node := fakeNode(t, "127.0.0.1:0")
	cfg := serveConfig(t, node)
	cfg.Faults = []ServeFault{{Action: FaultActionError, Height: 2, Duration: 300 * time.Millisecond}}
	_, _, log := startServe(t, cfg)
	waitSigner(t, node, log)
	if err := signVote(t, node, types.PrevoteType, 1); err != nil {
		t.Fatal(err)
	}
	// The window starts with the first request at height 2 and covers
	// later heights until it ends.
	for _, h := range []int64{2, 3} {
		if err := signVote(t, node, types.PrevoteType, h); err == nil || !strings.Contains(err.Error(), "signer error injected") {
			t.Fatalf("h=%d inside the window: %v", h, err)
		}
	}
	time.Sleep(400 * time.Millisecond)
	if err := signVote(t, node, types.PrevoteType, 4); err != nil {
		t.Fatalf("after the window: %v", err)
	}
	if !strings.Contains(log.String(), "ended") {
		t.Errorf("log does not say the fault ended:\n%s", log)
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
			s, out, log := startServe(t, tc.cfg)
			waitSigner(t, node, log)
			if err := signVote(t, node, types.PrevoteType, 1); err != nil {
				t.Fatal(err)
			}
			s.Stop()
			if !strings.Contains(log.String(), tc.want) || !strings.Contains(out.String(), "prevote h=1 r=0 ") {
				t.Errorf("log lacks %q or no signature line:\n%s\n%s", tc.want, log, out)
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
	_, err := StartServe(cfg, &syncBuffer{})
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
	fixed := &latency.Spec{Dist: "fixed", Value: time.Second}
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
		{"outage fault", func(c *ServeConfig) { c.Faults = []ServeFault{{Action: "signer-outage", Height: 3}} }, "does not apply to a standalone signer"},
		{"restart fault", func(c *ServeConfig) { c.Faults = []ServeFault{{Action: "signer-restart", Height: 3}} }, "does not apply to a standalone signer"},
		{"fault without height", func(c *ServeConfig) { c.Faults = []ServeFault{{Action: FaultActionDrop}} }, "at.height must be at least 1"},
		{"delay without latency", func(c *ServeConfig) { c.Faults = []ServeFault{{Action: FaultActionDelay, Height: 2}} }, "needs latency"},
		{"drop with latency", func(c *ServeConfig) {
			c.Faults = []ServeFault{{Action: FaultActionDrop, Height: 2, Latency: fixed}}
		}, "takes no latency"},
		{"round with a window", func(c *ServeConfig) {
			c.Faults = []ServeFault{{Action: FaultActionDrop, Height: 2, HasRound: true, Duration: time.Second}}
		}, "at.round applies only to a fault at one height"},
		{"bad phase", func(c *ServeConfig) {
			c.Faults = []ServeFault{{Action: FaultActionDrop, Height: 2, Phases: []string{"vote"}}}
		}, `unknown phase "vote"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.edit(&cfg)
			s, err := StartServe(cfg, &syncBuffer{})
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
