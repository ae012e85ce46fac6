package scenarios

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/valnet/valnet/internal/cmtversion"
)

// NodePlan is what runs a validator's node: node: at the top, with a
// validator's own node: over it (binary and version replace; config
// entries add, a validator's own winning).
type NodePlan struct {
	// Binary is a CometBFT binary run instead of valnet's own node
	// (process and docker backends); "" is valnet's node.
	Binary string
	// Version is the CometBFT line written (cmtversion names: "v0.38");
	// "" when not written: the binary's own, read before the run starts,
	// or valnet's (v1.0) for its own node and the sim.
	Version string
	// Config are node.config's raw config.toml settings, checked against
	// that version's keys before the run starts (the keys depend on the
	// binary).
	Config []ConfigSetting
}

// ConfigSetting is one node.config entry.
type ConfigSetting struct {
	Key   string // dotted config.toml key: "p2p.send_rate"
	Value any    // string, int64, float64, bool or []any of them
	Pos   Pos
}

// rawNodeConfig is node.config: CometBFT's own keys, so it walks its
// mapping itself (customDecoder). Keys are written dotted
// ("consensus.peer_gossip_sleep_duration: 50ms") or nested as in
// config.toml ("p2p: {send_rate: 10240000}"); values are scalars or lists
// of scalars.
type rawNodeConfig struct {
	entries []ConfigSetting
}

func (c *rawNodeConfig) decodeYAML(d *decoder, n *yaml.Node, key string) {
	if isNull(n) {
		return
	}
	var walk func(n *yaml.Node, prefix, key string)
	walk = func(n *yaml.Node, prefix, key string) {
		if n.Kind != yaml.MappingNode {
			d.fail(d.at(n), key, "expected a mapping of config.toml keys (\"p2p.send_rate: 10240000\"), got "+describe(n))
			return
		}
		d.entries(n, key, func(kn, vn *yaml.Node, name, child string) {
			for vn.Kind == yaml.AliasNode {
				vn = vn.Alias
			}
			d.pos[child] = nodePos{Key: d.at(kn), Value: d.at(vn)}
			full := name
			if prefix != "" {
				full = prefix + "." + name
			}
			if vn.Kind == yaml.MappingNode {
				walk(vn, full, child)
				return
			}
			v, ok := configValue(d, vn, child)
			if ok {
				c.entries = append(c.entries, ConfigSetting{Key: full, Value: v, Pos: d.at(kn)})
			}
		})
	}
	walk(n, "", key)
}

// configValue reads a scalar (or a list of scalars) as TOML would hold
// it.
func configValue(d *decoder, n *yaml.Node, key string) (any, bool) {
	if n.Kind == yaml.SequenceNode {
		out := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			v, ok := configValue(d, item, fmt.Sprintf("%s[%d]", key, i))
			if !ok {
				return nil, false
			}
			if _, nested := v.([]any); nested {
				d.fail(d.at(item), key, "lists of lists are not config.toml values")
				return nil, false
			}
			out = append(out, v)
		}
		return out, true
	}
	if !d.scalar(n, key, "a config.toml value (a string, number or true/false)") {
		return nil, false
	}
	switch n.ShortTag() {
	case "!!int":
		if i, err := strconv.ParseInt(n.Value, 0, 64); err == nil {
			return i, true
		}
		d.fail(d.at(n), key, fmt.Sprintf("integer %s is out of range", n.Value))
		return nil, false
	case "!!float":
		f, ok := d.number(n, key)
		return f, ok
	case "!!bool":
		b, ok := d.boolean(n, key)
		return b, ok
	}
	return n.Value, true
}

// Keys valnet sets itself in every node's config: a node.config entry for
// one of them would break the network valnet lays out, or would not be
// what the results describe.
var nodeConfigOwned = map[string]string{
	"moniker":                                "valnet names each node after its validator",
	"proxy_app":                              "valnet gives the node its app (the built-in kvstore or app:)",
	"abci":                                   "set by app.transport",
	"priv_validator_laddr":                   "valnet wires the signer (signer: via, external)",
	"priv_validator_key_file":                "valnet wires the signer",
	"priv_validator_state_file":              "valnet wires the signer",
	"node_key_file":                          "valnet derives node keys from run.seed",
	"genesis_file":                           "valnet writes the genesis",
	"db_dir":                                 "valnet lays out each node's home",
	"p2p.laddr":                              "valnet picks each node's ports",
	"rpc.laddr":                              "valnet picks each node's ports",
	"p2p.persistent_peers":                   "set by network.topology",
	"p2p.external_address":                   "valnet picks each node's address",
	"consensus.timeout_propose":              "set chain.timeouts.propose",
	"consensus.timeout_propose_delta":        "set chain.timeouts.propose_delta",
	"consensus.timeout_prevote":              "set chain.timeouts.prevote",
	"consensus.timeout_prevote_delta":        "set chain.timeouts.prevote_delta",
	"consensus.timeout_precommit":            "set chain.timeouts.precommit",
	"consensus.timeout_precommit_delta":      "set chain.timeouts.precommit_delta",
	"consensus.timeout_commit":               "set chain.timeouts.commit",
	"instrumentation.prometheus":             "CometBFT's Prometheus registry is global: two in-process nodes cannot both register (valnet records its own metrics)",
	"instrumentation.prometheus_listen_addr": "metrics are off (instrumentation.prometheus)",
}

// resolveNode resolves a node mapping (top-level node: when top is nil,
// else a validator's own over top).
func (d *decoder) resolveNode(key string, rn *rawNode, run RunPlan, top *NodePlan) NodePlan {
	var np NodePlan
	if top != nil {
		np = *top
		np.Config = append([]ConfigSetting(nil), top.Config...)
	}
	if rn == nil {
		return np
	}
	if b := d.resolveNodeBinary(key, rn, run); b != "" {
		np.Binary = b
	}
	if rn.Version != nil {
		k := key + ".version"
		if l, err := cmtversion.Lookup(*rn.Version); err != nil {
			d.fail(d.valuePos(k), k, fmt.Sprintf("CometBFT %q is not a line valnet knows", *rn.Version), cmtversion.Names()...)
		} else {
			np.Version = l.Name
		}
	}
	if rn.Config != nil {
		for _, s := range rn.Config.entries {
			k := key + ".config." + s.Key
			if why, owned := nodeConfigOwned[s.Key]; owned {
				d.fail(s.Pos, k, "valnet sets this key itself: "+why)
				continue
			}
			// A validator's own entry replaces the top-level one.
			replaced := false
			for i := range np.Config {
				if np.Config[i].Key == s.Key {
					np.Config[i], replaced = s, true
				}
			}
			if !replaced {
				np.Config = append(np.Config, s)
			}
		}
	}
	return np
}

// resolveNodeBinary checks a node mapping's binary and returns it, joined
// to the scenario file's directory; "" when none is given. The inprocess
// backend and the sim run no binaries.
func (d *decoder) resolveNodeBinary(key string, rn *rawNode, run RunPlan) string {
	if rn == nil || rn.Binary == nil {
		return ""
	}
	k := key + ".binary"
	if *rn.Binary == "" {
		d.fail(d.valuePos(k), k, "must not be empty: the path of a CometBFT binary (remove the key to run valnet's own node)")
		return ""
	}
	if run.Backend != backendProcess && run.Backend != backendDocker {
		if !d.failed("run.backend") {
			d.fail(d.keyPos(k), k, fmt.Sprintf("node.binary needs run.backend: process or docker; with backend %s %s", run.Backend,
				map[bool]string{true: "there are no nodes to run a binary (use node.version to model a CometBFT line)",
					false: "every node runs inside valnet, not as a binary of its own"}[run.Backend == BackendSim]))
		}
		return ""
	}
	return d.filePath(*rn.Binary)
}

// nodeVersionsText names the lines a scenario may write.
func nodeVersionsText() string { return strings.Join(cmtversion.Names(), ", ") }

// resolveVoteExtensions checks chain.vote_extensions_enable_height.
func (d *decoder) resolveVoteExtensions(h *int64) int64 {
	const key = "chain.vote_extensions_enable_height"
	if h == nil {
		return 0
	}
	if *h < 0 {
		d.fail(d.valuePos(key), key, fmt.Sprintf("must be >= 0 (0: off), got %d", *h))
		return 0
	}
	return *h
}
