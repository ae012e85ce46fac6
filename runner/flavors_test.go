package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeCometBFT writes a program that answers `version` with version and
// whose `init --home H` writes config as H/config/config.toml and a
// genesis of the v0.38 layout: what resolveFlavors reads of a binary.
func fakeCometBFT(t *testing.T, version, config string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	gen := `{"chain_id":"x","consensus_params":{"abci":{"vote_extensions_enable_height":"0"}},"validators":[]}`
	if err := os.WriteFile(filepath.Join(dir, "genesis.json"), []byte(gen), 0o600); err != nil {
		t.Fatal(err)
	}
	script := `#!/bin/sh
case "$1" in
version) echo "` + version + `" ;;
init) mkdir -p "$3/config" && cp "` + dir + `/config.toml" "` + dir + `/genesis.json" "$3/config/" ;;
*) exit 2 ;;
esac
`
	bin := filepath.Join(dir, "cometbft")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

const fakeConfig = `db_backend = "goleveldb"
moniker = "x"
[p2p]
laddr = "tcp://0.0.0.0:26656"
persistent_peers = ""
flush_throttle_timeout = "100ms"
send_rate = 5120000
[mempool]
size = 5000
`

// What only the node binary can tell is checked before the run, every
// problem at once, with the scenario position of a node.config key.
func TestFlavorProblems(t *testing.T) {
	v038 := fakeCometBFT(t, "0.38.26", fakeConfig)
	v037 := fakeCometBFT(t, "0.37.16", fakeConfig)
	unknown := fakeCometBFT(t, "0.36.4", fakeConfig)
	broken := filepath.Join(t.TempDir(), "cometbft")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho 'no such command' >&2; exit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown version", `
run: {backend: process}
node: {binary: ` + unknown + `}
validators: [{name: v}]`, []string{`validators[v].node.binary: node binary ` + unknown + `: CometBFT "0.36" is not a version valnet knows (known: v0.37, v0.38, v0.39, v0.40, v1.0)`}},
		{"binary that does not answer version", `
run: {backend: process}
node: {binary: ` + broken + `}
validators: [{name: v}]`, []string{"`cometbft version` failed (exit status 1): no such command"}},
		{"node.config keys of that version", `
run: {backend: process}
node:
  binary: ` + v038 + `
  config:
    p2p.flush_throtle_timeout: 10ms
    mempool.size: 10000
    mempol.size: 1
validators: [{name: v}, {name: w}]`, []string{
			"test.yaml:6:5: node.config.p2p.flush_throtle_timeout: " + v038 + ` (cometbft 0.38.26, line v0.38) has no config key p2p.flush_throtle_timeout; did you mean "p2p.flush_throttle_timeout"? (its p2p keys: p2p.flush_throttle_timeout, p2p.laddr, p2p.persistent_peers, p2p.send_rate)`,
			"test.yaml:8:5: node.config.mempol.size: ",
		}},
		{"a declared version the binary is not", `
run: {backend: process}
node: {binary: ` + v038 + `, version: v0.37}
validators: [{name: v}]`, []string{"validators[v].node.version: v0.37, but the binary is " + v038 + " (cometbft 0.38.26, line v0.38)"}},
		{"valnet's own node is v1.0", `
node: {version: v0.38}
validators: [{name: v}]`, []string{"validators[v].node.version: v0.38, but valnet's own node is CometBFT 1.0.1: another line needs node.binary"}},
		{"two lines in one network", `
run: {backend: process}
validators:
  - {name: a, node: {binary: ` + v038 + `}}
  - {name: b, node: {binary: ` + v037 + `}}`, []string{"node: the network mixes CometBFT lines (v0.37: b; v0.38: a); CometBFT does not support"}},
		{"vote extensions on v0.37", `
chain: {vote_extensions_enable_height: 1}
run: {backend: process}
node: {binary: ` + v037 + `}
validators: [{name: v}]`, []string{"chain.vote_extensions_enable_height: 1, but v's node (" + v037 + " (cometbft 0.37.16, line v0.37)) has no vote extensions"}},
		{"a dialect the node does not read", `
run: {backend: process}
node: {binary: ` + v038 + `}
validators: [{name: v, signer: {dialect: v1}}]`, []string{"validators[v].signer.dialect: v1, but its node (" + v038 + " (cometbft 0.38.26, line v0.38)) reads the v0.38 privval layout"}},
		{"the sim models few keys", `
run: {backend: sim}
node: {version: v0.38, config: {mempool.size: 1, p2p.send_rate: 1}}
validators: [{name: v}]`, []string{"node.config.mempool.size: the sim (a MODEL of CometBFT v0.38) does not model config key mempool.size (it models: consensus.peer_gossip_sleep_duration, p2p.flush_throttle_timeout, p2p.send_rate)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := parse(t, "name: flavors\n"+strings.TrimPrefix(tc.yaml, "\n"))
			ps := Preflight(context.Background(), plan)
			got := ps.Error()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("preflight:\n%s\nwant a problem containing %q", got, w)
				}
			}
			if len(ps) != len(tc.want) {
				t.Errorf("%d problems, want %d:\n%s", len(ps), len(tc.want), got)
			}
		})
	}
}
