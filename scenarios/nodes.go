package scenarios

import (
	"fmt"
	"slices"

	"github.com/valnet/valnet/network"
)

// Roles of the nodes that are not validators.
const (
	RoleFull   = "full"   // follows the chain, relays, signs nothing
	RoleSeed   = "seed"   // CometBFT's seed_mode: hands out peer addresses, then hangs up
	RoleSentry = "sentry" // a full node guarding one validator (validators[].sentries)
)

// nodeRoles are the roles a nodes entry may take (sentries come from
// validators[].sentries).
var nodeRoles = []string{RoleFull, RoleSeed}

// maxSentries bounds validators[].sentries: production validators run 2-3.
const maxSentries = 8

// PeerNodePlan is one node that is not a validator: its genesis has no
// key of it, so it votes and signs nothing; results count its heights
// and how late it sees each block, not votes.
type PeerNodePlan struct {
	Name     string
	Role     string // RoleFull, RoleSeed or RoleSentry
	SentryOf string // RoleSentry: the validator it guards
}

// sentryNames are validator name's n sentries.
func sentryNames(name string, n int64) []string {
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-sentry-%d", name, i+1)
	}
	return out
}

// resolvePeerNodes checks the nodes entries and returns every non-validator
// node: the entries' nodes in order, then the validators' sentries. Names
// are unique among validators and nodes. The zones the entries carry are
// added to vals.zones.
func (d *decoder) resolvePeerNodes(raws []rawPeerNode, vals *validatorSet, run RunPlan) []PeerNodePlan {
	const key = "nodes"
	var out []PeerNodePlan
	taken := make(map[string]string) // name -> what has it
	for _, v := range vals.plans {
		taken[v.Name] = "validator " + v.Name
	}
	for _, s := range vals.sentries {
		if prev, dup := taken[s.Name]; dup {
			d.fail(d.valuePos("validators"), "validators", fmt.Sprintf("sentry %s of %s has the name of %s", s.Name, s.SentryOf, prev))
			continue
		}
		taken[s.Name] = "a sentry of " + s.SentryOf
	}
	for i, rn := range raws {
		k := fmt.Sprintf("%s[%d]", key, i)
		if !d.checkName(k+".name", rn.Name, "node", "full") {
			continue
		}
		count := int64(1)
		if rn.Count != nil {
			switch c := *rn.Count; {
			case c < 1:
				d.fail(d.valuePos(k+".count"), k+".count", fmt.Sprintf("must be at least 1, got %d", c))
			case c > int64(maxValidatorsFor(run.Backend)):
				d.fail(d.valuePos(k+".count"), k+".count", fmt.Sprintf("must be at most %d, got %d", maxValidatorsFor(run.Backend), c))
			default:
				count = c
			}
		}
		role := RoleFull
		if rn.Role != nil {
			role = *rn.Role
			if !slices.Contains(nodeRoles, role) {
				msg := fmt.Sprintf("unknown role %q%s", role, didYouMean(role, nodeRoles))
				if role == RoleSentry {
					msg = "sentries belong to their validator: write sentries: N on its validators entry"
				}
				d.fail(d.valuePos(k+".role"), k+".role", msg, nodeRoles...)
			}
		}
		names := expandNames(rn.Name, count)
		if count > 1 {
			vals.members[rn.Name] = names
		}
		for _, n := range names {
			if prev, dup := taken[n]; dup {
				d.fail(d.valuePos(k+".name"), k+".name", fmt.Sprintf("%s is already the name of %s", n, prev))
				break
			}
			taken[n] = k
			out = append(out, PeerNodePlan{Name: n, Role: role})
		}
		if rn.Zone != nil {
			vals.zones = append(vals.zones, writtenZone{key: k + ".zone", region: *rn.Zone, names: names})
		}
	}
	out = append(out, vals.sentries...)
	if n := len(vals.plans) + len(out); n > maxValidatorsFor(run.Backend) && len(out) > 0 {
		d.fail(d.valuePos(key), key, fmt.Sprintf("%d validators and %d other nodes: %d nodes in all; the %s backend runs at most %d", len(vals.plans), len(out), n, run.Backend, maxValidatorsFor(run.Backend)))
	}
	return out
}

// withNodes is vals with the non-validator nodes added, for the keys that
// may name any node (zones, explicit peers).
func (vs validatorSet) withNodes(nodes []PeerNodePlan) validatorSet {
	all := vs
	all.plans = slices.Clone(vs.plans)
	all.index = make(map[string]int, len(vs.index)+len(nodes))
	for k, v := range vs.index {
		all.index[k] = v
	}
	for _, n := range nodes {
		all.index[n.Name] = len(all.plans)
		all.plans = append(all.plans, ValidatorPlan{Name: n.Name})
	}
	return all
}

// public is the nodes a topology joins: every node but the validators
// behind sentries and the seeds.
func (vs validatorSet) public(nodes []PeerNodePlan) validatorSet {
	sentried := map[string]bool{}
	for _, n := range nodes {
		if n.Role == RoleSentry {
			sentried[n.SentryOf] = true
		}
	}
	pub := validatorSet{index: map[string]int{}, groups: vs.groups, members: vs.members}
	add := func(name string) {
		pub.index[name] = len(pub.plans)
		pub.plans = append(pub.plans, ValidatorPlan{Name: name})
	}
	for _, v := range vs.plans {
		if !sentried[v.Name] {
			add(v.Name)
		}
	}
	for _, n := range nodes {
		if n.Role != RoleSeed {
			add(n.Name)
		}
	}
	return pub
}

// HasSeeds reports whether peers are found through seed nodes.
func (p *Plan) HasSeeds() bool {
	return slices.ContainsFunc(p.Nodes, func(n PeerNodePlan) bool { return n.Role == RoleSeed })
}

// Members are every node of the run, validators first, as the link layout
// sees them.
func (p *Plan) Members() []network.Member {
	sentried := map[string]bool{}
	for _, n := range p.Nodes {
		if n.Role == RoleSentry {
			sentried[n.SentryOf] = true
		}
	}
	out := make([]network.Member, 0, len(p.Validators)+len(p.Nodes))
	for _, v := range p.Validators {
		out = append(out, network.Member{Name: v.Name, Sentried: sentried[v.Name]})
	}
	for _, n := range p.Nodes {
		out = append(out, network.Member{Name: n.Name, Seed: n.Role == RoleSeed, SentryOf: n.SentryOf})
	}
	return out
}

// Layout is whom each node dials (network.Layout on Members): the one
// graph the real backends and the sim both use.
func (p *Plan) Layout(seed int64) (map[string][]string, error) {
	t := p.Network.Topology
	return network.Layout(p.Members(), network.Topology{Kind: t.Kind, K: t.K, Explicit: t.Peers}, p.PeerLimits(), seed)
}

// PeerLimits are the nodes' p2p.max_num_outbound_peers and
// max_num_inbound_peers: node.config's, else CometBFT's defaults.
func (p *Plan) PeerLimits() network.PeerLimits {
	l := network.DefaultPeerLimits
	for _, c := range p.Node.Config {
		v, ok := c.Value.(int64)
		if !ok || v < 1 {
			continue
		}
		switch c.Key {
		case "p2p.max_num_outbound_peers":
			l.Outbound = int(v)
		case "p2p.max_num_inbound_peers":
			l.Inbound = int(v)
		}
	}
	return l
}

// NodeNames are every node's name: the validators, then the other nodes.
func (p *Plan) NodeNames() []string {
	out := make([]string, 0, len(p.Validators)+len(p.Nodes))
	for _, v := range p.Validators {
		out = append(out, v.Name)
	}
	for _, n := range p.Nodes {
		out = append(out, n.Name)
	}
	return out
}
