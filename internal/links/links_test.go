package links

import (
	"slices"
	"testing"
	"time"

	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/scenarios"
)

var names = []string{"a", "b", "c", "d"}

func TestPartitionPairs(t *testing.T) {
	got := PartitionPairs([][]string{{"a", "b"}, {"c"}}, names)
	want := []Pair{{"a", "c"}, {"b", "c"}, {"c", "a"}, {"c", "b"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v (d is in no group: connected to all)", got, want)
	}
}

func TestFaultPairs(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    scenarios.FaultPlan
		want []Pair
	}{
		{"one link both ways", scenarios.FaultPlan{From: "a", To: "b"}, []Pair{{"a", "b"}, {"b", "a"}}},
		{"one way", scenarios.FaultPlan{From: "a", To: "b", OneWay: true}, []Pair{{"a", "b"}}},
		{"a target's links", scenarios.FaultPlan{Target: "c"}, []Pair{{"a", "c"}, {"b", "c"}, {"c", "a"}, {"c", "b"}, {"c", "d"}, {"d", "c"}}},
	} {
		if got := FaultPairs(tc.f, names); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := len(FaultPairs(scenarios.FaultPlan{}, names)); got != 12 {
		t.Errorf("every link: %d pairs, want 12", got)
	}
}

// TestResolveOrder: default, then zones over it, then overrides win.
func TestResolveOrder(t *testing.T) {
	fixed := func(d time.Duration) *scenarios.LatencyPlan {
		return &scenarios.LatencyPlan{Spec: latency.Spec{Dist: latency.Fixed, Value: d}}
	}
	nw := scenarios.NetworkPlan{
		Default: scenarios.LinkPlan{Latency: fixed(5 * time.Millisecond)},
		Links:   []scenarios.LinkOverride{{From: "a", To: "b", Link: scenarios.LinkPlan{Latency: fixed(70 * time.Millisecond), Bandwidth: 1000}}},
	}
	all, err := Resolve(nw, names, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d := all[Pair{"a", "b"}].Latency.Draw(); d != 70*time.Millisecond || all[Pair{"a", "b"}].Bandwidth != 1000 {
		t.Errorf("a->b: %v at %g B/s, want the override 70ms at 1000", d, all[Pair{"a", "b"}].Bandwidth)
	}
	if d := all[Pair{"b", "a"}].Latency.Draw(); d != 5*time.Millisecond {
		t.Errorf("b->a: %v, want the default 5ms (the override is one way)", d)
	}
	if len(all) != 12 {
		t.Errorf("%d links, want 12", len(all))
	}
}
