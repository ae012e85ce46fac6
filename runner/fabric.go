package runner

import (
	"fmt"
	"time"

	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/network"
	"github.com/valnet/valnet/scenarios"
)

// linkDelay adds a latency model and normal jitter: both shape one
// direction of a link.
type linkDelay struct {
	base   latency.Model // may be nil
	jitter latency.Model // may be nil
}

func (d linkDelay) Draw() time.Duration {
	var t time.Duration
	if d.base != nil {
		t += d.base.Draw()
	}
	if d.jitter != nil {
		t += d.jitter.Draw()
	}
	return max(t, 0)
}

func (d linkDelay) String() string {
	switch {
	case d.base != nil && d.jitter != nil:
		return d.base.String() + " + " + d.jitter.String()
	case d.base != nil:
		return d.base.String()
	case d.jitter != nil:
		return d.jitter.String()
	}
	return "0"
}

// networkLink turns a link plan into the fabric's link; stream separates
// the random draws of each directed link.
func networkLink(l scenarios.LinkPlan, seed int64, stream string) (network.Link, error) {
	var d linkDelay
	if l.Latency != nil {
		m, err := latency.New(l.Latency.Spec, seed, stream)
		if err != nil {
			return network.Link{}, err
		}
		d.base = m
	}
	if l.Jitter > 0 {
		jitter, err := latency.New(latency.Spec{Dist: latency.Normal, Stddev: l.Jitter}, seed, stream+"/jitter")
		if err != nil {
			return network.Link{}, err
		}
		d.jitter = jitter
	}
	out := network.Link{Bandwidth: l.Bandwidth}
	if d.base != nil || d.jitter != nil {
		out.Latency = d
	}
	return out, nil
}

// shapeLinks gives every directed link between validators its setting:
// the default, then the zone matrix, then the explicit overrides.
func (r *run) shapeLinks() error {
	nw := r.plan.Network
	for _, a := range r.members {
		for _, b := range r.members {
			if a == b {
				continue
			}
			from, to := a.plan.Name, b.plan.Name
			stream := "link:" + from + "->" + to
			l, err := networkLink(nw.Default, r.seed, stream)
			if err != nil {
				return err
			}
			za, aok := nw.Zones[from]
			zb, bok := nw.Zones[to]
			if aok && bok {
				zd, err := network.ZoneDelay(za, zb, r.seed, stream)
				if err != nil {
					return err
				}
				if zd != nil {
					l.Latency = linkDelay{base: zd, jitter: l.Latency}
				}
			}
			r.setLink(from, to, l)
		}
	}
	for _, o := range nw.Links {
		l, err := networkLink(o.Link, r.seed, "link:"+o.From+"->"+o.To)
		if err != nil {
			return fmt.Errorf("link %s -> %s: %w", o.From, o.To, err)
		}
		r.setLink(o.From, o.To, l)
	}
	return nil
}

// setLink shapes a directed link and remembers the setting, so a fault
// that changes it can put it back.
func (r *run) setLink(from, to string, l network.Link) {
	if r.links == nil {
		r.links = map[[2]string]network.Link{}
	}
	r.links[[2]string{from, to}] = l
	r.fabric.SetLink(from, to, l)
}

// linkNow is the current setting of a directed link.
func (r *run) linkNow(from, to string) network.Link { return r.links[[2]string{from, to}] }
