package calibrate

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/sim"
)

// The search finds an optimum wherever it lies within the bounds, not
// only inside its starting grid (the old fixed grid stopped at 120ms and
// 800µs, its edge, and called that the fit); an optimum past a bound is
// reported as on it.
func TestSearchFitFindsTheOptimum(t *testing.T) {
	bowl := func(sleep, vote time.Duration) func(s, v time.Duration) (float64, error) {
		return func(s, v time.Duration) (float64, error) {
			ds := float64(s-sleep) / float64(time.Millisecond)
			dv := float64(v-vote) / float64(time.Microsecond)
			return math.Sqrt(ds*ds/100+dv*dv/10000) / 10, nil
		}
	}
	for _, tc := range []struct {
		name        string
		sleep, vote time.Duration
		wantSleep   time.Duration
		wantVote    time.Duration
		atBound     bool
	}{
		{"inside the starting grid", 90 * time.Millisecond, 300 * time.Microsecond, 90 * time.Millisecond, 300 * time.Microsecond, false},
		{"past the old grid's edge", 310 * time.Millisecond, 3 * time.Millisecond, 310 * time.Millisecond, 3 * time.Millisecond, false},
		{"below the smallest sleep", 0, 100 * time.Microsecond, fitBounds.sleep[0], 100 * time.Microsecond, true},
		{"past the largest vote cost", 100 * time.Millisecond, time.Second, 100 * time.Millisecond, fitBounds.vote[1], true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := searchFit(context.Background(), bowl(tc.sleep, tc.vote))
			if err != nil {
				t.Fatal(err)
			}
			near := func(a, b, tol time.Duration) bool { return a-b <= tol && b-a <= tol }
			if !near(got.GossipSleep, tc.wantSleep, lastStep[0]) || !near(got.VoteCost, tc.wantVote, lastStep[1]) || got.AtBound != tc.atBound {
				t.Errorf("found sleep %v vote %v (at bound %v, %d tries); want %v %v (at bound %v)",
					got.GossipSleep, got.VoteCost, got.AtBound, got.Tried, tc.wantSleep, tc.wantVote, tc.atBound)
			}
			if got.Tried > 400 {
				t.Errorf("%d objective evaluations: each is a sim run per network size", got.Tried)
			}
		})
	}
}

func TestSearchFitStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err := searchFit(ctx, func(s, v time.Duration) (float64, error) {
		if n++; n == 3 {
			cancel()
		}
		return 1, nil
	})
	if err == nil || n != 3 {
		t.Errorf("err %v after %d evaluations, want the context's error after 3", err, n)
	}
}

// A fit is poor above MaxFitError or on a bound, and says why.
func TestPoorFit(t *testing.T) {
	p := sim.Params{GossipSleep: 120 * time.Millisecond, VoteCost: 800 * time.Microsecond}
	for _, tc := range []struct {
		res  Result
		want []string
	}{
		{Result{Params: p, Error: 0.067}, nil},
		{Result{Params: p, Error: 0.237}, []string{"RMS relative error 0.237 is above 0.15"}},
		{Result{Params: p, Error: 0.05, AtBound: true}, []string{"on the bound", "gossip_sleep 120ms, vote_cost 800µs"}},
	} {
		got := tc.res.Poor()
		if (got == "") != (tc.want == nil) {
			t.Errorf("%+v: Poor() = %q", tc.res, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("Poor() = %q, want %q in it", got, w)
			}
		}
	}
}
