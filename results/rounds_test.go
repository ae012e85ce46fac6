package results

import (
	"github.com/valnet/valnet/internal/action"
	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/results/eventlog"
	"strings"
	"testing"
)

// deliver makes each node receive the votes of (h, r, phase) in the given
// order, one event per (node, voter); times only need to be increasing.
func deliver(h int64, r int32, ph string, order map[string][]string) []eventlog.Event {
	var evs []eventlog.Event
	ms := float64(h*10000) + float64(r*1000)
	if ph == phase.Precommit {
		ms += 500
	}
	for _, node := range []string{"v1", "v2", "v3", "v4"} {
		for _, voter := range order[node] {
			ms++
			evs = append(evs, voteAt(ms, node, voter, ph, h, r, "B"))
		}
	}
	return evs
}

func TestLateVotes(t *testing.T) {
	all := []string{"v1", "v2", "v3", "v4"}
	last := func(node string) []string { // v4 arrives after the other three
		return map[string][]string{"v1": all, "v2": all, "v3": all, "v4": {"v4", "v1", "v2", "v3"}}[node]
	}
	orders := func(f func(node string) []string) map[string][]string {
		m := map[string][]string{}
		for _, n := range all {
			m[n] = f(n)
		}
		return m
	}
	tests := []struct {
		name                  string
		events                []eventlog.Event
		prevotes, precommits  map[string]int
		noRunStartPowerIsZero bool
	}{
		{
			name:     "last at every other node: late",
			events:   deliver(1, 0, phase.Prevote, orders(last)),
			prevotes: map[string]int{"v4": 1},
		},
		{
			name: "late at 2 of 3 other nodes: late",
			events: deliver(1, 0, phase.Precommit, orders(func(n string) []string {
				if n == "v1" {
					return []string{"v1", "v4", "v2", "v3"} // in time at v1
				}
				return last(n)
			})),
			// v3 is then last at v1 and at v4 (whose own order ends in v3).
			precommits: map[string]int{"v4": 1, "v3": 1},
		},
		{
			name: "late at 1 of 3 other nodes: not late",
			events: deliver(2, 0, phase.Prevote, orders(func(n string) []string {
				if n == "v2" {
					return last(n)
				}
				return []string{"v4", "v1", "v2", "v3"}
			})),
			// v3 is now last at v1, v3 and v4: it is the late one.
			prevotes: map[string]int{"v3": 1},
		},
		{
			name: "never received by the others, but signed: late everywhere",
			events: append(deliver(1, 0, phase.Precommit, orders(func(n string) []string {
				if n == "v4" {
					return all
				}
				return []string{"v1", "v2", "v3"}
			})), signAt(1, "v4", phase.Precommit, 1, 0, "B", 1)),
			precommits: map[string]int{"v4": 1},
		},
		{
			name: "no node reached +2/3: nobody is late",
			events: deliver(3, 0, phase.Prevote, orders(func(string) []string {
				return []string{"v1", "v2"}
			})),
		},
		{
			name: "duplicate deliveries count once",
			events: deliver(1, 0, phase.Prevote, orders(func(string) []string {
				return []string{"v1", "v1", "v1", "v2", "v3", "v4"} // v1 thrice cannot make +2/3 alone
			})),
			prevotes: map[string]int{"v4": 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := append([]eventlog.Event{runStart(all...)}, tt.events...)
			s := Summarize(evs)
			for _, v := range s.Validators {
				if v.LatePrevotes != tt.prevotes[v.Name] || v.LatePrecommits != tt.precommits[v.Name] {
					t.Errorf("%s: late prevotes %d precommits %d, want %d %d", v.Name,
						v.LatePrevotes, v.LatePrecommits, tt.prevotes[v.Name], tt.precommits[v.Name])
				}
			}
		})
	}
}

func TestLateVotesUseVotingPower(t *testing.T) {
	// v1 holds 70 of 100: its vote alone is +2/3 at every node, so every
	// other vote that follows it is late.
	start := runStart("v1", "v2", "v3")
	start.Validators[0].Power, start.Validators[1].Power, start.Validators[2].Power = 70, 15, 15
	order := []string{"v1", "v2", "v3"}
	evs := append([]eventlog.Event{start}, deliver(1, 0, phase.Prevote, map[string][]string{"v1": order, "v2": order, "v3": order})...)
	s := Summarize(evs)
	for name, want := range map[string]int{"v1": 0, "v2": 1, "v3": 1} {
		if got := vByName(t, s, name).LatePrevotes; got != want {
			t.Errorf("%s: %d late prevotes, want %d", name, got, want)
		}
	}
	// Without run_start there is no voting power: nothing is late.
	s = Summarize(evs[1:])
	for _, v := range s.Validators {
		if v.LatePrevotes != 0 {
			t.Errorf("without run_start: %s has %d late prevotes", v.Name, v.LatePrevotes)
		}
	}
}

func TestConsecutiveMissedMax(t *testing.T) {
	b := func(h int64, absent ...string) eventlog.Event { return block(h, float64(h)*1000, 0, absent, nil) }
	evs := []eventlog.Event{runStart("v1", "v2", "v3"),
		b(1), b(2, "v1", "v3"), b(3, "v1"), b(4, "v1", "v2"), b(5, "v3"), b(6, "v1"), b(7, "v1"),
		// 8 is missing: height 7 has no next block and breaks every run.
		b(9), b(10, "v2"), b(11, "v2"),
	}
	s := Summarize(evs)
	// v1 absent at heights 1,2,3 then 5,6 (blocks 2-4, 6-7); v2 at 3 and
	// 9,10; v3 at 1 and 4.
	for name, want := range map[string]int{"v1": 3, "v2": 2, "v3": 1} {
		if got := vByName(t, s, name).ConsecutiveMissedMax; got != want {
			t.Errorf("%s: consecutive_missed_max %d, want %d", name, got, want)
		}
	}
	if got, _ := s.Metric("consecutive_missed_max", "v1", ""); got != 3 {
		t.Errorf("metric = %v", got)
	}
}

// roundRun: height 1 commits in round 1 (block 2's last_commit_round),
// v1 proposes round 0; nodes v1..v4 enter round 0 at 0 ms and prevote at
// 3000 ms (their propose timeout) unless extra says otherwise.
func roundRun(extra ...eventlog.Event) []eventlog.Event {
	evs := []eventlog.Event{runStart("v1", "v2", "v3", "v4")}
	for _, n := range []string{"v1", "v2", "v3", "v4"} {
		nr := newRound(n, 1, 0, "v1")
		evs = append(evs, nr, stepAt(3000, n, 1, 0, "prevote"))
	}
	evs = append(evs, extra...)
	return append(evs, block(1, 9000, 0, nil, nil), block(2, 10000, 1, nil, nil), runEnd(11000, eventlog.StopHeights))
}

func proposalAt(ms float64, node string) eventlog.Event {
	return eventlog.Event{Time: at(ms), Kind: eventlog.KindProposal, Node: node, Height: 1, BlockID: "B"}
}

func TestRoundChangeCauses(t *testing.T) {
	inTime := []eventlog.Event{signAt(100, "v1", phase.Proposal, 1, 0, "B", 1),
		proposalAt(110, "v1"), proposalAt(120, "v2"), proposalAt(130, "v3"), proposalAt(140, "v4")}
	prevote := func(v, id string) eventlog.Event { return voteAt(3100, v, v, phase.Prevote, 1, 0, id) }
	precommit := func(v, id string) eventlog.Event { return voteAt(4100, v, v, phase.Precommit, 1, 0, id) }
	tests := []struct {
		name        string
		events      []eventlog.Event
		cause       string
		detail      string
		notReceived int // v1's proposals_not_received
	}{
		{"proposer signed nothing", roundRun(), RoundProposalMissing, "v1 signed no proposal", 1},
		{"proposer's node killed: proposer-down",
			roundRun(faultAt(-500, "v1", action.NodeKill, eventlog.FaultStart)),
			RoundProposerDown, "v1's node was down (node-kill fault active: test)", 1},
		{"proposer's node killed during the round",
			roundRun(faultAt(1000, "v1", action.NodeStop, eventlog.FaultStart)),
			RoundProposerDown, "v1's node was down (node-stop fault active", 1},
		{"proposer's node back before the round: not down",
			roundRun(faultAt(-500, "v1", action.NodeKill, eventlog.FaultStart), faultAt(-100, "v1", action.NodeStart, eventlog.FaultStart)),
			RoundProposalMissing, "v1 signed no proposal", 1},
		{"proposer's signer never answered",
			roundRun(requestAt(20, "v1", phase.Proposal, 1, 0)),
			CauseSignerNotAnswering, "v1's proposal signature was requested 20 ms into the round and never returned (signer not answering)", 1},
		{"proposer's signer still on an earlier signature",
			roundRun(requestAt(-300, "v1", phase.Precommit, 0, 0)),
			RoundProposerSignerSlow, "when the round began, v1's signer was still on the h0 precommit r0 signature, requested 300 ms before, never returned", 1},
		{"proposal on a saturated host",
			roundRun(signAt(100, "v1", phase.Proposal, 1, 0, "B", 1), proposalAt(3200, "v2"), proposalAt(3200, "v3"), proposalAt(150, "v4"), hostAt(2000, true)),
			CauseHostOverload, "the proposal reached 1 of 3 other nodes before they prevoted; the host was saturated (1 of", 1},
		{"no polka on a saturated host",
			roundRun(append(inTime, prevote("v1", "B"), prevote("v2", "B"), prevote("v3", ""), prevote("v4", ""), hostAt(3500, true))...),
			CauseHostOverload, "the most prevoted block had 20 of 40 power; the host was saturated", 0},
		{"a failed proposal signature stays the signer's on a saturated host",
			roundRun(withError(signAt(50, "v1", phase.Proposal, 1, 0, "", 3), "boom"), hostAt(2000, true)),
			CauseSignerFailed, "v1's proposal signature failed: boom", 1},
		{"proposer's signer failed",
			roundRun(withError(signAt(50, "v1", phase.Proposal, 1, 0, "", 3), "signer: connection reset")),
			CauseSignerFailed, "v1's proposal signature failed: signer: connection reset", 1},
		{"proposer's signature withheld as invalid",
			roundRun(withFailure(signAt(50, "v1", phase.Proposal, 1, 0, "", 3), "its signature does not verify", CauseSignatureInvalid)),
			CauseSignatureInvalid, "v1's proposal signature failed: its signature does not verify", 1},
		{"proposal signed after the others' propose timeout",
			roundRun(signAt(3400, "v1", phase.Proposal, 1, 0, "B", 3390), proposalAt(3401, "v1"), proposalAt(3450, "v2")),
			RoundProposerSignerSlow, "took 3390 ms and returned after 3 of 3 other nodes had prevoted", 1},
		{"signed in time, reached the others too late",
			roundRun(signAt(100, "v1", phase.Proposal, 1, 0, "B", 1), proposalAt(3200, "v2"), proposalAt(3200, "v3"), proposalAt(150, "v4")),
			RoundProposalMissing, "the proposal reached 1 of 3 other nodes before they prevoted", 1},
		{"proposal there, prevotes split: no polka",
			roundRun(append(inTime, prevote("v1", "B"), prevote("v2", "B"), prevote("v3", ""), prevote("v4", ""))...),
			RoundNoPolka, "the most prevoted block had 20 of 40 power", 0},
		{"polka, too few precommits",
			roundRun(append(inTime, prevote("v1", "B"), prevote("v2", "B"), prevote("v3", "B"),
				precommit("v1", "B"), precommit("v2", "B"), precommit("v3", ""))...),
			RoundNoPrecommitQuorum, "a block had 30 of 40 prevote power but only 20 precommit power", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(tt.events)
			if len(s.RoundChanges) != 1 {
				t.Fatalf("round changes %+v, want 1", s.RoundChanges)
			}
			rc := s.RoundChanges[0]
			if rc.Height != 1 || rc.Round != 0 || rc.Proposer != "v1" || rc.Cause != tt.cause || !strings.Contains(rc.Detail, tt.detail) {
				t.Errorf("got %+v, want cause %s, detail containing %q", rc, tt.cause, tt.detail)
			}
			if got := vByName(t, s, "v1").ProposalsNotReceived; got != tt.notReceived {
				t.Errorf("v1 proposals_not_received = %d, want %d", got, tt.notReceived)
			}
		})
	}
}

// TestProposerBehind: the proposer's node ran again (node-start) but had
// not rejoined consensus when its turn came: it shows no event of the
// round, while the others are there.
func TestProposerBehind(t *testing.T) {
	evs := []eventlog.Event{runStart("v1", "v2", "v3", "v4"), faultAt(-9000, "v1", action.NodeKill, eventlog.FaultStart),
		stepAt(-9500, "v1", 0, 0, "commit"), faultAt(-1000, "v1", action.NodeStart, eventlog.FaultStart)}
	for _, n := range []string{"v2", "v3", "v4"} {
		nr := newRound(n, 1, 0, "v1")
		evs = append(evs, nr, stepAt(3000, n, 1, 0, "prevote"), eventlog.Event{Time: at(5000), Kind: eventlog.KindNewRound, Node: n, Height: 1, Round: 1, Proposer: "v2"})
	}
	evs = append(evs, block(1, 9000, 0, nil, nil), block(2, 10000, 1, nil, nil), runEnd(11000, eventlog.StopHeights))
	s := Summarize(evs)
	if len(s.RoundChanges) != 1 {
		t.Fatalf("round changes %+v", s.RoundChanges)
	}
	rc := s.RoundChanges[0]
	want := "v1's node had not reached height 1 (it was at height 0); its node ran again 6000 ms before (after node-kill), catching up"
	if rc.Cause != RoundProposerBehind || rc.Detail != want {
		t.Errorf("got %s: %s\nwant %s: %s", rc.Cause, rc.Detail, RoundProposerBehind, want)
	}
}

func TestRoundChangesWithoutEvents(t *testing.T) {
	// Only blocks: two rounds before the decision, nothing known about them.
	s := Summarize([]eventlog.Event{block(1, 0, 0, nil, nil), block(2, 1000, 2, nil, nil)})
	want := []RoundChange{{Height: 1, Round: 0, Cause: RoundUnknown}, {Height: 1, Round: 1, Cause: RoundUnknown}}
	if len(s.RoundChanges) != 2 || s.RoundChanges[0] != want[0] || s.RoundChanges[1] != want[1] {
		t.Errorf("round changes %+v, want %+v", s.RoundChanges, want)
	}
	if s := Summarize(nil); s.RoundChanges == nil {
		t.Error("round_changes must be [] not null")
	}
}
