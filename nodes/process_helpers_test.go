package nodes

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

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/p2p"
	"github.com/cometbft/cometbft/privval"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/results"
)

// testNet is a network of validators laid out the way the runner lays one
// out (keys, genesis with names, homes with ports and a full mesh of
// persistent peers), small enough to read.
type testNet struct {
	t     *testing.T
	specs []Spec
	nodes []Node
	log   *eventLog
	keys  []ed25519.PrivKey
}

// newTestNet lays out n validators named v0..v<n-1> under root and writes
// their homes. With filePV each home also gets a FilePV (what a process
// node signs with); Spec.Signer is that FilePV either way.
func newTestNet(t *testing.T, root string, n int) *testNet {
	t.Helper()
	tn := &testNet{t: t, log: newEventLog()}
	gen := &types.GenesisDoc{
		GenesisTime: time.Now().UTC().Round(time.Millisecond), ChainID: "valnet-test",
		InitialHeight: 1, ConsensusParams: types.DefaultConsensusParams(),
	}
	names := map[string]string{}
	var nodeKeys []*p2p.NodeKey
	for i := range n {
		name := fmt.Sprintf("v%d", i)
		key := ed25519.GenPrivKeyFromSecret([]byte("valnet-test/" + name))
		tn.keys = append(tn.keys, key)
		nodeKeys = append(nodeKeys, &p2p.NodeKey{PrivKey: ed25519.GenPrivKeyFromSecret([]byte("valnet-test/p2p/" + name))})
		gen.Validators = append(gen.Validators, types.GenesisValidator{PubKey: key.PubKey(), Power: 10, Name: name})
		names[strings.ToUpper(hex.EncodeToString(key.PubKey().Address()))] = name
	}
	if err := gen.ValidateAndComplete(); err != nil {
		t.Fatal(err)
	}
	var ports []int
	for i := range n {
		name := fmt.Sprintf("v%d", i)
		c := NewConfig(filepath.Join(root, name))
		c.Consensus.TimeoutPropose = 400 * time.Millisecond
		c.Consensus.TimeoutProposeDelta = 100 * time.Millisecond
		c.Consensus.TimeoutPrevote = 100 * time.Millisecond
		c.Consensus.TimeoutPrevoteDelta = 50 * time.Millisecond
		c.Consensus.TimeoutPrecommit = 100 * time.Millisecond
		c.Consensus.TimeoutPrecommitDelta = 50 * time.Millisecond
		c.Consensus.TimeoutCommit = 150 * time.Millisecond
		for _, addr := range []*string{&c.P2P.ListenAddress, &c.RPC.ListenAddress} {
			port, err := FreePort()
			if err != nil {
				t.Fatal(err)
			}
			ports = append(ports, port)
			*addr = fmt.Sprintf("tcp://127.0.0.1:%d", port)
		}
		tn.specs = append(tn.specs, Spec{Name: name, Config: c, Genesis: gen, NodeKey: nodeKeys[i],
			Names: names, Sink: tn.log})
	}
	t.Cleanup(func() {
		for _, p := range ports {
			ReleasePort(p)
		}
	})
	for i := range tn.specs {
		var peers []string
		for j, o := range tn.specs {
			if j != i {
				peers = append(peers, NodeID(o.NodeKey)+"@"+strings.TrimPrefix(o.Config.P2P.ListenAddress, "tcp://"))
			}
		}
		c := tn.specs[i].Config
		c.P2P.PersistentPeers = strings.Join(peers, ",")
		if err := WriteHome(tn.specs[i]); err != nil {
			t.Fatal(err)
		}
		pv := privval.NewFilePV(tn.keys[i], c.PrivValidatorKeyFile(), c.PrivValidatorStateFile())
		pv.Save()
		tn.specs[i].Signer = pv
	}
	showNodeLogsOnFailure(t, root)
	return tn
}

// start starts every node with backend; Cleanup stops them.
func (tn *testNet) start(ctx context.Context, backend Backend) {
	tn.t.Helper()
	tn.t.Cleanup(func() { tn.stop() })
	for _, s := range tn.specs {
		n, err := backend.Start(ctx, s)
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

func (tn *testNet) node(name string) Node {
	for _, n := range tn.nodes {
		if n.Name() == name {
			return n
		}
	}
	tn.t.Fatalf("no node %s", name)
	return nil
}

func (tn *testNet) ctl(name string) Controller {
	c, ok := tn.node(name).(Controller)
	if !ok {
		tn.t.Fatalf("node %s has no Controller", name)
	}
	return c
}

// height is what node name's HeightReporter says.
func (tn *testNet) height(name string) int64 {
	return tn.node(name).(HeightReporter).Height()
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
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
}

func newEventLog() *eventLog { return &eventLog{blocks: map[string]int64{}} }

func (l *eventLog) Emit(e results.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
	if e.Kind == results.KindBlock && e.Height > l.blocks[e.Node] {
		l.blocks[e.Node] = e.Height
	}
}

// block is the highest block node has reported through events.
func (l *eventLog) block(node string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.blocks[node]
}

// minBlock is the lowest of nodes' highest blocks.
func (l *eventLog) minBlock(nodes ...string) int64 {
	m := int64(-1)
	for _, n := range nodes {
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

// conflictingVotes lists every validator that, as any node saw it, voted
// for two different blocks in one height, round and phase: a double sign.
func conflictingVotes(events []results.Event) []string {
	type hrp struct {
		val    string
		height int64
		round  int32
		phase  string
	}
	seen := map[hrp]string{}
	var out []string
	for _, e := range events {
		if e.Kind != results.KindVote {
			continue
		}
		k := hrp{e.Validator, e.Height, e.Round, e.Phase}
		if b, ok := seen[k]; ok && b != e.BlockID {
			out = append(out, fmt.Sprintf("%s at %d/%d %s: %q and %q", e.Validator, e.Height, e.Round, e.Phase, b, e.BlockID))
			continue
		}
		seen[k] = e.BlockID
	}
	return out
}

// countingSigner wraps a signer and records every vote it signed, to find
// two signatures for different blocks at one height, round and type.
type countingSigner struct {
	types.PrivValidator
	mu      sync.Mutex
	signed  map[[3]int64]string
	doubles []string
	votes   int
}

func newCountingSigner(pv types.PrivValidator) *countingSigner {
	return &countingSigner{PrivValidator: pv, signed: map[[3]int64]string{}}
}

func (s *countingSigner) SignVote(chainID string, v *cmtproto.Vote, ext bool) error {
	if err := s.PrivValidator.SignVote(chainID, v, ext); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.votes++
	k := [3]int64{v.Height, int64(v.Round), int64(v.Type)}
	id := hex.EncodeToString(v.BlockID.Hash)
	if prev, ok := s.signed[k]; ok && prev != id {
		s.doubles = append(s.doubles, fmt.Sprintf("%v: %s then %s", k, prev, id))
	}
	s.signed[k] = id
	return nil
}

func (s *countingSigner) report() (votes int, doubles []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.votes, append([]string(nil), s.doubles...)
}

// showNodeLogsOnFailure prints the tail of every node's log and stderr
// if the test fails; they stay in files otherwise.
func showNodeLogsOnFailure(t *testing.T, root string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, pattern := range []string{"*/node.log", "*/" + StderrFile} {
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
