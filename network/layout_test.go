package network

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

func TestLayoutSentriesAndSeeds(t *testing.T) {
	// Two validators behind sentries, two without, four full nodes.
	members := []Member{
		{Name: "v-1", Sentried: true}, {Name: "v-2", Sentried: true}, {Name: "v-3"}, {Name: "v-4"},
		{Name: "v-1-sentry-1", SentryOf: "v-1"}, {Name: "v-1-sentry-2", SentryOf: "v-1"}, {Name: "v-2-sentry-1", SentryOf: "v-2"},
		{Name: "fn-1"}, {Name: "fn-2"},
	}
	dials, err := Layout(members, Topology{Kind: "mesh"}, DefaultPeerLimits, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := dials["v-1"]; !reflect.DeepEqual(got, []string{"v-1-sentry-1", "v-1-sentry-2"}) {
		t.Errorf("v-1 dials %v, want its sentries alone", got)
	}
	for from, tos := range dials {
		for _, to := range tos {
			if (to == "v-1" || to == "v-2") && from != "" {
				t.Errorf("%s dials the sentried %s", from, to)
			}
		}
	}
	if got := dials["v-3"]; !reflect.DeepEqual(got, []string{"v-4", "v-1-sentry-1", "v-1-sentry-2", "v-2-sentry-1", "fn-1", "fn-2"}) {
		t.Errorf("v-3 dials %v, want every other public node (mesh)", got)
	}

	// 200 public nodes and 5 seeds: each dials at most 10 (plus a link
	// that joins components), accepts at most 40, and no one keeps a seed.
	var big []Member
	for i := range 200 {
		big = append(big, Member{Name: fmt.Sprintf("n-%d", i)})
	}
	for i := range 5 {
		big = append(big, Member{Name: fmt.Sprintf("seed-%d", i), Seed: true})
	}
	d1, err := Layout(big, Topology{}, DefaultPeerLimits, 7)
	if err != nil {
		t.Fatal(err)
	}
	d2, _ := Layout(big, Topology{}, DefaultPeerLimits, 7)
	if !reflect.DeepEqual(d1, d2) {
		t.Error("the same seed gave two layouts")
	}
	inbound := map[string]int{}
	degree := map[string]int{}
	for from, tos := range d1 {
		if len(tos) > 11 {
			t.Errorf("%s dials %d", from, len(tos))
		}
		for _, to := range tos {
			inbound[to]++
			degree[from]++
			degree[to]++
			if slices.Contains([]string{"seed-0", "seed-1", "seed-2", "seed-3", "seed-4"}, to) {
				t.Errorf("%s keeps seed %s", from, to)
			}
		}
	}
	for n, in := range inbound {
		if in > 41 {
			t.Errorf("%s accepted %d", n, in)
		}
	}
	if min := slices.Min(valuesOf(degree)); min < 10 {
		t.Errorf("a node has %d peers, want about 20 (10 out, ~10 in)", min)
	}
	if _, err := Layout(big, Topology{Kind: "ring", K: 2}, DefaultPeerLimits, 1); err == nil {
		t.Error("seeds with a ring topology: no error")
	}
}

func valuesOf(m map[string]int) []int {
	var out []int
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
