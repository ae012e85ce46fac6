package results

import (
	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/results/eventlog"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Tiny event constructors: ms is the event time in ms after t0.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

func runStart(names ...string) eventlog.Event {
	var vals []eventlog.ValidatorInfo
	for _, n := range names {
		vals = append(vals, eventlog.ValidatorInfo{Name: n, Address: strings.ToUpper(n) + "ADDR", Power: 10, Signer: "local"})
	}
	return eventlog.Event{Time: at(0), Kind: eventlog.KindRunStart, Scenario: "unit", Backend: "inprocess", ChainID: "c", Seed: 3, Validators: vals}
}

func runEnd(ms float64, reason string) eventlog.Event {
	return eventlog.Event{Time: at(ms), Kind: eventlog.KindRunEnd, StopReason: reason}
}

func block(h int64, ms float64, lastRound int32, absent, nils []string) eventlog.Event {
	return eventlog.Event{Time: at(ms), Kind: eventlog.KindBlock, Height: h, LastCommitRound: lastRound, LastCommitAbsent: absent, LastCommitNil: nils}
}

func step(node string, h int64, r int32, s string) eventlog.Event {
	return eventlog.Event{Time: at(0), Kind: eventlog.KindStep, Node: node, Height: h, Round: r, Step: s}
}

func newRound(node string, h int64, r int32, proposer string) eventlog.Event {
	return eventlog.Event{Time: at(0), Kind: eventlog.KindNewRound, Node: node, Height: h, Round: r, Proposer: proposer}
}

func signEv(v, phase string, h int64, r int32, blockID string) eventlog.Event {
	return eventlog.Event{Time: at(0), Kind: eventlog.KindSign, Node: v, Validator: v, Phase: phase, Height: h, Round: r, BlockID: blockID, LatencyMS: 1}
}

func withLatency(ev eventlog.Event, lat, inj float64) eventlog.Event {
	ev.LatencyMS, ev.InjectedMS = lat, inj
	return ev
}
func withError(ev eventlog.Event, err string) eventlog.Event { ev.Error = err; return ev }
func withFailure(ev eventlog.Event, err, failure string) eventlog.Event {
	ev.Error, ev.Failure = err, failure
	return ev
}

func vByName(t *testing.T, s *Summary, name string) ValidatorSummary {
	t.Helper()
	for _, v := range s.Validators {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("validator %s not in summary", name)
	return ValidatorSummary{}
}

func TestHeightsAndRounds(t *testing.T) {
	tests := []struct {
		name    string
		events  []eventlog.Event
		heights HeightStats
		rounds  RoundStats
	}{
		{
			name:   "nothing committed",
			events: []eventlog.Event{runStart("v1")},
		},
		{
			name: "commit round from next block's last_commit_round",
			events: []eventlog.Event{
				block(1, 0, 0, nil, nil),
				block(2, 1000, 0, nil, nil), // height 1 in round 0
				block(3, 2000, 2, nil, nil), // height 2 in round 2
				block(4, 3000, 1, nil, nil), // height 3 in round 1
				step("n1", 4, 0, "commit"),
			},
			heights: HeightStats{First: 1, Last: 4, Committed: 4},
			rounds:  RoundStats{HeightsWithRoundChange: 2, MaxCommitRound: 2, ExtraRounds: 3},
		},
		{
			name: "last height falls back to the lowest step commit round",
			events: []eventlog.Event{
				block(1, 0, 0, nil, nil),
				block(2, 1000, 0, nil, nil),
				step("n2", 2, 3, "commit"), // a node that had moved on
				step("n1", 2, 1, "commit"),
				step("n1", 2, 0, "precommit"), // not a commit step
			},
			heights: HeightStats{First: 1, Last: 2, Committed: 2},
			rounds:  RoundStats{HeightsWithRoundChange: 1, MaxCommitRound: 1, ExtraRounds: 1},
		},
		{
			name: "next block wins over step commit",
			events: []eventlog.Event{
				block(1, 0, 0, nil, nil),
				step("n1", 1, 4, "commit"),
				block(2, 1000, 0, nil, nil),
				step("n1", 2, 0, "commit"),
			},
			heights: HeightStats{First: 1, Last: 2, Committed: 2},
		},
		{
			name: "unknown commit round is excluded",
			events: []eventlog.Event{
				block(1, 0, 0, nil, nil),
				block(2, 1000, 1, nil, nil),
			},
			heights: HeightStats{First: 1, Last: 2, Committed: 2},
			rounds:  RoundStats{HeightsWithRoundChange: 1, MaxCommitRound: 1, ExtraRounds: 1, UnknownCommitRound: 1},
		},
		{
			name: "duplicate block events count once, out-of-order stream",
			events: []eventlog.Event{
				block(3, 2000, 0, nil, nil),
				block(2, 1000, 0, nil, nil),
				block(2, 1100, 0, nil, nil),
				step("n1", 3, 0, "commit"),
			},
			heights: HeightStats{First: 2, Last: 3, Committed: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(tt.events)
			if s.Heights != tt.heights {
				t.Errorf("heights = %+v, want %+v", s.Heights, tt.heights)
			}
			if s.Rounds != tt.rounds {
				t.Errorf("rounds = %+v, want %+v", s.Rounds, tt.rounds)
			}
		})
	}
}

func TestBlockInterval(t *testing.T) {
	tests := []struct {
		name   string
		events []eventlog.Event
		want   IntervalStats
	}{
		{"single height", []eventlog.Event{block(1, 0, 0, nil, nil)}, IntervalStats{}},
		{
			// 4 is missing, so 5 has no interval; 1..3 give 1000 and 2000.
			name: "gap skipped",
			events: []eventlog.Event{
				block(1, 0, 0, nil, nil), block(2, 1000, 0, nil, nil),
				block(3, 3000, 0, nil, nil), block(5, 4000, 0, nil, nil),
			},
			want: IntervalStats{Count: 2, P50: 1000, P95: 2000, Max: 2000},
		},
		{
			name: "sub-millisecond rounding",
			events: []eventlog.Event{
				block(1, 0, 0, nil, nil), block(2, 1000.0004, 0, nil, nil),
				block(3, 2000.0014, 0, nil, nil), block(4, 3100.0014, 0, nil, nil),
			},
			want: IntervalStats{Count: 3, P50: 1000.001, P95: 1100, Max: 1100},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Summarize(tt.events).BlockIntervalMS; got != tt.want {
				t.Errorf("block_interval_ms = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestMissedAndNilPrecommits(t *testing.T) {
	type counts struct{ missed, nils, counted int }
	tests := []struct {
		name   string
		events []eventlog.Event
		want   map[string]counts
	}{
		{
			name: "counted from the next block only",
			events: []eventlog.Event{
				runStart("v1", "v2", "v3"),
				block(1, 0, 0, []string{"v1"}, nil), // describes height 0: ignored
				block(2, 1000, 0, []string{"v2"}, nil),
				block(3, 2000, 0, []string{"v2"}, []string{"v1"}),
				block(4, 3000, 0, []string{"v3"}, []string{"v1", "v2"}),
				// height 4 has no block 5: not counted
			},
			want: map[string]counts{"v1": {0, 2, 3}, "v2": {2, 1, 3}, "v3": {1, 0, 3}},
		},
		{
			name:   "single height: nothing counted",
			events: []eventlog.Event{runStart("v1"), block(7, 0, 0, nil, nil)},
			want:   map[string]counts{"v1": {0, 0, 0}},
		},
		{
			name: "validator missing from run_start is still reported",
			events: []eventlog.Event{
				runStart("v1"),
				block(1, 0, 0, nil, nil),
				block(2, 1000, 0, []string{"ghost"}, nil),
			},
			want: map[string]counts{"v1": {0, 0, 1}, "ghost": {1, 0, 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(tt.events)
			if len(s.Validators) != len(tt.want) {
				t.Fatalf("got %d validators, want %d", len(s.Validators), len(tt.want))
			}
			for name, want := range tt.want {
				v := vByName(t, s, name)
				if got := (counts{v.MissedPrecommits, v.NilPrecommits, v.PrecommitsCounted}); got != want {
					t.Errorf("%s: got %+v, want %+v", name, got, want)
				}
			}
		})
	}
}

func TestProposals(t *testing.T) {
	tests := []struct {
		name   string
		events []eventlog.Event
		want   map[string]ProposalStats
	}{
		{
			name: "turn reported by every node counts once",
			events: []eventlog.Event{
				runStart("v1", "v2"),
				newRound("n1", 1, 0, "v1"), newRound("n2", 1, 0, "v1"),
				signEv("v1", phase.Proposal, 1, 0, "A"),
				block(1, 0, 0, nil, nil),
			},
			want: map[string]ProposalStats{"v1": {1, 1, 0}, "v2": {}},
		},
		{
			name: "failed round: turn expected, errored sign not made",
			events: []eventlog.Event{
				runStart("v1", "v2"),
				newRound("n1", 1, 0, "v1"),
				withError(signEv("v1", phase.Proposal, 1, 0, "A"), "timeout"),
				newRound("n1", 1, 1, "v2"),
				signEv("v2", phase.Proposal, 1, 1, "A"),
				block(1, 0, 0, nil, nil),
				block(2, 1000, 1, nil, nil), // height 1 committed in round 1
			},
			want: map[string]ProposalStats{"v1": {1, 0, 1}, "v2": {1, 1, 0}},
		},
		{
			name: "rounds after the commit round and heights after the last commit are outside the window",
			events: []eventlog.Event{
				runStart("v1", "v2"),
				newRound("n1", 1, 0, "v1"),
				signEv("v1", phase.Proposal, 1, 0, "A"),
				newRound("n2", 1, 1, "v2"), // lagging node moved on before seeing the commit
				signEv("v2", phase.Proposal, 1, 1, "B"),
				block(1, 0, 0, nil, nil),
				block(2, 1000, 0, nil, nil), // height 1 in round 0
				newRound("n1", 2, 0, "v2"),
				signEv("v2", phase.Proposal, 2, 0, "C"),
				step("n1", 2, 0, "commit"),
				newRound("n1", 3, 0, "v1"), // run stopped during height 3
				signEv("v1", phase.Proposal, 3, 0, "D"),
			},
			want: map[string]ProposalStats{"v1": {1, 1, 0}, "v2": {1, 1, 0}},
		},
		{
			name: "unknown commit round keeps every round of the height",
			events: []eventlog.Event{
				runStart("v1", "v2"),
				newRound("n1", 1, 0, "v1"),
				newRound("n1", 1, 1, "v2"),
				signEv("v2", phase.Proposal, 1, 1, "B"),
				block(1, 0, 0, nil, nil),
			},
			want: map[string]ProposalStats{"v1": {1, 0, 1}, "v2": {1, 1, 0}},
		},
		{
			name: "re-signed proposal counts once; made without a turn never makes missed negative",
			events: []eventlog.Event{
				runStart("v1"),
				signEv("v1", phase.Proposal, 1, 0, "A"),
				signEv("v1", phase.Proposal, 1, 0, "A"),
				block(1, 0, 0, nil, nil),
				step("n1", 1, 0, "commit"),
			},
			want: map[string]ProposalStats{"v1": {0, 1, 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(tt.events)
			for name, want := range tt.want {
				if got := vByName(t, s, name).Proposals; got != want {
					t.Errorf("%s: proposals = %+v, want %+v", name, got, want)
				}
			}
		})
	}
}

func TestDoubleSigns(t *testing.T) {
	tests := []struct {
		name   string
		events []eventlog.Event
		want   []DoubleSign
	}{
		{
			name:   "identical re-sign is not a double sign",
			events: []eventlog.Event{signEv("v1", phase.Precommit, 5, 0, "A"), signEv("v1", phase.Precommit, 5, 0, "A")},
		},
		{
			name: "planted conflicting precommit",
			events: []eventlog.Event{
				signEv("v1", phase.Precommit, 5, 0, "A"),
				signEv("v2", phase.Precommit, 5, 0, "A"),
				signEv("v1", phase.Precommit, 5, 0, "B"),
				signEv("v1", phase.Precommit, 5, 0, "A"),
			},
			want: []DoubleSign{{Validator: "v1", Height: 5, Round: 0, Phase: phase.Precommit, BlockIDs: []string{"A", "B"}}},
		},
		{
			name: "nil vote and block vote conflict",
			events: []eventlog.Event{
				signEv("v2", phase.Prevote, 3, 1, ""),
				signEv("v2", phase.Prevote, 3, 1, "A"),
			},
			want: []DoubleSign{{Validator: "v2", Height: 3, Round: 1, Phase: phase.Prevote, BlockIDs: []string{"", "A"}}},
		},
		{
			name: "conflicting proposals",
			events: []eventlog.Event{
				signEv("v3", phase.Proposal, 2, 0, "A"),
				signEv("v3", phase.Proposal, 2, 0, "B"),
				signEv("v3", phase.Proposal, 2, 0, "C"),
			},
			want: []DoubleSign{{Validator: "v3", Height: 2, Round: 0, Phase: phase.Proposal, BlockIDs: []string{"A", "B", "C"}}},
		},
		{
			name: "different round, phase, height or validator is no conflict",
			events: []eventlog.Event{
				signEv("v1", phase.Precommit, 5, 0, "A"),
				signEv("v1", phase.Precommit, 5, 1, "B"),
				signEv("v1", phase.Prevote, 5, 0, "B"),
				signEv("v1", phase.Precommit, 6, 0, "B"),
				signEv("v2", phase.Precommit, 5, 0, "B"),
			},
		},
		{
			name: "refused signature does not count",
			events: []eventlog.Event{
				signEv("v1", phase.Precommit, 5, 0, "A"),
				withError(signEv("v1", phase.Precommit, 5, 0, "B"), "conflicting data"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(tt.events)
			if s.DoubleSigns != len(tt.want) || !reflect.DeepEqual(s.DoubleSignDetails, tt.want) {
				t.Errorf("double_signs = %d %+v, want %+v", s.DoubleSigns, s.DoubleSignDetails, tt.want)
			}
		})
	}
}

func TestSignLatency(t *testing.T) {
	var evs []eventlog.Event
	evs = append(evs, runStart("v1", "v2"))
	// v1: prevotes 1..100 ms, precommits 200 ms of which 199.5 injected.
	for i := 1; i <= 100; i++ {
		evs = append(evs, withLatency(signEv("v1", phase.Prevote, int64(i), 0, "A"), float64(i), 0))
	}
	for i := 1; i <= 4; i++ {
		evs = append(evs, withLatency(signEv("v1", phase.Precommit, int64(i), 0, "A"), 200.00049, 199.5))
	}
	evs = append(evs,
		withError(withLatency(signEv("v1", phase.Proposal, 1, 0, "A"), 5000, 0), "timeout"),
		withError(signEv("v1", phase.Precommit, 9, 0, "A"), "refused"),
	)
	s := Summarize(evs)
	v1 := vByName(t, s, "v1")
	want := PhaseLatency{
		Prevote:   LatencyStats{Count: 100, P50: 50, P95: 95, P99: 99, Max: 100},
		Precommit: LatencyStats{Count: 4, P50: 200, P95: 200, P99: 200, Max: 200},
		All:       LatencyStats{Count: 104, P50: 52, P95: 99, P99: 200, Max: 200},
	}
	if v1.SignLatencyMS != want {
		t.Errorf("sign_latency_ms =\n %+v\nwant\n %+v", v1.SignLatencyMS, want)
	}
	if want := (LatencyStats{Count: 4, P50: 199.5, P95: 199.5, P99: 199.5, Max: 199.5}); v1.InjectedLatencyMS != want {
		t.Errorf("injected = %+v, want %+v", v1.InjectedLatencyMS, want)
	}
	if v1.SignErrors != 2 {
		t.Errorf("sign_errors = %d, want 2", v1.SignErrors)
	}
	if v2 := vByName(t, s, "v2"); v2.SignLatencyMS != (PhaseLatency{}) || v2.SignErrors != 0 {
		t.Errorf("v2 = %+v, want no samples", v2)
	}
}

func TestRunMetadata(t *testing.T) {
	tests := []struct {
		name       string
		events     []eventlog.Event
		stop, err  string
		ok         bool
		durationMS int64
	}{
		{"finished", []eventlog.Event{runStart("v1"), block(1, 10, 0, nil, nil), runEnd(2500, eventlog.StopHeights)}, eventlog.StopHeights, "", true, 2500},
		{"max duration is no error but fails", []eventlog.Event{runStart("v1"), runEnd(60000, eventlog.StopMaxDuration)}, eventlog.StopMaxDuration, "", false, 60000},
		{"interrupted", []eventlog.Event{runStart("v1"), runEnd(100, eventlog.StopInterrupted)}, eventlog.StopInterrupted, "", false, 100},
		{"error", []eventlog.Event{runStart("v1"), {Time: at(50), Kind: eventlog.KindRunEnd, StopReason: eventlog.StopError, Error: "node v1 exited"}}, eventlog.StopError, "node v1 exited", false, 50},
		{"crashed: no run_end, duration to last event", []eventlog.Event{runStart("v1"), block(1, 1234.9, 0, nil, nil)}, eventlog.StopError, "run did not finish (no run_end event)", false, 1234},
		{"run_end without reason", []eventlog.Event{runStart("v1"), {Time: at(5), Kind: eventlog.KindRunEnd}}, eventlog.StopError, "run_end event has no stop_reason", false, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(tt.events)
			if s.StopReason != tt.stop || s.Error != tt.err || s.OK != tt.ok || s.DurationMS != tt.durationMS {
				t.Errorf("got stop=%q err=%q ok=%v duration=%d, want %q %q %v %d",
					s.StopReason, s.Error, s.OK, s.DurationMS, tt.stop, tt.err, tt.ok, tt.durationMS)
			}
			if s.Scenario != "unit" || s.Backend != "inprocess" || s.ChainID != "c" || s.Seed != 3 {
				t.Errorf("run metadata = %q %q %q %d", s.Scenario, s.Backend, s.ChainID, s.Seed)
			}
		})
	}
}

func TestValidatorOrder(t *testing.T) {
	s := Summarize([]eventlog.Event{
		runStart("zeta", "alpha", "mid"),
		signEv("x-late", phase.Prevote, 1, 0, "A"),
		newRound("n1", 1, 0, "b-extra"),
		block(1, 0, 0, nil, nil),
	})
	var got []string
	for _, v := range s.Validators {
		got = append(got, v.Name)
	}
	want := []string{"zeta", "alpha", "mid", "b-extra", "x-late"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order = %v, want %v (run_start order, then others by name)", got, want)
	}
	if v := s.Validators[0]; v.Address != "ZETAADDR" || v.Signer != "local" || v.Power != 10 {
		t.Errorf("run_start fields not copied: %+v", v)
	}
}

func TestEmptyStream(t *testing.T) {
	s := Summarize(nil)
	if s.OK || s.StopReason != eventlog.StopError || s.Validators == nil || s.Expectations == nil {
		t.Errorf("empty stream summary = %+v", s)
	}
	if err := WriteSummaryJSON(io.Discard, s); err != nil {
		t.Fatal(err)
	}
}

func TestNodeErrors(t *testing.T) {
	s := Summarize([]eventlog.Event{
		runStart("v1"),
		{Time: at(5), Kind: eventlog.KindNodeError, Node: "v1", Error: "subscription cancelled"},
		runEnd(10, eventlog.StopHeights),
	})
	want := []NodeError{{Time: at(5), Node: "v1", Error: "subscription cancelled"}}
	if !reflect.DeepEqual(s.NodeErrors, want) {
		t.Errorf("node_errors = %+v, want %+v", s.NodeErrors, want)
	}
	if !s.OK {
		t.Error("a node error alone should not fail the run")
	}
}

// DoubleSignsSoFar reports a conflict once its height is judged, while the
// stream still goes on (valnet soak's live check), and Summary agrees.
func TestDoubleSignsSoFar(t *testing.T) {
	z := NewSummarizer()
	add := func(ev eventlog.Event) { z.Add(&ev) }
	add(runStart("v1", "v2"))
	add(signEv("v1", phase.Precommit, 2, 0, "A"))
	add(signEv("v1", phase.Precommit, 2, 0, "B"))
	if got := z.DoubleSignsSoFar(); len(got) != 0 {
		t.Fatalf("height 2 judged before the stream moved on: %+v", got)
	}
	for h := int64(2); h <= 8; h++ {
		add(block(h, float64(h)*1000, 0, nil, nil))
	}
	want := []DoubleSign{{Validator: "v1", Height: 2, Round: 0, Phase: phase.Precommit, BlockIDs: []string{"A", "B"}}}
	if got := z.DoubleSignsSoFar(); !reflect.DeepEqual(got, want) {
		t.Fatalf("so far %+v, want %+v", got, want)
	}
	if s := z.Summary(); !reflect.DeepEqual(s.DoubleSignDetails, want) {
		t.Fatalf("summary %+v, want %+v", s.DoubleSignDetails, want)
	}
}
