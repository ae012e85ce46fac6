package network

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

func nodeNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("v%02d", i)
	}
	return names
}

// connected reports whether the undirected graph of dials spans all names.
func connected(names []string, dials map[string][]string) bool {
	adj := map[string][]string{}
	for from, tos := range dials {
		for _, to := range tos {
			adj[from] = append(adj[from], to)
			adj[to] = append(adj[to], from)
		}
	}
	seen := map[string]bool{names[0]: true}
	stack := []string{names[0]}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, w := range adj[v] {
			if !seen[w] {
				seen[w] = true
				stack = append(stack, w)
			}
		}
	}
	return len(seen) == len(names)
}

// checkDials verifies every node is listed, dials no one twice and not itself.
func checkDials(t *testing.T, names []string, dials map[string][]string) {
	t.Helper()
	if len(dials) != len(names) {
		t.Fatalf("%d entries for %d nodes", len(dials), len(names))
	}
	for _, n := range names {
		tos, ok := dials[n]
		if !ok {
			t.Fatalf("%s missing", n)
		}
		if slices.Contains(tos, n) {
			t.Fatalf("%s dials itself", n)
		}
		c := slices.Clone(tos)
		slices.Sort(c)
		if len(slices.Compact(c)) != len(tos) {
			t.Fatalf("%s dials a peer twice: %v", n, tos)
		}
		for _, to := range tos {
			if !slices.Contains(names, to) {
				t.Fatalf("%s dials unknown %s", n, to)
			}
		}
	}
}

func TestMesh(t *testing.T) {
	names := nodeNames(5)
	d, err := Peers(names, Topology{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	checkDials(t, names, d)
	for _, n := range names {
		if len(d[n]) != 4 {
			t.Fatalf("%s dials %v, want all 4 others", n, d[n])
		}
	}
	if !reflect.DeepEqual(d["v02"], []string{"v00", "v01", "v03", "v04"}) {
		t.Fatalf("v02 dials %v", d["v02"])
	}
}

func TestRing(t *testing.T) {
	names := nodeNames(50)
	for _, k := range []int{1, 2, 5} {
		d, err := Peers(names, Topology{Kind: "ring", K: k}, 1)
		if err != nil {
			t.Fatal(err)
		}
		checkDials(t, names, d)
		if !connected(names, d) {
			t.Fatalf("ring k=%d not connected", k)
		}
		peers := map[string]map[string]bool{}
		for from, tos := range d {
			if len(tos) != k {
				t.Fatalf("k=%d: %s dials %d", k, from, len(tos))
			}
			for _, to := range tos {
				for _, p := range [][2]string{{from, to}, {to, from}} {
					if peers[p[0]] == nil {
						peers[p[0]] = map[string]bool{}
					}
					peers[p[0]][p[1]] = true
				}
			}
		}
		for _, n := range names {
			if len(peers[n]) != 2*k {
				t.Fatalf("k=%d: %s has %d peers, want %d", k, n, len(peers[n]), 2*k)
			}
		}
	}
	d, _ := Peers(names, Topology{Kind: "ring", K: 2}, 1)
	if !reflect.DeepEqual(d["v49"], []string{"v00", "v01"}) {
		t.Fatalf("ring wraps: v49 dials %v", d["v49"])
	}
	if _, err := Peers(nodeNames(3), Topology{Kind: "ring", K: 3}, 1); err == nil {
		t.Fatal("ring k=3 of 3 nodes: want error")
	}
}

func TestRandom(t *testing.T) {
	names := nodeNames(50)
	for _, k := range []int{1, 2, 3, 10} {
		for seed := range int64(20) {
			d, err := Peers(names, Topology{Kind: "random", K: k}, seed)
			if err != nil {
				t.Fatal(err)
			}
			checkDials(t, names, d)
			if !connected(names, d) {
				t.Fatalf("random k=%d seed=%d not connected", k, seed)
			}
			added := 0
			for _, n := range names {
				if len(d[n]) < k {
					t.Fatalf("k=%d: %s dials only %d", k, n, len(d[n]))
				}
				added += len(d[n]) - k
			}
			if k > 1 && added > 0 {
				t.Logf("k=%d seed=%d: repair added %d edges", k, seed, added)
			}
		}
	}
	a, _ := Peers(names, Topology{Kind: "random", K: 3}, 7)
	b, _ := Peers(names, Topology{Kind: "random", K: 3}, 7)
	c, _ := Peers(names, Topology{Kind: "random", K: 3}, 8)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different topology")
	}
	if reflect.DeepEqual(a, c) {
		t.Fatal("different seeds, same topology")
	}
	if _, err := Peers(names, Topology{Kind: "random"}, 1); err == nil {
		t.Fatal("random without k: want error")
	}
}

// With k=1 a random graph of 50 is usually disconnected: repair must act.
func TestRandomRepairs(t *testing.T) {
	names := nodeNames(50)
	repaired := 0
	for seed := range int64(20) {
		d, _ := Peers(names, Topology{Kind: "random", K: 1}, seed)
		for _, n := range names {
			if len(d[n]) > 1 {
				repaired++
				break
			}
		}
	}
	if repaired == 0 {
		t.Fatal("no seed needed repair: the test does not exercise it")
	}
}

func TestExplicit(t *testing.T) {
	names := []string{"a", "b", "c"}
	d, err := Peers(names, Topology{Explicit: map[string][]string{"a": {"c", "b"}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d, map[string][]string{"a": {"b", "c"}, "b": {}, "c": {}}) {
		t.Fatalf("explicit: %v", d)
	}
	for _, bad := range []map[string][]string{
		{"x": {"a"}}, {"a": {"x"}}, {"a": {"a"}}, {"a": {"b", "b"}},
	} {
		if _, err := Peers(names, Topology{Kind: "explicit", Explicit: bad}, 1); err == nil {
			t.Fatalf("explicit %v: want error", bad)
		}
	}
	if _, err := Peers(names, Topology{Kind: "ring", Explicit: map[string][]string{}}, 1); err == nil {
		t.Fatal("ring with explicit peers: want error")
	}
}

func TestPeersErrors(t *testing.T) {
	if _, err := Peers([]string{"a", "a"}, Topology{}, 1); err == nil {
		t.Fatal("duplicate names: want error")
	}
	if _, err := Peers([]string{"a"}, Topology{Kind: "star"}, 1); err == nil {
		t.Fatal("unknown kind: want error")
	}
	d, err := Peers([]string{"a"}, Topology{Kind: "ring"}, 1)
	if err != nil || len(d["a"]) != 0 {
		t.Fatalf("one node: %v %v", d, err)
	}
}
