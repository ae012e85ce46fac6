package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cometbft/cometbft/crypto/ed25519"
	dc "github.com/ory/dockertest/v3/docker"

	"github.com/valnet/valnet/internal/nettest"
	"github.com/valnet/valnet/network"
	"github.com/valnet/valnet/nodes"
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
		if os.Getenv("CI") != "" {
			t.Fatalf("no Docker engine in CI: %v", err)
		}
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
	*nettest.Net
	run    *Run
	specs  []nodes.Spec
	fabric *network.Fabric
	remote map[string]*signers.RemoteServer
}

type netOptions struct {
	fabric bool              // peers dial each other through the link fabric
	remote map[string]string // these validators sign on the host: over "tcp" or "unix"
}

func newTestNet(t testing.TB, r *Run, root string, n int, o netOptions) *testNet {
	t.Helper()
	tn := &testNet{Net: nettest.NewNet(t), run: r, remote: map[string]*signers.RemoteServer{}}
	vals := nettest.NewValidators(t, "valnet-docker-test", n)
	addrs, err := r.Prepare(vals.Names)
	if err != nil {
		t.Fatal(err)
	}
	if o.fabric {
		tn.fabric = network.NewFabric(network.Options{ListenHost: addrs.Gateway, Logf: t.Logf})
		t.Cleanup(func() { tn.fabric.Close() })
	}
	for i, name := range vals.Names {
		c := nodes.NewConfig(filepath.Join(root, name))
		nettest.FastConsensus(c)
		Configure(c, o.remote[name] == signers.NetTCP)
		signerNet, signerAddr := signers.NetTCP, addrs.Nodes[name].PrivVal
		if o.remote[name] == signers.NetUnix {
			// As the runner serves via: direct/unix (a unix socket, or
			// TCP through a relay with a remote engine).
			c.PrivValidatorListenAddr, signerNet, signerAddr = r.SignerAddr(name)
		}
		c.P2P.PersistentPeers = vals.Peers(i, func(j int) string {
			other := vals.Names[j]
			addr := addrs.Nodes[other].P2P
			if tn.fabric != nil {
				if addr, err = tn.fabric.Route(name, other, addr); err != nil {
					t.Fatal(err)
				}
			}
			return addr
		})
		spec := nodes.Spec{Name: name, Config: c, Genesis: vals.Genesis, NodeKey: vals.NodeKeys[i], Names: vals.ByAddress, Sink: tn.Log}
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
			pv := vals.FilePV(i, filepath.Join(dir, "key.json"), filepath.Join(dir, "state.json"))
			srv, err := signers.ServeRemote(signers.ServerConfig{Network: signerNet, Address: signerAddr,
				ChainID: vals.Genesis.ChainID, IdentityKey: ed25519.GenPrivKey(), Signer: pv, RedialForever: true})
			if err != nil {
				t.Fatal(err)
			}
			tn.remote[name] = srv
			t.Cleanup(func() { srv.Stop() })
		} else {
			vals.FilePV(i, c.PrivValidatorKeyFile(), c.PrivValidatorStateFile())
		}
		tn.specs = append(tn.specs, spec)
	}
	return tn
}

// start starts every node, in order, as the runner does; Cleanup stops
// them.
func (tn *testNet) start(ctx context.Context) {
	tn.T.Helper()
	b := tn.run.Backend()
	tn.Start(ctx, len(tn.specs), func(ctx context.Context, i int) (nettest.Node, error) {
		return b.Start(ctx, tn.specs[i])
	})
}

// addrs are node name's addresses.
func (tn *testNet) addrs(name string) nodes.Addrs { return tn.Node(name).(nodes.Node).Addrs() }

// stopClean checks that no node saw a double sign and stops every node.
func (tn *testNet) stopClean() {
	tn.T.Helper()
	if c := nettest.ConflictingVotes(tn.Log.Snapshot()); len(c) > 0 {
		tn.T.Fatalf("conflicting votes: %v", c)
	}
	start := time.Now()
	tn.Stop()
	tn.T.Logf("clean stop of %d containers in %v", len(tn.Nodes), time.Since(start).Round(time.Millisecond))
}

// assertNoLeftovers checks that no container or network carries the label
// of run id (what `docker ps -a --filter label=valnet.run=<id>` shows).
func assertNoLeftovers(t testing.TB, c *dc.Client, id string) {
	t.Helper()
	cs, err := c.ListContainers(dc.ListContainersOptions{All: true, Filters: map[string][]string{"label": {LabelRun + "=" + id}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ct := range cs {
		t.Errorf("container %v (%s) of run %s left behind", ct.Names, ct.State, id)
	}
	nets, err := c.FilteredListNetworks(dc.NetworkFilterOpts{"label": {LabelRun + "=" + id: true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nets {
		t.Errorf("network %s of run %s left behind", n.Name, id)
	}
}
