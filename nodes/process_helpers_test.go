package nodes

import (
	"context"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/internal/nettest"
)

// testNet is a network of validators laid out the way the runner lays one
// out (keys, genesis with names, homes with ports and a full mesh of
// persistent peers), small enough to read.
type testNet struct {
	*nettest.Net
	specs []Spec
}

// newTestNet lays out n validators named v0..v<n-1> under root and writes
// their homes, each with a FilePV (what a process node signs with);
// Spec.Signer is that FilePV.
func newTestNet(t *testing.T, root string, n int) *testNet {
	t.Helper()
	tn := &testNet{Net: nettest.NewNet(t)}
	vals := nettest.NewValidators(t, "valnet-test", n)
	var ports []int
	t.Cleanup(func() {
		for _, p := range ports {
			ReleasePort(p)
		}
	})
	for i, name := range vals.Names {
		c := NewConfig(filepath.Join(root, name))
		nettest.FastConsensus(c)
		for _, addr := range []*string{&c.P2P.ListenAddress, &c.RPC.ListenAddress} {
			port, err := FreePort()
			if err != nil {
				t.Fatal(err)
			}
			ports = append(ports, port)
			*addr = fmt.Sprintf("tcp://127.0.0.1:%d", port)
		}
		tn.specs = append(tn.specs, Spec{Name: name, Config: c, Genesis: vals.Genesis, NodeKey: vals.NodeKeys[i],
			Names: vals.ByAddress, Sink: tn.Log})
	}
	for i := range tn.specs {
		c := tn.specs[i].Config
		c.P2P.PersistentPeers = vals.Peers(i, func(j int) string {
			return strings.TrimPrefix(tn.specs[j].Config.P2P.ListenAddress, "tcp://")
		})
		if err := WriteHome(tn.specs[i]); err != nil {
			t.Fatal(err)
		}
		tn.specs[i].Signer = vals.FilePV(i, c.PrivValidatorKeyFile(), c.PrivValidatorStateFile())
	}
	nettest.ShowLogsOnFailure(t, root, "node.log", StderrFile)
	return tn
}

// start starts every node with backend; Cleanup stops them.
func (tn *testNet) start(ctx context.Context, backend Backend) {
	tn.T.Helper()
	tn.Start(ctx, len(tn.specs), func(ctx context.Context, i int) (nettest.Node, error) {
		return backend.Start(ctx, tn.specs[i])
	})
}

// addrs are node name's listen addresses.
func (tn *testNet) addrs(name string) Addrs { return tn.Node(name).(Node).Addrs() }

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
