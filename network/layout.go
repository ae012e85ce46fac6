package network

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Member is one node of a network's layout: a validator, a full node, a
// seed or a validator's sentry.
type Member struct {
	Name string
	Seed bool // a seed node (CometBFT's seed_mode): peers are found through it
	// SentryOf names the validator this node is a sentry of ("" = none).
	SentryOf string
	// Sentried: a validator behind sentries; it dials them alone.
	Sentried bool
}

// PeerLimits are CometBFT's p2p.max_num_outbound_peers and
// max_num_inbound_peers (config/config.go DefaultP2PConfig: 10 and 40),
// what peer discovery through seeds fills a node up to.
type PeerLimits struct{ Outbound, Inbound int }

// DefaultPeerLimits are CometBFT's defaults.
var DefaultPeerLimits = PeerLimits{Outbound: 10, Inbound: 40}

// Layout returns, for every member, the nodes it dials (in members'
// order), following CometBFT's production layouts:
//
//   - a sentried validator dials its sentries alone, and no one else dials
//     it (its sentries keep it in private_peer_ids);
//   - the other nodes (the public ones: validators without sentries,
//     sentries, full nodes) form topo among themselves, unless there are
//     seeds;
//   - with seeds, the public nodes find each other through them (PEX): each
//     dials Outbound others drawn from seed, skipping one that already
//     accepted Inbound, as the PEX reactor's ensurePeers fills a node's
//     outbound slots from its address book (p2p/pex/pex_reactor.go) and the
//     switch refuses inbound peers past the limit (p2p/switch.go); the
//     graph is then connected as topology random is. A seed in seed_mode
//     hangs up once it has handed out addresses (pex_reactor.go
//     attemptDisconnects), so it carries no consensus traffic: it dials no
//     one and no one keeps it.
//
// The result depends only on its arguments.
func Layout(members []Member, topo Topology, limits PeerLimits, seed int64) (map[string][]string, error) {
	index := make(map[string]int, len(members))
	for i, m := range members {
		if _, dup := index[m.Name]; dup {
			return nil, fmt.Errorf("network: node %q listed twice", m.Name)
		}
		index[m.Name] = i
	}
	var public []string
	seeds := false
	for _, m := range members {
		switch {
		case m.Seed:
			seeds = true
		case !m.Sentried:
			public = append(public, m.Name)
		}
		if m.SentryOf != "" {
			v, ok := index[m.SentryOf]
			if !ok || !members[v].Sentried {
				return nil, fmt.Errorf("network: %s is a sentry of %q, which is not a validator behind sentries", m.Name, m.SentryOf)
			}
		}
	}
	var dials map[string][]string
	if seeds {
		if topo.Kind != "" && topo.Kind != "mesh" || topo.Explicit != nil {
			return nil, fmt.Errorf("network: with seeds, peers are found through them; topology %s does not apply", topo.Kind)
		}
		dials = discover(public, limits, seed)
	} else {
		var err error
		if dials, err = Peers(public, topo, seed); err != nil {
			return nil, err
		}
	}
	out := make(map[string][]string, len(members))
	for _, m := range members {
		out[m.Name] = slices.Clone(dials[m.Name])
		if m.SentryOf != "" {
			out[m.SentryOf] = append(out[m.SentryOf], m.Name) // the validator dials its sentry
		}
	}
	for name, ds := range out {
		slices.SortFunc(ds, func(a, b string) int { return index[a] - index[b] })
		out[name] = ds
	}
	return out, nil
}

// discover is peer discovery through seeds: each node, in order, dials
// up to limits.Outbound others drawn at random, skipping those that
// already accepted limits.Inbound (or that it is already connected to);
// then components are joined as for topology random.
func discover(names []string, limits PeerLimits, seed int64) map[string][]string {
	n := len(names)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x736565647065)) // "seedpe"
	dials := make([][]int, n)
	inbound := make([]int, n)
	linked := func(i, j int) bool { return slices.Contains(dials[i], j) || slices.Contains(dials[j], i) }
	for i := range n {
		for _, j := range rng.Perm(n) {
			if len(dials[i]) >= limits.Outbound {
				break
			}
			if j == i || inbound[j] >= limits.Inbound || linked(i, j) {
				continue
			}
			dials[i] = append(dials[i], j)
			inbound[j]++
		}
	}
	connect(dials, rng)
	out := make(map[string][]string, n)
	for i, js := range dials {
		slices.Sort(js)
		for _, j := range js {
			out[names[i]] = append(out[names[i]], names[j])
		}
	}
	return out
}
