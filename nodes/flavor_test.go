package nodes

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/p2p"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/internal/cmtversion"
)

// testdata/cometbft-v0.38.26 is what a stock cometbft v0.38.26 (built from
// the Go module proxy) writes with `cometbft init`: its own defaults.
// TestIntegFlavorTestdata (integ) checks it against the binary.
const v038Testdata = "testdata/cometbft-v0.38.26"

func v038Flavor(t *testing.T) *Flavor {
	t.Helper()
	l, err := cmtversion.Lookup("v0.38")
	if err != nil {
		t.Fatal(err)
	}
	f := &Flavor{Binary: "/opt/cometbft-v0.38.26", Line: l, Reported: "0.38.26"}
	if f.config, err = readTOMLTree(filepath.Join(v038Testdata, "config.toml")); err != nil {
		t.Fatal(err)
	}
	if f.genesis, err = readJSONTree(filepath.Join(v038Testdata, "genesis.json")); err != nil {
		t.Fatal(err)
	}
	return f
}

// A v0.38 home keeps v0.38's own defaults where valnet keeps CometBFT
// v1's (goleveldb, flush_throttle_timeout 100 ms), takes every setting
// valnet makes that v0.38 has, never sees a v1-only key, and gets the
// scenario's node.config on top; its genesis enables vote extensions where
// v0.38 reads it (consensus_params.abci).
func TestFlavorHomeOfAV038Binary(t *testing.T) {
	f := v038Flavor(t)
	home := t.TempDir()
	c := NewConfig(home)
	c.Consensus.TimeoutCommit = 250 * time.Millisecond
	c.P2P.ListenAddress = "tcp://127.0.0.1:40001"
	c.P2P.PersistentPeers = "abc@127.0.0.1:40002"
	c.PrivValidatorListenAddr = "unix:///tmp/x.sock"
	gen := &types.GenesisDoc{ChainID: "flavor-chain", GenesisTime: time.Unix(1700000000, 0).UTC(), InitialHeight: 1,
		ConsensusParams: types.DefaultConsensusParams()}
	gen.ConsensusParams.Feature.VoteExtensionsEnableHeight = 3
	pub := ed25519.GenPrivKeyFromSecret([]byte("v")).PubKey()
	gen.Validators = []types.GenesisValidator{{Address: pub.Address(), PubKey: pub, Power: 10, Name: "v"}}
	if err := gen.ValidateAndComplete(); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Name: "v", Config: c, Genesis: gen, NodeKey: &p2p.NodeKey{PrivKey: ed25519.GenPrivKeyFromSecret([]byte("n"))},
		Binary: f.Binary, Flavor: f, NodeConfig: []ConfigSetting{{Key: "mempool.size", Value: int64(10000)}, {Key: "p2p.send_rate", Value: int64(1 << 20)}}}
	if err := WriteHome(spec); err != nil {
		t.Fatal(err)
	}
	got, err := readTOMLTree(filepath.Join(home, "config", "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"db_backend":                           "goleveldb",             // v0.38's, not v1's pebbledb
		"p2p.flush_throttle_timeout":           "100ms",                 // v0.38's default, not v1's 10ms
		"consensus.timeout_commit":             "250ms",                 // valnet's setting
		"p2p.laddr":                            "tcp://127.0.0.1:40001", // valnet's
		"p2p.persistent_peers":                 "abc@127.0.0.1:40002",
		"p2p.pex":                              false, // valnet's NewConfig
		"p2p.allow_duplicate_ip":               true,
		"priv_validator_laddr":                 "unix:///tmp/x.sock",
		"moniker":                              filepath.Base(home),
		"mempool.size":                         int64(10000), // node.config
		"p2p.send_rate":                        int64(1 << 20),
		"consensus.peer_gossip_sleep_duration": "100ms",
	}
	for k, v := range want {
		tt, leaf, ok := lookup(got, k)
		if !ok || tt[leaf] != v {
			t.Errorf("%s = %v, want %v", k, tt[leaf], v)
		}
	}
	for _, k := range []string{"grpc.laddr", "storage.pruning.interval", "consensus.peer_gossip_intraloop_sleep_duration"} {
		if _, _, ok := lookup(got, k); ok {
			t.Errorf("v1-only key %s reached the v0.38 home", k)
		}
	}
	// Every key is one v0.38 knows.
	keys := map[string]bool{}
	for _, k := range f.ConfigKeys() {
		keys[k] = true
	}
	walkLeaves(got, "", func(k string, _ any) {
		if !keys[k] {
			t.Errorf("key %s is not v0.38's", k)
		}
	})

	raw, err := os.ReadFile(filepath.Join(home, "config", "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		ChainID         string `json:"chain_id"`
		ConsensusParams struct {
			ABCI    map[string]string `json:"abci"`
			Feature map[string]string `json:"feature"`
			Block   map[string]string `json:"block"`
		} `json:"consensus_params"`
		Validators []json.RawMessage `json:"validators"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if g.ChainID != "flavor-chain" || len(g.Validators) != 1 {
		t.Errorf("chain %q, %d validators", g.ChainID, len(g.Validators))
	}
	if g.ConsensusParams.ABCI["vote_extensions_enable_height"] != "3" || g.ConsensusParams.Feature != nil {
		t.Errorf("vote extensions: abci %v, feature %v; want abci.vote_extensions_enable_height 3 and no feature", g.ConsensusParams.ABCI, g.ConsensusParams.Feature)
	}
	if g.ConsensusParams.Block["max_bytes"] != "22020096" {
		t.Errorf("block params %v: want v0.38's own defaults", g.ConsensusParams.Block)
	}
}

// node.config on valnet's own node sets its config struct as config.toml
// would (durations, numbers), and what the struct refuses is an error.
func TestApplyConfig(t *testing.T) {
	c := NewConfig(t.TempDir())
	err := ApplyConfig(c, []ConfigSetting{{Key: "p2p.flush_throttle_timeout", Value: "25ms"}, {Key: "mempool.size", Value: int64(123)},
		{Key: "consensus.peer_gossip_sleep_duration", Value: "40ms"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.P2P.FlushThrottleTimeout != 25*time.Millisecond || c.Mempool.Size != 123 || c.Consensus.PeerGossipSleepDuration != 40*time.Millisecond {
		t.Errorf("got flush %v, mempool %d, gossip %v", c.P2P.FlushThrottleTimeout, c.Mempool.Size, c.Consensus.PeerGossipSleepDuration)
	}
	if !c.P2P.AllowDuplicateIP || c.P2P.PexReactor {
		t.Error("keys not named were changed")
	}
	if err := ApplyConfig(c, []ConfigSetting{{Key: "mempool.size", Value: int64(-1)}}); err == nil {
		t.Error("a negative mempool size was accepted")
	}
}
