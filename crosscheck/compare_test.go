package crosscheck

import (
	"math"
	"strings"
	"testing"

	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/sweep"
)

// values is SideValues of canned runs, one per repeat.
func values(runs ...sum) Values {
	rs := make([]Run, len(runs))
	for i, x := range runs {
		s := x.summary()
		rs[i] = Run{RunRecord: sweep.RunRecord{Repeat: i + 1, Result: sweep.Result{Metrics: results.MetricValues(s),
			StopReason: s.StopReason, HostOverloaded: s.Host != nil && s.Host.Overloaded}}, Summary: s}
	}
	return SideValues("fake", rs)
}

// healthy: 20 heights, no round change, 1000 ms / 1200 ms blocks,
// nobody misses.
var healthy = sum{committed: 20, p50: 1000, p95: 1200}

func with(x sum, f func(*sum)) sum {
	f(&x)
	return x
}

func missed(m map[string][2]int) func(*sum) { return func(x *sum) { x.missed = m } }

func halts(hs ...results.Halt) func(*sum) { return func(x *sum) { x.halts = hs } }

func halt(from, ms int64) results.Halt {
	return results.Halt{FromHeight: from, DurationMS: ms, Resumed: true, Cause: "partition"}
}

// TestCompareGoals checks each goal inside, at and outside its tolerance,
// one-sided values, and n.a.
func TestCompareGoals(t *testing.T) {
	tests := []struct {
		name        string
		model, real []sum
		goal        string
		want        string
		diff        float64 // checked when the result has one
		validator   string
		note        string // a substring of the note
	}{
		{name: "missed within", goal: GoalMissedRate, want: VerdictPass, diff: 4, validator: "slow",
			model: []sum{with(healthy, missed(map[string][2]int{"v-1": {0, 20}, "slow": {10, 20}}))},
			real:  []sum{with(healthy, missed(map[string][2]int{"v-1": {0, 20}, "slow": {46, 100}}))}},
		{name: "missed at the tolerance", goal: GoalMissedRate, want: VerdictPass, diff: -5, validator: "slow",
			model: []sum{with(healthy, missed(map[string][2]int{"v-1": {1, 20}, "slow": {9, 20}}))},
			real:  []sum{with(healthy, missed(map[string][2]int{"v-1": {1, 20}, "slow": {10, 20}}))}},
		{name: "missed outside, worst validator named", goal: GoalMissedRate, want: VerdictFail, diff: -10, validator: "v-1",
			model: []sum{with(healthy, missed(map[string][2]int{"v-1": {0, 20}, "slow": {10, 20}}))},
			real:  []sum{with(healthy, missed(map[string][2]int{"v-1": {2, 20}, "slow": {11, 20}}))}},
		{name: "missed: among equal differences the one missing most", goal: GoalMissedRate, want: VerdictPass, diff: 0, validator: "slow",
			model: []sum{with(healthy, missed(map[string][2]int{"v-1": {0, 20}, "slow": {20, 20}, "v-2": {0, 20}}))},
			real:  []sum{with(healthy, missed(map[string][2]int{"v-1": {0, 20}, "slow": {20, 20}, "v-2": {0, 20}}))}},
		{name: "missed: a validator on one side only", goal: GoalMissedRate, want: VerdictFail, validator: "v-1", note: "v-2 is a validator of the real side only",
			model: []sum{with(healthy, missed(map[string][2]int{"v-1": {0, 20}}))},
			real:  []sum{with(healthy, missed(map[string][2]int{"v-1": {0, 20}, "v-2": {0, 20}}))}},
		{name: "missed: counted on one side only", goal: GoalMissedRate, want: VerdictFail, note: "v-1 has counted precommits on the model side only",
			model: []sum{with(healthy, missed(map[string][2]int{"v-1": {0, 20}}))},
			real:  []sum{with(healthy, missed(map[string][2]int{"v-1": {0, 0}}))}},
		{name: "missed: nothing counted", goal: GoalMissedRate, want: VerdictNA, note: "no validator has a counted precommit",
			model: []sum{with(healthy, missed(map[string][2]int{"v-1": {0, 0}}))},
			real:  []sum{with(healthy, missed(map[string][2]int{"v-1": {0, 0}}))}},
		{name: "missed: means over repeats", goal: GoalMissedRate, want: VerdictPass, diff: 0, validator: "v-1",
			model: []sum{with(healthy, missed(map[string][2]int{"v-1": {0, 20}})), with(healthy, missed(map[string][2]int{"v-1": {4, 20}}))},
			real:  []sum{with(healthy, missed(map[string][2]int{"v-1": {2, 20}})), with(healthy, missed(map[string][2]int{"v-1": {2, 20}}))}},

		{name: "round changes within", goal: GoalRoundChanges, want: VerdictPass, diff: 1,
			model: []sum{with(healthy, func(x *sum) { x.roundChanges = 2 })}, real: []sum{with(healthy, func(x *sum) { x.roundChanges = 1 })}},
		{name: "round changes outside", goal: GoalRoundChanges, want: VerdictFail, diff: 2,
			model: []sum{with(healthy, func(x *sum) { x.roundChanges = 3 })}, real: []sum{with(healthy, func(x *sum) { x.roundChanges = 1 })}},
		{name: "round changes scaled per 20 heights", goal: GoalRoundChanges, want: VerdictPass, diff: 0,
			model: []sum{with(healthy, func(x *sum) { x.roundChanges, x.committed = 2, 40 })}, real: []sum{with(healthy, func(x *sum) { x.roundChanges = 1 })}},
		{name: "round changes over heights of known round", goal: GoalRoundChanges, want: VerdictFail, diff: 4, // 2 of 8 known heights: 5 per 20
			model: []sum{with(healthy, func(x *sum) { x.roundChanges, x.unknownRound = 2, 12 })}, real: []sum{with(healthy, func(x *sum) { x.roundChanges = 1 })}},
		{name: "round changes: nothing committed on one side", goal: GoalRoundChanges, want: VerdictFail, note: "on the real side only",
			model: []sum{{}}, real: []sum{healthy}},
		{name: "round changes: nothing committed", goal: GoalRoundChanges, want: VerdictNA, note: "no committed height", model: []sum{{}}, real: []sum{{}}},

		{name: "p50 at +10 %", goal: GoalIntervalP50, want: VerdictPass, diff: 10,
			model: []sum{with(healthy, func(x *sum) { x.p50 = 1100 })}, real: []sum{healthy}},
		{name: "p50 at -10 %", goal: GoalIntervalP50, want: VerdictPass, diff: -10,
			model: []sum{with(healthy, func(x *sum) { x.p50 = 900 })}, real: []sum{healthy}},
		{name: "p50 outside", goal: GoalIntervalP50, want: VerdictFail, diff: 10.1,
			model: []sum{with(healthy, func(x *sum) { x.p50 = 1101 })}, real: []sum{healthy}},
		{name: "p95 outside", goal: GoalIntervalP95, want: VerdictFail, diff: -25,
			model: []sum{with(healthy, func(x *sum) { x.p95 = 900 })}, real: []sum{healthy}},
		{name: "p95 relative to the real side", goal: GoalIntervalP95, want: VerdictFail, diff: 1200.0/1080*100 - 100,
			model: []sum{healthy}, real: []sum{with(healthy, func(x *sum) { x.p95 = 1080 })}},
		{name: "p50 mean over repeats", goal: GoalIntervalP50, want: VerdictPass, diff: 0,
			model: []sum{with(healthy, func(x *sum) { x.p50 = 800 }), with(healthy, func(x *sum) { x.p50 = 1200 })}, real: []sum{healthy, healthy}},
		{name: "p50 on one side only", goal: GoalIntervalP50, want: VerdictFail, note: "on the model side only",
			model: []sum{healthy}, real: []sum{with(healthy, func(x *sum) { x.p50 = 0 })}},
		{name: "p95 on neither side", goal: GoalIntervalP95, want: VerdictNA, note: "fewer than 2 commits",
			model: []sum{{committed: 1}}, real: []sum{{committed: 1}}},

		{name: "no halts", goal: GoalHalts, want: VerdictNA, note: "no halt on either side", model: []sum{healthy}, real: []sum{healthy}},
		{name: "halt on the real side only", goal: GoalHalts, want: VerdictFail, note: "no halt on the model side, 1 halt on the real side",
			model: []sum{healthy}, real: []sum{with(healthy, halts(halt(5, 15000)))}},
		{name: "halt on the model side only", goal: GoalHalts, want: VerdictFail, note: "1 halt on the model side, no halt on the real side",
			model: []sum{with(healthy, halts(halt(5, 15000)))}, real: []sum{healthy}},
		{name: "halt at another height", goal: GoalHalts, want: VerdictFail, note: "halt 1 after height 6 on the model side, 5 on the real side",
			model: []sum{with(healthy, halts(halt(6, 15000)))}, real: []sum{with(healthy, halts(halt(5, 15000)))}},
		{name: "halt duration at +15 %", goal: GoalHalts, want: VerdictPass, diff: 15,
			model: []sum{with(healthy, halts(halt(5, 11500)))}, real: []sum{with(healthy, halts(halt(5, 10000)))}},
		{name: "halt duration outside", goal: GoalHalts, want: VerdictFail, diff: -16,
			model: []sum{with(healthy, halts(halt(5, 8400)))}, real: []sum{with(healthy, halts(halt(5, 10000)))}},
		{name: "second halt's duration decides", goal: GoalHalts, want: VerdictFail, diff: 50,
			model: []sum{with(healthy, halts(halt(5, 10000), halt(12, 6000)))}, real: []sum{with(healthy, halts(halt(5, 10000), halt(12, 4000)))}},
		{name: "halts compared repeat by repeat", goal: GoalHalts, want: VerdictFail, note: "repeat 2: 1 halt on the model side, no halt on the real side",
			model: []sum{with(healthy, halts(halt(5, 10000))), with(healthy, halts(halt(5, 10000)))},
			real:  []sum{with(healthy, halts(halt(5, 10000))), healthy}},
		{name: "halt durations: means over the repeats that halted", goal: GoalHalts, want: VerdictPass, diff: 0,
			model: []sum{with(healthy, halts(halt(5, 9000))), healthy, with(healthy, halts(halt(5, 11000)))},
			real:  []sum{with(healthy, halts(halt(5, 10000))), healthy, with(healthy, halts(halt(5, 10000)))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got GoalResult
			for _, g := range Compare(values(tc.model...), values(tc.real...), DefaultGoals) {
				if g.Goal == tc.goal {
					got = g
				}
			}
			if got.Verdict != tc.want {
				t.Fatalf("verdict %q, want %q: %+v", got.Verdict, tc.want, got)
			}
			if got.Diff != nil && math.Abs(*got.Diff-tc.diff) > 1e-9 {
				t.Errorf("diff %v, want %v", *got.Diff, tc.diff)
			}
			if got.Diff == nil && tc.want == VerdictPass {
				t.Errorf("a pass without a difference: %+v", got)
			}
			if got.Validator != tc.validator {
				t.Errorf("validator %q, want %q", got.Validator, tc.validator)
			}
			if !strings.Contains(got.Note, tc.note) || tc.note == "" && got.Note != "" {
				t.Errorf("note %q, want %q", got.Note, tc.note)
			}
		})
	}
}

// TestCompareJudgesEveryGoal: every goal comes back, in order, with both
// values shown.
func TestCompareJudgesEveryGoal(t *testing.T) {
	got := Compare(values(with(healthy, halts(halt(5, 15000)))), values(with(healthy, halts(halt(5, 14000)))), DefaultGoals)
	if len(got) != len(GoalNames) {
		t.Fatalf("%d goals, want %d", len(got), len(GoalNames))
	}
	for i, g := range got {
		if g.Goal != GoalNames[i] || g.ModelText == "" || g.RealText == "" {
			t.Errorf("goal %d: %+v", i, g)
		}
	}
	if h := got[4]; h.ModelText != "after h5 for 15.0 s" || h.RealText != "after h5 for 14.0 s" || *h.Model != 15 || *h.Real != 14 {
		t.Errorf("halts: %+v", h)
	}
}

// TestSideValues checks the reduction of a side's runs: means, the rate
// per validator, the overloaded host of any run.
func TestSideValues(t *testing.T) {
	v := values(
		sum{committed: 20, roundChanges: 2, p50: 1000, p95: 1400, missed: map[string][2]int{"v-1": {2, 20}, "slow": {0, 0}}},
		sum{committed: 10, roundChanges: 0, p50: 2000, p95: 2400, missed: map[string][2]int{"v-1": {1, 10}, "slow": {0, 0}}, overloaded: true},
	)
	if v.Runs != 2 || v.HeightsCommitted != 15 || v.HeightsWithRoundChange != 1 || *v.RoundChangesPer20 != 1 ||
		*v.BlockIntervalP50 != 1500 || *v.BlockIntervalP95 != 1900 || !v.HostOverloaded {
		t.Errorf("%+v", v)
	}
	if len(v.MissedRate) != 1 || v.MissedRate["v-1"] != 0.1 {
		t.Errorf("missed rates %v (slow counted nothing: left out)", v.MissedRate)
	}
	if len(v.Validators) != 2 || len(v.Halts) != 2 || v.Halts[0] == nil {
		t.Errorf("validators %v, halts %v", v.Validators, v.Halts)
	}
}

func TestSigned(t *testing.T) {
	for v, want := range map[float64]string{0: "0.0", -0.01: "0.0", 0.04: "0.0", 1.25: "+1.2", -3.5: "−3.5", 150: "+150", -1234.4: "−1234"} {
		if got := signed(v); got != want {
			t.Errorf("signed(%v) = %q, want %q", v, got, want)
		}
	}
}
