package scenarios

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/valnet/valnet/network"
)

// topologyKinds in documentation order. mesh and explicit are written as
// a bare word; ring and random as a mapping that gives K.
var (
	topologyKinds = []string{TopologyMesh, TopologyRing, TopologyRandom, TopologyExplicit}
	topologyWords = []string{TopologyMesh, TopologyExplicit}
)

// regionCodes are the AWS region codes network.CanonicalRegion accepts
// besides the matrix's own names (network.Regions), in the matrix's order.
// They only serve suggestions and the docs; TestRegionCodes checks each
// against network.CanonicalRegion.
var regionCodes = []string{
	"us-east-1", "ca-central-1", "us-west-1", "eu-west-2", "us-west-2", "eu-west-1", "eu-central-1",
	"sa-east-1", "ap-northeast-1", "ap-south-1", "ap-southeast-2", "ap-northeast-2", "ap-southeast-1",
}

// Byte units, in bytes per unit, written as shown (B, KB or kB, MB, GB;
// KiB, MiB, GiB are powers of 2): load.size, and network.bandwidth per
// second. Bandwidth also takes bit units per second, SI and
// case-insensitive (10mbit = 10 Mbit = 10_000_000 bit/s).
var (
	byteUnitNames      = []string{"B", "KB", "MB", "GB", "KiB", "MiB", "GiB"}
	byteUnits          = map[string]float64{"B": 1, "KB": 1e3, "kB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
	bitUnits           = map[string]float64{"bit": 1.0 / 8, "kbit": 1e3 / 8, "mbit": 1e6 / 8, "gbit": 1e9 / 8}
	bandwidthUnitNames = append([]string{"bit", "kbit", "mbit", "gbit"}, byteUnitNames...)
	amountPattern      = regexp.MustCompile(`^` + decimal + ` ?([A-Za-z]+)$`)
)

// decimal is a plain decimal number as sizes, bandwidths and rates write
// it: no sign, no exponent.
const decimal = `([0-9]+(?:\.[0-9]*)?|\.[0-9]+)`

// parseAmount splits "10mbit" or "1.5 KiB" into its number and unit; bit
// units come back in lower case. ok is false when v is not a number
// followed by a word.
func parseAmount(v string) (n float64, unit string, ok bool) {
	m := amountPattern.FindStringSubmatch(v)
	if m == nil {
		return 0, "", false
	}
	unit = m[2]
	if strings.HasSuffix(strings.ToLower(unit), "bit") {
		unit = strings.ToLower(unit)
	}
	n, err := strconv.ParseFloat(m[1], 64)
	return n, unit, err == nil
}

// ambiguousBandwidthUnits are spellings that mean bits to some tools and
// bytes to others (tc reads "mbps" as megabytes per second).
var ambiguousBandwidthUnits = map[string]string{
	"b": "bit", "kb": "kbit", "mb": "mbit", "gb": "gbit",
	"bps": "bit", "kbps": "kbit", "mbps": "mbit", "gbps": "gbit",
}

// linkLatencyNoPhases says why a link's latency takes no phases.
const linkLatencyNoPhases = "a link's latency delays every byte it carries; phases are for signing"

// decodeScalar reads a topology written as a bare word (mesh, explicit).
func (t *rawTopology) decodeScalar(d *decoder, n *yaml.Node, key string) {
	if n.ShortTag() != "!!str" {
		d.fail(d.at(n), key, "expected mesh, explicit, {ring: K} or {random: K}, got "+describe(n))
		return
	}
	t.word = n.Value
}

// resolveNetwork turns the network key into the links' plan.
//
// Zones and explicit peers may name any node; the topology joins the
// public nodes (not a validator behind sentries, not a seed), and with
// seeds there is none to write: peers are found through them.
func (d *decoder) resolveNetwork(rn *rawNetwork, vals validatorSet, nodes []PeerNodePlan) NetworkPlan {
	const key = "network"
	np := NetworkPlan{Topology: TopologyPlan{Kind: TopologyMesh}}
	all := vals.withNodes(nodes)
	defer func() { np.Zones = sentriesInTheirZone(np.Zones, nodes) }()
	if rn == nil {
		np.Zones = d.resolveZones(key+".zones", nil, all) // the entries' own zone keys
		return np
	}
	np.Default.Latency = d.resolveLatencyNoPhases(key+".latency", rn.Latency, linkLatencyNoPhases)
	if rn.Jitter != nil {
		np.Default.Jitter = *rn.Jitter
	}
	np.Default.Bandwidth = d.resolveBandwidth(key+".bandwidth", rn.Bandwidth)
	np.Zones = d.resolveZones(key+".zones", rn.Zones, all)
	np.Links = d.resolveLinks(key+".links", rn.Links, np.Default, all)
	seeds := slices.ContainsFunc(nodes, func(n PeerNodePlan) bool { return n.Role == RoleSeed })
	if seeds && (rn.Topology != nil || rn.Peers != nil) {
		k := key + ".topology"
		if rn.Topology == nil {
			k = key + ".peers"
		}
		d.fail(d.keyPos(k), k, "with seed nodes, peers are found through the seeds (each up to p2p.max_num_outbound_peers dials); remove the key, or the seeds")
		return np
	}
	np.Topology = d.resolveTopology(key, rn, vals.public(nodes))
	return np
}

// sentriesInTheirZone puts each sentry no zone names in its validator's.
func sentriesInTheirZone(zones map[string]string, nodes []PeerNodePlan) map[string]string {
	for _, n := range nodes {
		if n.Role != RoleSentry {
			continue
		}
		if z, ok := zones[n.SentryOf]; ok {
			if _, own := zones[n.Name]; !own {
				zones[n.Name] = z
			}
		}
	}
	return zones
}

// resolveBandwidth reads "10mbit", "1.5MB" and the like as bytes per
// second; nil gives 0 (unlimited).
func (d *decoder) resolveBandwidth(key string, s *string) float64 {
	if s == nil || d.failed(key) {
		return 0
	}
	v := strings.TrimSpace(*s)
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		d.fail(d.valuePos(key), key, fmt.Sprintf("%s has no unit; write e.g. 10mbit (bits per second) or 1MB (bytes per second)", v), bandwidthUnitNames...)
		return 0
	}
	n, unit, ok := parseAmount(v)
	if !ok {
		d.fail(d.valuePos(key), key, fmt.Sprintf("%q is not a bandwidth; write a number and a unit, e.g. 10mbit or 1.5MB", v), bandwidthUnitNames...)
		return 0
	}
	per, ok := byteUnits[unit]
	if !ok {
		per, ok = bitUnits[unit]
	}
	if !ok {
		num := strings.TrimSuffix(v, unit)
		num = strings.TrimSpace(num)
		msg := fmt.Sprintf("unknown bandwidth unit %q", unit)
		if bits, amb := ambiguousBandwidthUnits[strings.ToLower(unit)]; amb {
			bytes := strings.ToUpper(strings.TrimSuffix(strings.ToLower(unit), "ps"))
			msg = fmt.Sprintf("%q is ambiguous (bits or bytes?); write %s%s for bits per second or %s%s for bytes per second", unit, num, bits, num, bytes)
		}
		d.fail(d.valuePos(key), key, msg, bandwidthUnitNames...)
		return 0
	}
	if n == 0 {
		d.fail(d.valuePos(key), key, "must be greater than 0 (remove the key for an unlimited link)")
		return 0
	}
	return n * per
}

// mapKeysInOrder lists a user-named mapping's keys in file order.
func (d *decoder) mapKeysInOrder(key string, m map[string][]string) []string {
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		return before(d.keyPos(joinKey(key, names[i])), d.keyPos(joinKey(key, names[j])))
	})
	return names
}

// resolveZones checks zones (region -> validators) and returns validator
// -> canonical region. A region is a name of network.Regions, in any case,
// or an AWS code; each validator is in at most one zone.
//
// A zone may list a validator group (a validators entry with count > 1)
// by its written name: all its validators. A validators entry may carry
// zone: itself; a validator placed both ways is an error.
func (d *decoder) resolveZones(key string, zones map[string][]string, vals validatorSet) map[string]string {
	if len(zones) == 0 && len(vals.zones) == 0 {
		return nil
	}
	out := make(map[string]string)
	regionKey := make(map[string]string) // canonical region -> the key that named it
	zoneOf := make(map[string]string)    // validator -> where its zone was written
	for _, wz := range vals.zones {
		canon, ok := network.CanonicalRegion(wz.region)
		if !ok {
			d.failRegion(d.valuePos(wz.key), wz.key, wz.region)
			continue
		}
		for _, v := range wz.names {
			zoneOf[v] = wz.key
			out[v] = canon
		}
	}
	for _, region := range d.mapKeysInOrder(key, zones) {
		rk := joinKey(key, region)
		canon, ok := network.CanonicalRegion(region)
		switch {
		case !ok:
			d.failRegion(d.keyPos(rk), rk, region)
		case regionKey[canon] != "":
			first := regionKey[canon]
			d.fail(d.keyPos(rk), rk, fmt.Sprintf("%s is region %s, already written as %s (line %d); list its validators under one key", region, canon, first, d.keyPos(joinKey(key, first)).Line))
			ok = false
		default:
			regionKey[canon] = region
		}
		for i, name := range zones[region] {
			vk := fmt.Sprintf("%s[%d]", rk, i)
			if d.failed(vk) {
				continue
			}
			names := vals.members[name] // a group: all of it
			if names == nil {
				if _, known := d.validatorRef(vk, name, vals); !known {
					continue
				}
				names = []string{name}
			}
			for _, v := range names {
				if prev, dup := zoneOf[v]; dup {
					switch {
					case prev == rk:
						d.fail(d.valuePos(vk), vk, fmt.Sprintf("%s is listed twice in this zone", v))
					case strings.HasPrefix(prev, "validators["):
						d.fail(d.valuePos(vk), vk, fmt.Sprintf("%s already has its zone from %s (line %d); a validator is in at most one zone", v, prev, d.valuePos(prev).Line))
					default:
						d.fail(d.valuePos(vk), vk, fmt.Sprintf("%s is already in zone %s (line %d); a validator is in at most one zone", v, strings.TrimPrefix(prev, key+"."), d.keyPos(prev).Line))
					}
					break
				}
				zoneOf[v] = rk
				if ok {
					out[v] = canon
				}
			}
		}
	}
	return out
}

// resolveLinks expands the links overrides into directed ones, in order.
// A key left out takes the network's default (def), not the zone matrix.
func (d *decoder) resolveLinks(key string, links []rawLink, def LinkPlan, vals validatorSet) []LinkOverride {
	var out []LinkOverride
	for i, rl := range links {
		lk := fmt.Sprintf("%s[%d]", key, i)
		if d.failed(lk) {
			continue // not a mapping; already reported
		}
		from, fromOK := d.linkEnd(lk+".from", rl.From, vals, "the validator at one end, e.g. from: v1")
		to, toOK := d.linkEnd(lk+".to", rl.To, vals, "the validator at the other end, e.g. to: v2")
		if fromOK && toOK && from == to {
			d.fail(d.valuePos(lk+".to"), lk+".to", fmt.Sprintf("from and to are both %s: a link joins two validators", from))
			toOK = false
		}
		link := def
		if def.Latency != nil {
			link.Latency = def.Latency.clone()
		}
		if rl.Latency != nil {
			link.Latency = d.resolveLatencyNoPhases(lk+".latency", rl.Latency, linkLatencyNoPhases)
		}
		if rl.Jitter != nil {
			link.Jitter = *rl.Jitter
		}
		if rl.Bandwidth != nil {
			link.Bandwidth = d.resolveBandwidth(lk+".bandwidth", rl.Bandwidth)
		}
		if !fromOK || !toOK {
			continue
		}
		out = append(out, LinkOverride{From: from, To: to, Link: link})
		if rl.OneWay == nil || !*rl.OneWay {
			back := link
			if link.Latency != nil {
				back.Latency = link.Latency.clone()
			}
			out = append(out, LinkOverride{From: to, To: from, Link: back})
		}
	}
	return out
}

// linkEnd checks a required validator name of a link.
func (d *decoder) linkEnd(key, name string, vals validatorSet, want string) (string, bool) {
	switch {
	case d.failed(key):
		return "", false
	case !d.written(key):
		d.fail(d.valuePos(parentKey(key)), key, "required: "+want)
		return "", false
	}
	_, ok := d.validatorRef(key, name, vals)
	return name, ok
}

// resolveTopology reads topology and peers: mesh by default, explicit
// when peers are given.
func (d *decoder) resolveTopology(key string, rn *rawNetwork, vals validatorSet) TopologyPlan {
	tp := TopologyPlan{Kind: TopologyMesh}
	tk, pk := key+".topology", key+".peers"
	n, nKnown := len(vals.plans), !d.failedUnder("validators")
	written := false // a topology is written and readable
	if t := rn.Topology; t != nil {
		written = true
		switch {
		case t.word != "":
			switch t.word {
			case TopologyMesh, TopologyExplicit:
				tp.Kind = t.word
			case TopologyRing, TopologyRandom:
				d.fail(d.valuePos(tk), tk, fmt.Sprintf("%s needs its K, the number of validators each one dials: write topology: {%s: 2}", t.word, t.word), topologyKinds...)
				written = false
			default:
				d.fail(d.valuePos(tk), tk, fmt.Sprintf("unknown topology %q; write mesh, explicit (with peers), {ring: K} or {random: K}", t.word), topologyKinds...)
				written = false
			}
		default:
			ringKey, randomKey := tk+".ring", tk+".random"
			hasRing, hasRandom := d.written(ringKey), d.written(randomKey)
			switch {
			case hasRing && hasRandom:
				later := d.laterKey(ringKey, randomKey)
				d.fail(d.keyPos(later), later, "give one of ring and random")
				written = false
			case !hasRing && !hasRandom:
				if !d.failed(tk) {
					d.fail(d.valuePos(tk), tk, "needs ring or random and its K, e.g. topology: {ring: 2}; or write mesh or explicit", topologyKinds...)
				}
				written = false
			case t.Ring != nil:
				tp.Kind, tp.K = TopologyRing, d.checkTopologyK(ringKey, TopologyRing, *t.Ring, n, nKnown)
			case t.Random != nil:
				tp.Kind, tp.K = TopologyRandom, d.checkTopologyK(randomKey, TopologyRandom, *t.Random, n, nKnown)
			default:
				written = false // a bad K, already reported
			}
		}
	} else if d.failed(tk) {
		return tp
	}
	switch {
	case rn.Peers != nil && written && tp.Kind != TopologyExplicit:
		d.fail(d.keyPos(pk), pk, fmt.Sprintf("peers only go with topology: explicit (or no topology); this topology is %s", tp.Kind))
	case rn.Peers != nil:
		if written || !d.written(tk) {
			tp.Kind = TopologyExplicit
		}
		tp.Peers = d.resolvePeers(pk, rn.Peers, vals, nKnown)
	case tp.Kind == TopologyExplicit && !d.failed(pk):
		d.fail(d.valuePos(tk), tk, "explicit needs peers: list whom each validator dials under network.peers, e.g. peers: {v1: [v2, v3]}")
	}
	if tp.Kind != TopologyExplicit {
		tp.Peers = nil
	}
	return tp
}

// checkTopologyK checks the K of ring or random against the number of
// validators, n (when known).
func (d *decoder) checkTopologyK(key, kind string, k int64, n int, nKnown bool) int {
	switch {
	case k < 1:
		d.fail(d.valuePos(key), key, fmt.Sprintf("must be at least 1, got %d: each validator dials K others", k))
	case nKnown && k >= int64(n):
		d.fail(d.valuePos(key), key, fmt.Sprintf("%s %d is too large for %d validators: each dials K others, so K must be less than the number of validators", kind, k, n))
	default:
		return int(k)
	}
	return 0
}

// resolvePeers checks explicit peers (validator -> validators it dials)
// and that every validator can reach every other through them.
func (d *decoder) resolvePeers(key string, peers map[string][]string, vals validatorSet, nKnown bool) map[string][]string {
	out := make(map[string][]string, len(peers))
	clean := true
	for _, from := range d.mapKeysInOrder(key, peers) {
		fk := joinKey(key, from)
		if _, ok := d.validatorRefAt(d.keyPos(fk), fk, from, vals); !ok {
			clean = false
			continue
		}
		seen := make(map[string]bool)
		list := []string{}
		for i, to := range peers[from] {
			tk := fmt.Sprintf("%s[%d]", fk, i)
			if d.failed(tk) {
				clean = false
				continue
			}
			if _, ok := d.validatorRef(tk, to, vals); !ok {
				clean = false
				continue
			}
			switch {
			case to == from:
				d.fail(d.valuePos(tk), tk, fmt.Sprintf("%s cannot dial itself", from))
				clean = false
			case seen[to]:
				d.fail(d.valuePos(tk), tk, fmt.Sprintf("%s is listed twice", to))
				clean = false
			default:
				seen[to] = true
				list = append(list, to)
			}
		}
		out[from] = list
	}
	if clean && nKnown && len(vals.plans) > 0 {
		if groups := peerComponents(vals.names(), out); len(groups) > 1 {
			parts := make([]string, len(groups))
			for i, g := range groups {
				parts[i] = "[" + listNames(g) + "]"
			}
			d.fail(d.valuePos(key), key, fmt.Sprintf("the dials leave %d groups that cannot reach each other: %s; every validator must reach every other through dials (either way round), so add dials between the groups", len(groups), strings.Join(parts, " ")))
		}
	}
	return out
}

// listNames joins validator names, cut short past maxListedValidators.
func listNames(names []string) string {
	if len(names) > maxListedValidators {
		return fmt.Sprintf("%s and %d more", strings.Join(names[:maxListedValidators], " "), len(names)-maxListedValidators)
	}
	return strings.Join(names, " ")
}

// peerComponents splits names into the groups connected by dials, taken
// both ways round (a dialed connection carries traffic both ways), each in
// names' order, ordered by their first member.
func peerComponents(names []string, dials map[string][]string) [][]string {
	parent := make(map[string]string, len(names))
	for _, n := range names {
		parent[n] = n
	}
	var find func(string) string
	find = func(n string) string {
		if parent[n] != n {
			parent[n] = find(parent[n])
		}
		return parent[n]
	}
	for from, tos := range dials {
		for _, to := range tos {
			if a, b := find(from), find(to); a != b {
				parent[a] = b
			}
		}
	}
	index := make(map[string]int)
	var groups [][]string
	for _, n := range names {
		r := find(n)
		i, ok := index[r]
		if !ok {
			i = len(groups)
			index[r] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], n)
	}
	return groups
}

// failedUnder reports whether key or any key below it has an error.
func (d *decoder) failedUnder(key string) bool {
	for k := range d.bad {
		if k == key || strings.HasPrefix(k, key+".") || strings.HasPrefix(k, key+"[") {
			return true
		}
	}
	return d.failed(key)
}

// failRegion reports an unknown region, with a suggestion.
func (d *decoder) failRegion(p Pos, key, region string) {
	msg := fmt.Sprintf("unknown region %q: use a region of the AWS latency matrix or its AWS code (docs/scenario.md lists both)", region)
	if s := suggest(region, append(network.Regions(), regionCodes...)); s != "" {
		msg = fmt.Sprintf("unknown region %q; did you mean %q? (or another region of the AWS latency matrix, or its AWS code: docs/scenario.md lists both)", region, s)
	}
	d.fail(p, key, msg, network.Regions()...)
}
