package sim

import (
	"testing"

	"github.com/valnet/valnet/internal/links"
	"github.com/valnet/valnet/scenarios"
)

// TestFastDrawsAsModels: over zones (and a link override), every link
// whose delay newNet draws in place draws what the model of a fresh
// resolve draws, draw by draw; the others keep their models.
func TestFastDrawsAsModels(t *testing.T) {
	plan, err := scenarios.Parse("fast.yaml", []byte(`name: fast
run: {backend: sim, heights: 3, seed: 21}
network:
  topology: {random: 3}
  zones:
    us-east-1: [v-1, v-2, v-3]
    ap-southeast-2: [v-4, v-5, v-6]
    eu-central-1: [v-7, v-8, v-9, v-10]
  links:
    - {from: v-1, to: v-4, latency: 300ms}
    - {from: v-4, to: v-1, latency: {dist: normal, mean: 200ms, stddev: 20ms}}
validators: [{name: v, count: 10}]
`))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range plan.Validators {
		names = append(names, v.Name)
	}
	all, err := links.Resolve(plan.Network, names, plan.Run.Seed)
	if err != nil {
		t.Fatal(err)
	}
	nm := newNet(Params{GossipSleep: 1, SendRate: 1}, plan.Network, names, all, nil, true, plan.Run.Seed)
	fresh, err := links.Resolve(plan.Network, names, plan.Run.Seed)
	if err != nil {
		t.Fatal(err)
	}
	inPlace := 0
	for i, from := range names {
		for j, to := range names {
			if i == j {
				continue
			}
			lk, want := nm.link(int32(i), int32(j)), fresh[links.Pair{from, to}].Latency
			if _, fast := lk.delay.(*fastNormal); !fast {
				if _, _, ok := fastNormalOf(want); ok {
					t.Errorf("%s -> %s: a normal delay not drawn in place", from, to)
				}
				continue
			}
			inPlace++
			if lk.delay.String() != want.String() {
				t.Fatalf("%s -> %s: %s, want %s", from, to, lk.delay, want)
			}
			for k := range 200 {
				if got, w := lk.delay.Draw(), want.Draw(); got != w {
					t.Fatalf("%s -> %s: draw %d is %v, want %v", from, to, k, got, w)
				}
			}
		}
	}
	if inPlace < 50 {
		t.Fatalf("%d links drawn in place", inPlace)
	}
}
