package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cometbft/cometbft/p2p"
	"github.com/pelletier/go-toml/v2"

	"github.com/valnet/valnet/results/eventlog"
)

// TestRunPeerNodes runs docs/examples/sentries.yaml: a validator behind two sentries and a full node run
// as real in-process nodes. The guarded validator dials its sentries
// alone, who keep it private; every non-validator node follows the
// chain to the target, is in network.json and summary.json's nodes, and
// is never counted as a validator.
func TestRunPeerNodes(t *testing.T) {
	src, err := os.ReadFile("../docs/examples/sentries.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plan := parse(t, string(src))
	dir := t.TempDir()
	showLogsOnFailure(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, err := Run(ctx, plan, Options{OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Summary
	if s.StopReason != eventlog.StopHeights {
		t.Fatalf("stopped by %q", s.StopReason)
	}
	var names []string
	for _, n := range s.Nodes {
		names = append(names, n.Name+":"+n.Role+":"+n.SentryOf)
		if n.HeightsCommitted < 4 || n.LastHeight < 4 {
			t.Errorf("%s followed the chain to %d (%d heights), want 4", n.Name, n.LastHeight, n.HeightsCommitted)
		}
	}
	if want := []string{"full:full:", "guarded-sentry-1:sentry:guarded", "guarded-sentry-2:sentry:guarded"}; !slices.Equal(sorted(names), want) {
		t.Errorf("nodes %v, want %v", names, want)
	}
	for _, v := range s.Validators {
		if strings.Contains(v.Name, "sentry") || v.Name == "full" {
			t.Errorf("%s counted as a validator", v.Name)
		}
	}
	if len(s.Validators) != 4 {
		t.Errorf("%d validators, want 4", len(s.Validators))
	}

	var info NetworkInfo
	data, err := os.ReadFile(filepath.Join(dir, NetworkFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &info); err != nil {
		t.Fatal(err)
	}
	homes := map[string]string{}
	for _, n := range append(append([]NetworkNode(nil), info.Nodes...), wrap(info.Validators)...) {
		homes[n.Name] = n.Home
	}
	if len(info.Nodes) != 3 {
		t.Fatalf("network.json nodes: %+v", info.Nodes)
	}
	cfg := func(name string) map[string]any {
		t.Helper()
		var c map[string]any
		data, err := os.ReadFile(filepath.Join(homes[name], "config", "config.toml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := toml.Unmarshal(data, &c); err != nil {
			t.Fatal(err)
		}
		return c["p2p"].(map[string]any)
	}
	guarded := cfg("guarded")
	peers := strings.Split(guarded["persistent_peers"].(string), ",")
	if len(peers) != 2 {
		t.Fatalf("guarded dials %v, want its two sentries", peers)
	}
	for _, name := range []string{"guarded-sentry-1", "guarded-sentry-2"} {
		sc := cfg(name)
		if sc["private_peer_ids"] == "" || sc["private_peer_ids"] != sc["unconditional_peer_ids"] {
			t.Errorf("%s: private %q, unconditional %q: want the guarded validator's id in both", name, sc["private_peer_ids"], sc["unconditional_peer_ids"])
		}
	}
	// the guarded validator's own id is what the sentries keep private
	sentryPrivate := cfg("guarded-sentry-1")["private_peer_ids"].(string)
	key, err := p2p.LoadNodeKey(filepath.Join(homes["guarded"], "config", "node_key.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(key.ID()) != sentryPrivate {
		t.Errorf("the sentries keep %q private, the guarded validator is %q", sentryPrivate, key.ID())
	}
	for _, name := range []string{"v-1", "v-2", "v-3", "full", "guarded-sentry-2"} {
		if strings.Contains(cfg(name)["persistent_peers"].(string), sentryPrivate+"@") {
			t.Errorf("%s dials the guarded validator (%s)", name, sentryPrivate)
		}
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

func wrap(vs []NetworkValidator) []NetworkNode {
	out := make([]NetworkNode, len(vs))
	for i, v := range vs {
		out[i] = NetworkNode{NetworkValidator: v}
	}
	return out
}
