package runner

import (
	"fmt"
	"path/filepath"
	"strings"

	cfg "github.com/cometbft/cometbft/config"
	"github.com/cometbft/cometbft/privval"

	"github.com/valnet/valnet/nodes"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
)

// The nodes that are not validators (scenario nodes: and validators'
// sentries) are members too, after the validators: r.others. Their key
// is in no genesis, so CometBFT runs them as full nodes that sign nothing;
// each has a FilePV of its own in its home, as `cometbft init` writes one.

// layoutPeerNodes derives every non-validator node's keys, home and
// config, as layoutNetwork does a validator's.
func layoutPeerNodes(p *scenarios.Plan, seed int64, outDir string, fl flavors) ([]*member, error) {
	flavor := topFlavor(p, fl)
	out := make([]*member, 0, len(p.Nodes))
	for i := range p.Nodes {
		n := &p.Nodes[i]
		key, err := validatorKey(seed, "node:"+n.Name, scenarios.KeyEd25519)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", n.Name, err)
		}
		m := &member{plan: scenarios.ValidatorPlan{Name: n.Name, Node: p.Node}, key: key, nodeKey: nodeKey(seed, n.Name), flavor: flavor, peer: n}
		m.config = nodes.NewConfig(filepath.Join(outDir, NodesDir, n.Name))
		applyTimeouts(m.config, p.Timeouts)
		if flavor.Own() {
			if err := nodes.ApplyConfig(m.config, configSettings(p.Node)); err != nil {
				return nil, fmt.Errorf("node %s: %w", n.Name, err)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// topFlavor is what runs the top-level node: a validator's flavor with the
// same binary, or valnet's own.
func topFlavor(p *scenarios.Plan, fl flavors) *nodes.Flavor {
	for _, v := range p.Validators {
		if v.Node.Binary == p.Node.Binary && fl[v.Name] != nil {
			return fl[v.Name]
		}
	}
	return nodes.OwnFlavor()
}

// peerNodeSigner writes the node's FilePV into its home (a process or a
// container reads it there) and returns it (an in-process node uses it).
func peerNodeSigner(m *member) *privval.FilePV {
	pv := privval.NewFilePV(m.key, m.config.PrivValidatorKeyFile(), m.config.PrivValidatorStateFile())
	return pv
}

// peerNodeInfos are the non-validator nodes as run_start records them.
func peerNodeInfos(p *scenarios.Plan) []eventlog.PeerNodeInfo {
	out := make([]eventlog.PeerNodeInfo, len(p.Nodes))
	for i, n := range p.Nodes {
		out[i] = eventlog.PeerNodeInfo{Name: n.Name, Role: n.Role, SentryOf: n.SentryOf}
	}
	return out
}

// configurePeering sets what a node's role asks of its p2p config, after
// its persistent peers are the layout's dials:
//   - a sentry keeps its validator private (private_peer_ids: never
//     gossiped to others) and always takes it back (unconditional);
//   - with seeds, every node finds its peers through them, as CometBFT's
//     PEX does (pex, seeds), the seeds in seed_mode; persistent peers are
//     then only a sentried validator's links to its sentries;
//   - a validator behind sentries never takes part in PEX.
func configurePeering(c *cfg.Config, m *member, p *scenarios.Plan, ids map[string]string, seedAddrs []string, sentried bool) {
	if m.peer != nil && m.peer.Role == scenarios.RoleSentry {
		c.P2P.PrivatePeerIDs = ids[m.peer.SentryOf]
		c.P2P.UnconditionalPeerIDs = ids[m.peer.SentryOf]
	}
	if !p.HasSeeds() {
		return
	}
	switch {
	case sentried:
		c.P2P.PexReactor = false
	case m.peer != nil && m.peer.Role == scenarios.RoleSeed:
		c.P2P.PexReactor, c.P2P.SeedMode = true, true
		c.P2P.PersistentPeers = ""
	default:
		c.P2P.PexReactor = true
		c.P2P.Seeds = strings.Join(seedAddrs, ",")
	}
}
