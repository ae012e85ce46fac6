package network

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Topology says which nodes dial which.
//
//   - mesh (default): every node dials every other. CometBFT drops the
//     duplicate when two nodes dial each other, so this is a full mesh.
//   - ring: each node dials the next K nodes in order, wrapping (K defaults
//     to 1), so each has about 2K peers.
//   - random: each node dials K distinct others chosen by the seed; edges
//     are added if needed so the network is connected.
//   - explicit: Explicit[node] lists whom node dials; unlisted nodes dial
//     no one. Kind may be left empty when Explicit is set.
type Topology struct {
	Kind     string
	K        int
	Explicit map[string][]string
}

// Peers returns, for every name, the nodes it dials (in names' order). The
// result depends only on its arguments.
func Peers(names []string, topo Topology, seed int64) (map[string][]string, error) {
	index := make(map[string]int, len(names))
	for i, n := range names {
		if n == "" {
			return nil, fmt.Errorf("network: empty node name")
		}
		if _, dup := index[n]; dup {
			return nil, fmt.Errorf("network: node %q listed twice", n)
		}
		index[n] = i
	}
	kind := topo.Kind
	if kind == "" {
		kind = "mesh"
		if topo.Explicit != nil {
			kind = "explicit"
		}
	}
	if kind != "explicit" && topo.Explicit != nil {
		return nil, fmt.Errorf("network: topology %s takes no explicit peers", kind)
	}
	n := len(names)
	dials := make([][]int, n)
	switch kind {
	case "mesh":
		for i := range n {
			for j := range n {
				if i != j {
					dials[i] = append(dials[i], j)
				}
			}
		}
	case "ring":
		k := topo.K
		if k == 0 {
			k = 1
		}
		if n > 1 && (k < 1 || k > n-1) {
			return nil, fmt.Errorf("network: ring needs 1 <= k <= %d for %d nodes, got %d", n-1, n, k)
		}
		for i := range n {
			for d := 1; d <= k && n > 1; d++ {
				dials[i] = append(dials[i], (i+d)%n)
			}
		}
	case "random":
		k := topo.K
		if n > 1 && (k < 1 || k > n-1) {
			return nil, fmt.Errorf("network: random needs 1 <= k <= %d for %d nodes, got %d", n-1, n, k)
		}
		rng := rand.New(rand.NewPCG(uint64(seed), 0x76616c6e6574)) // "valnet"
		for i := range n {
			if n < 2 {
				break
			}
			others := make([]int, 0, n-1)
			for j := range n {
				if j != i {
					others = append(others, j)
				}
			}
			// Partial Fisher-Yates: the first k are a uniform sample.
			for a := range k {
				b := a + rng.IntN(len(others)-a)
				others[a], others[b] = others[b], others[a]
			}
			dials[i] = slices.Clone(others[:k])
		}
		connect(dials, rng)
	case "explicit":
		for from, tos := range topo.Explicit {
			i, ok := index[from]
			if !ok {
				return nil, fmt.Errorf("network: explicit topology names unknown node %q", from)
			}
			for _, to := range tos {
				j, ok := index[to]
				switch {
				case !ok:
					return nil, fmt.Errorf("network: explicit topology: %s dials unknown node %q", from, to)
				case j == i:
					return nil, fmt.Errorf("network: explicit topology: %s dials itself", from)
				case slices.Contains(dials[i], j):
					return nil, fmt.Errorf("network: explicit topology: %s dials %s twice", from, to)
				}
				dials[i] = append(dials[i], j)
			}
		}
	default:
		return nil, fmt.Errorf("network: unknown topology %q (allowed: mesh, ring, random, explicit)", topo.Kind)
	}
	out := make(map[string][]string, n)
	for i, js := range dials {
		slices.Sort(js)
		list := make([]string, 0, len(js))
		for _, j := range js {
			list = append(list, names[j])
		}
		out[names[i]] = list
	}
	return out, nil
}

// components labels the connected components of the undirected graph the
// dials make, numbered in order of their lowest node.
func components(dials [][]int) (label []int, count int) {
	n := len(dials)
	adj := make([][]int, n)
	for i, js := range dials {
		for _, j := range js {
			adj[i] = append(adj[i], j)
			adj[j] = append(adj[j], i)
		}
	}
	label = make([]int, n)
	for i := range label {
		label[i] = -1
	}
	for s := range n {
		if label[s] >= 0 {
			continue
		}
		stack := []int{s}
		label[s] = count
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, w := range adj[v] {
				if label[w] < 0 {
					label[w] = count
					stack = append(stack, w)
				}
			}
		}
		count++
	}
	return label, count
}

// connect joins the components of a random graph: a random node of each
// later component dials a random node of the one before.
func connect(dials [][]int, rng *rand.Rand) {
	label, count := components(dials)
	if count <= 1 {
		return
	}
	members := make([][]int, count)
	for v, c := range label {
		members[c] = append(members[c], v)
	}
	for c := 1; c < count; c++ {
		from := members[c][rng.IntN(len(members[c]))]
		to := members[c-1][rng.IntN(len(members[c-1]))]
		dials[from] = append(dials[from], to)
	}
}
