package docker

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/p2p"
	"github.com/cometbft/cometbft/privval"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/network"
	"github.com/valnet/valnet/nodes"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/signers"
)

var (
	testBinDir string // the static valnet binary, built once by TestMain
	testBin    string
	testBinErr error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if testBinDir != "" {
		os.RemoveAll(testBinDir)
	}
	os.Exit(code)
}

var binOnce sync.Once

// engine skips the test when no Docker engine is reachable, and builds the
// static valnet binary (with the backend's own builder) once per test
// binary.
func engine(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := connect(ctx, "")
	if err != nil {
		t.Skip(err)
	}
	binOnce.Do(func() {
		goos, goarch, err := engineArch(c)
		if err != nil {
			testBinErr = err
			return
		}
		root, err := valnetModuleRoot(context.Background())
		if err != nil {
			testBinErr = err
			return
		}
		if testBinDir, testBinErr = os.MkdirTemp("", "valnet-dkbin-"); testBinErr != nil {
			return
		}
		testBin = filepath.Join(testBinDir, "valnet")
		start := time.Now()
		testBinErr = buildBinary(context.Background(), root, testBin, goos, goarch, nil)
		fmt.Fprintf(os.Stderr, "static valnet binary built in %v\n", time.Since(start).Round(time.Millisecond))
	})
	if testBinErr != nil {
		t.Fatal(testBinErr)
	}
	return testBin
}

// newTestRun starts a run for the test; Cleanup closes it and checks that
// nothing labelled with it is left.
func newTestRun(t testing.TB, logf func(string, ...any)) *Run {
	t.Helper()
	return newTestRunWith(t, Options{Logf: logf})
}

// newTestRunWith is newTestRun with options (the test binary is set).
func newTestRunWith(t testing.TB, o Options) *Run {
	t.Helper()
	o.Binary = engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := NewRun(ctx, t.Name(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		assertNoLeftovers(t, r.client, r.ID())
		if _, err := os.Stat(r.sockDir); err == nil {
			t.Errorf("socket dir %s left behind", r.sockDir)
		}
	})
	return r
}

// testNet is a network of validators laid out the way the runner lays one
// out for docker: Prepare for IPs, keys and a genesis with names, homes
// with container listen addresses, persistent peers by container IP (or
// through the link fabric on the bridge gateway), a FilePV in each home or
// a remote signer on the host.
type testNet struct {
	t      testing.TB
	run    *Run
	specs  []nodes.Spec
	nodes  []nodes.Node
	log    *eventLog
	keys   []ed25519.PrivKey
	fabric *network.Fabric
	remote map[string]*signers.RemoteServer
}

type netOptions struct {
	fabric bool              // peers dial each other through the link fabric
	remote map[string]string // these validators sign on the host: over "tcp" or "unix"
}

func newTestNet(t testing.TB, r *Run, root string, n int, o netOptions) *testNet {
	t.Helper()
	tn := &testNet{t: t, run: r, log: newEventLog(), remote: map[string]*signers.RemoteServer{}}
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("v%d", i))
	}
	addrs, err := r.Prepare(names)
	if err != nil {
		t.Fatal(err)
	}
	gen := &types.GenesisDoc{
		GenesisTime: time.Now().UTC().Round(time.Millisecond), ChainID: "valnet-docker-test",
		InitialHeight: 1, ConsensusParams: types.DefaultConsensusParams(),
	}
	valNames := map[string]string{}
	var nodeKeys []*p2p.NodeKey
	for _, name := range names {
		key := ed25519.GenPrivKeyFromSecret([]byte("valnet-docker-test/" + name))
		tn.keys = append(tn.keys, key)
		nodeKeys = append(nodeKeys, &p2p.NodeKey{PrivKey: ed25519.GenPrivKeyFromSecret([]byte("valnet-docker-test/p2p/" + name))})
		gen.Validators = append(gen.Validators, types.GenesisValidator{PubKey: key.PubKey(), Power: 10, Name: name})
		valNames[strings.ToUpper(hex.EncodeToString(key.PubKey().Address()))] = name
	}
	if err := gen.ValidateAndComplete(); err != nil {
		t.Fatal(err)
	}
	if o.fabric {
		tn.fabric = network.NewFabric(network.Options{ListenHost: addrs.Gateway, Logf: t.Logf})
		t.Cleanup(func() { tn.fabric.Close() })
	}
	for i, name := range names {
		c := nodes.NewConfig(filepath.Join(root, name))
		c.Consensus.TimeoutPropose = 400 * time.Millisecond
		c.Consensus.TimeoutProposeDelta = 100 * time.Millisecond
		c.Consensus.TimeoutPrevote = 100 * time.Millisecond
		c.Consensus.TimeoutPrevoteDelta = 50 * time.Millisecond
		c.Consensus.TimeoutPrecommit = 100 * time.Millisecond
		c.Consensus.TimeoutPrecommitDelta = 50 * time.Millisecond
		c.Consensus.TimeoutCommit = 150 * time.Millisecond
		Configure(c, o.remote[name] == signers.NetTCP)
		signerNet, signerAddr := signers.NetTCP, addrs.Nodes[name].PrivVal
		if o.remote[name] == signers.NetUnix {
			// As the runner serves via: direct/unix (a unix socket, or
			// TCP through a relay with a remote engine).
			c.PrivValidatorListenAddr, signerNet, signerAddr = r.SignerAddr(name)
		}
		var peers []string
		for j, other := range names {
			if j == i {
				continue
			}
			addr := addrs.Nodes[other].P2P
			if tn.fabric != nil {
				if addr, err = tn.fabric.Route(name, other, addr); err != nil {
					t.Fatal(err)
				}
			}
			peers = append(peers, nodes.NodeID(nodeKeys[j])+"@"+addr)
		}
		c.P2P.PersistentPeers = strings.Join(peers, ",")
		spec := nodes.Spec{Name: name, Config: c, Genesis: gen, NodeKey: nodeKeys[i], Names: valNames, Sink: tn.log}
		if err := nodes.WriteHome(spec); err != nil {
			t.Fatal(err)
		}
		if o.remote[name] != "" {
			// The key stays on the host, as a PKCS#11 or Ledger signer's
			// would: a FilePV outside the home, served over the node's
			// priv_validator_laddr.
			dir := filepath.Join(root, "signer-"+name)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			pv := privval.NewFilePV(tn.keys[i], filepath.Join(dir, "key.json"), filepath.Join(dir, "state.json"))
			pv.Save()
			srv, err := signers.ServeRemote(signers.ServerConfig{Network: signerNet, Address: signerAddr,
				ChainID: gen.ChainID, IdentityKey: ed25519.GenPrivKey(), Signer: pv, RedialForever: true})
			if err != nil {
				t.Fatal(err)
			}
			tn.remote[name] = srv
			t.Cleanup(func() { srv.Stop() })
		} else {
			pv := privval.NewFilePV(tn.keys[i], c.PrivValidatorKeyFile(), c.PrivValidatorStateFile())
			pv.Save()
		}
		tn.specs = append(tn.specs, spec)
	}
	return tn
}

// start starts every node, in order, as the runner does.
func (tn *testNet) start(ctx context.Context) {
	tn.t.Helper()
	b := tn.run.Backend()
	for _, s := range tn.specs {
		n, err := b.Start(ctx, s)
		if err != nil {
			tn.t.Fatal(err)
		}
		tn.nodes = append(tn.nodes, n)
	}
}

// stop stops every node at once and reports errors.
func (tn *testNet) stop() {
	var wg sync.WaitGroup
	for _, n := range tn.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := n.Stop(ctx); err != nil {
				tn.t.Errorf("stop %s: %v", n.Name(), err)
			}
		}()
	}
	wg.Wait()
}

func (tn *testNet) node(name string) nodes.Node {
	for _, n := range tn.nodes {
		if n.Name() == name {
			return n
		}
	}
	tn.t.Fatalf("no node %s", name)
	return nil
}

func (tn *testNet) ctl(name string) nodes.Controller { return tn.node(name).(nodes.Controller) }

func (tn *testNet) height(name string) int64 { return tn.node(name).(nodes.HeightReporter).Height() }

// waitFor polls cond until it holds or timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eventLog is a Sink that keeps every event and the highest block each
// node reported.
type eventLog struct {
	mu     sync.Mutex
	events []results.Event
	blocks map[string]int64
	first  time.Time // the first block event
}

func newEventLog() *eventLog { return &eventLog{blocks: map[string]int64{}} }

func (l *eventLog) Emit(e results.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
	if e.Kind == results.KindBlock {
		if l.first.IsZero() {
			l.first = time.Now()
		}
		if e.Height > l.blocks[e.Node] {
			l.blocks[e.Node] = e.Height
		}
	}
}

func (l *eventLog) block(node string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.blocks[node]
}

func (l *eventLog) firstBlock() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first
}

// minBlock is the lowest of nodes' highest blocks.
func (l *eventLog) minBlock(names ...string) int64 {
	m := int64(-1)
	for _, n := range names {
		if b := l.block(n); m < 0 || b < m {
			m = b
		}
	}
	return m
}

func (l *eventLog) snapshot() []results.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]results.Event(nil), l.events...)
}

func (l *eventLog) count(kind results.Kind, node string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := 0
	for _, e := range l.events {
		if e.Kind == kind && e.Node == node {
			c++
		}
	}
	return c
}

// showNodeLogsOnFailure prints the tail of every node's log and stderr if
// the test fails; they stay in files otherwise. Registered before the
// run's Close, it runs after it, once Close has saved container output.
func showNodeLogsOnFailure(t testing.TB, root string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, pattern := range []string{"*/node.log", "*/" + nodes.StderrFile} {
			files, _ := filepath.Glob(filepath.Join(root, pattern))
			for _, f := range files {
				data, _ := os.ReadFile(f)
				if len(data) > 3000 {
					data = data[len(data)-3000:]
				}
				t.Logf("--- %s (tail)\n%s", f, data)
			}
		}
	})
}
