package runner

import (
	"github.com/valnet/valnet/internal/links"
	"github.com/valnet/valnet/network"
)

// shapeLinks gives every directed link between validators its setting
// (links.Resolve: the default, then the zone matrix, then the overrides).
func (r *run) shapeLinks() error {
	names := r.nodeNames()
	all, err := links.Resolve(r.plan.Network, names, r.seed)
	if err != nil {
		return err
	}
	for _, from := range names {
		for _, to := range names {
			if l, ok := all[links.Pair{from, to}]; ok {
				r.setLink(from, to, l)
			}
		}
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

// nodeNames are every node's names: the validators, then the others.
func (r *run) nodeNames() []string {
	var names []string
	for _, m := range r.allMembers() {
		names = append(names, m.plan.Name)
	}
	return names
}

// names are the validators' names, in scenario order.
func (r *run) names() []string {
	names := make([]string, len(r.members))
	for i, m := range r.members {
		names[i] = m.plan.Name
	}
	return names
}
