// Package links turns a scenario's network plan into the setting of every
// directed link between validators, and says which links a network fault
// touches. The runner applies the result to the user-space fabric; the
// simulator draws its message delays from the same links, so a link means
// the same thing on every backend.
package links

import (
	"fmt"
	"time"

	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/network"
	"github.com/valnet/valnet/scenarios"
)

// Delay adds a latency model and normal jitter: both shape one direction
// of a link.
type Delay struct {
	Base   latency.Model // may be nil
	Jitter latency.Model // may be nil
}

var (
	_ latency.Model    = Delay{}
	_ latency.Serialer = Delay{}
)

// Serial makes both of the delay's models serial (latency.MakeSerial).
func (d Delay) Serial() {
	latency.MakeSerial(d.Base)
	latency.MakeSerial(d.Jitter)
}

func (d Delay) Draw() time.Duration {
	var t time.Duration
	if d.Base != nil {
		t += d.Base.Draw()
	}
	if d.Jitter != nil {
		t += d.Jitter.Draw()
	}
	return max(t, 0)
}

// Median is the base's median (latency.Typical); the jitter, a normal
// about zero clamped at zero in the sum, adds none to the median.
func (d Delay) Median() time.Duration {
	if d.Base == nil {
		return 0
	}
	return latency.Typical(d.Base)
}

func (d Delay) String() string {
	switch {
	case d.Base != nil && d.Jitter != nil:
		return d.Base.String() + " + " + d.Jitter.String()
	case d.Base != nil:
		return d.Base.String()
	case d.Jitter != nil:
		return d.Jitter.String()
	}
	return "0"
}

// FromPlan turns a link plan into a link; stream separates the random
// draws of each directed link.
func FromPlan(l scenarios.LinkPlan, seed int64, stream string) (network.Link, error) {
	var d Delay
	if l.Latency != nil {
		m, err := latency.New(l.Latency.Spec, seed, stream)
		if err != nil {
			return network.Link{}, err
		}
		d.Base = m
	}
	if l.Jitter > 0 {
		jitter, err := latency.New(latency.Spec{Dist: latency.Normal, Stddev: l.Jitter}, seed, stream+"/jitter")
		if err != nil {
			return network.Link{}, err
		}
		d.Jitter = jitter
	}
	out := network.Link{Bandwidth: l.Bandwidth}
	if d.Base != nil || d.Jitter != nil {
		out.Latency = d
	}
	return out, nil
}

// Pair is a directed link: From -> To.
type Pair [2]string

// Resolve gives every directed link between names its setting: the
// default, then the zone matrix, then the explicit overrides (later ones
// win).
func Resolve(nw scenarios.NetworkPlan, names []string, seed int64) (map[Pair]network.Link, error) {
	out := make(map[Pair]network.Link, len(names)*len(names))
	for _, from := range names {
		for _, to := range names {
			if from == to {
				continue
			}
			stream := "link:" + from + "->" + to
			l, err := FromPlan(nw.Default, seed, stream)
			if err != nil {
				return nil, err
			}
			za, aok := nw.Zones[from]
			zb, bok := nw.Zones[to]
			if aok && bok {
				zd, err := network.ZoneDelay(za, zb, seed, stream)
				if err != nil {
					return nil, err
				}
				if zd != nil {
					l.Latency = Delay{Base: zd, Jitter: l.Latency}
				}
			}
			out[Pair{from, to}] = l
		}
	}
	for _, o := range nw.Links {
		l, err := FromPlan(o.Link, seed, "link:"+o.From+"->"+o.To)
		if err != nil {
			return nil, fmt.Errorf("link %s -> %s: %w", o.From, o.To, err)
		}
		out[Pair{o.From, o.To}] = l
	}
	return out, nil
}

// FaultPairs are the directed links a network-latency fault changes: the
// one link it names (both ways unless one_way), every link of its target,
// or every link.
func FaultPairs(f scenarios.FaultPlan, names []string) []Pair {
	var pairs []Pair
	for _, x := range names {
		for _, y := range names {
			switch {
			case x == y:
			case f.From != "":
				if (x == f.From && y == f.To) || (!f.OneWay && x == f.To && y == f.From) {
					pairs = append(pairs, Pair{x, y})
				}
			case f.Target != "":
				if x == f.Target || y == f.Target {
					pairs = append(pairs, Pair{x, y})
				}
			default:
				pairs = append(pairs, Pair{x, y})
			}
		}
	}
	return pairs
}

// FaultLink is the link setting a network-latency fault gives its links.
func FaultLink(f scenarios.FaultPlan) scenarios.LinkPlan {
	lp := scenarios.LinkPlan{Latency: f.Latency}
	if f.Link != nil {
		lp = *f.Link
		lp.Latency = f.Latency
	}
	return lp
}

// PartitionPairs are the directed links a partition into groups cuts:
// between validators of different groups. Validators in no group stay
// connected to everyone.
func PartitionPairs(groups [][]string, names []string) []Pair {
	side := map[string]int{}
	for i, g := range groups {
		for _, v := range g {
			side[v] = i + 1
		}
	}
	var pairs []Pair
	for _, a := range names {
		for _, b := range names {
			sa, sb := side[a], side[b]
			if a != b && sa != 0 && sb != 0 && sa != sb {
				pairs = append(pairs, Pair{a, b})
			}
		}
	}
	return pairs
}

// Cosigner is the setting of the link from cosigner i to cosigner j (both
// 1-based) of a threshold signer: the region matrix's delay between their
// regions, or the signer's links setting, or a plain link.
func Cosigner(tp scenarios.ThresholdPlan, from, to string, i, j int, seed int64) (network.Link, error) {
	stream := "cosigner-link:" + from + "->" + to
	if len(tp.Regions) >= max(i, j) {
		zd, err := network.ZoneDelay(tp.Regions[i-1], tp.Regions[j-1], seed, stream)
		if err != nil {
			return network.Link{}, err
		}
		return network.Link{Latency: zd}, nil
	}
	if tp.Links != nil {
		return FromPlan(*tp.Links, seed, stream)
	}
	return network.Link{}, nil
}
