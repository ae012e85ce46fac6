package results

import (
	"github.com/valnet/valnet/internal/action"
	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/results/eventlog"
	"reflect"
	"strings"
	"testing"
)

// Event constructors with times, for the consensus analysis.
func stepAt(ms float64, node string, h int64, r int32, s string) eventlog.Event {
	ev := step(node, h, r, s)
	ev.Time = at(ms)
	return ev
}

func signAt(ms float64, v, phase string, h int64, r int32, blockID string, latency float64) eventlog.Event {
	ev := signEv(v, phase, h, r, blockID)
	ev.Time, ev.LatencyMS = at(ms), latency
	return ev
}

func voteAt(ms float64, node, v, phase string, h int64, r int32, blockID string) eventlog.Event {
	return eventlog.Event{Time: at(ms), Kind: eventlog.KindVote, Node: node, Validator: v, Phase: phase, Height: h, Round: r, BlockID: blockID}
}

func requestAt(ms float64, v, phase string, h int64, r int32) eventlog.Event {
	return eventlog.Event{Time: at(ms), Kind: eventlog.KindSignRequest, Node: v, Validator: v, Phase: phase, Height: h, Round: r}
}

// hostAt is one host second ending at ms, saturated or idle.
func hostAt(ms float64, saturated bool) eventlog.Event {
	s := eventlog.HostSample{Cores: 2, CPUBusy: 0.2, SchedLagP99MS: 0.3, TickLagMS: 0.5}
	if saturated {
		s = eventlog.HostSample{Cores: 2, CPUBusy: 0.99, SchedLagP99MS: 25, TickLagMS: 120}
	}
	return eventlog.Event{Time: at(ms), Kind: eventlog.KindHost, Host: &s}
}

func faultAt(ms float64, v, action, state string) eventlog.Event {
	return eventlog.Event{Time: at(ms), Kind: eventlog.KindFault, Validator: v, Action: action, State: state, Detail: "test"}
}

// missedRun: four validators; height 1 is decided at 900 ms (v1..v3 enter
// commit then; v4's own node at 950), blocks at 1000 and 3000; block 2,
// proposed by v1, has v4 absent from height 1's commit in commitRound.
// extra events describe what v4 did.
func missedRun(commitRound int32, extra ...eventlog.Event) []eventlog.Event {
	evs := []eventlog.Event{runStart("v1", "v2", "v3", "v4")}
	for _, n := range []string{"v1", "v2", "v3"} {
		evs = append(evs, stepAt(900, n, 1, commitRound, "commit"))
	}
	evs = append(evs, stepAt(950, "v4", 1, commitRound, "commit"))
	evs = append(evs, extra...)
	b2 := block(2, 3000, commitRound, []string{"v4"}, nil)
	b2.Proposer = "v1"
	return append(evs, block(1, 1000, 0, nil, nil), b2, runEnd(4000, eventlog.StopHeights))
}

func TestMissedPrecommitCauses(t *testing.T) {
	const id = "B1"
	tests := []struct {
		name   string
		events []eventlog.Event
		cause  string
		detail string // substring
	}{
		{"node down: a node fault active through the decision",
			missedRun(0, faultAt(100, "v4", action.NodeKill, eventlog.FaultStart)),
			CauseNodeDown, "node-kill fault active"},
		{"node down: paused, resumed after the round began",
			missedRun(0, faultAt(100, "v4", action.NodePause, eventlog.FaultStart), faultAt(500, "v4", action.NodePause, eventlog.FaultEnd),
				eventlog.Event{Time: at(200), Kind: eventlog.KindNewRound, Node: "v1", Height: 1, Proposer: "v1"}),
			CauseNodeDown, "node-pause"},
		{"a node fault that ended before the round is not the cause",
			missedRun(0, faultAt(10, "v4", action.NodeStop, eventlog.FaultStart), faultAt(50, "v4", action.NodeStop, eventlog.FaultEnd),
				eventlog.Event{Time: at(200), Kind: eventlog.KindNewRound, Node: "v1", Height: 1, Proposer: "v1"}),
			CauseUnknown, "no signature by v4 at height 1"},
		{"a signer fault is not a node fault",
			missedRun(0, faultAt(100, "v4", "signer-delay", eventlog.FaultStart)),
			CauseUnknown, ""},
		{"signer failed on the commit round's precommit",
			missedRun(0, withError(signAt(500, "v4", phase.Precommit, 1, 0, "", 3), "signer: connection reset")),
			CauseSignerFailed, "precommit r0: signer: connection reset"},
		{"signer failed in an earlier round, nothing for the commit round",
			missedRun(1, withError(signAt(500, "v4", phase.Precommit, 1, 0, "", 3), "boom")),
			CauseSignerFailed, "precommit r0: boom"},
		{"an earlier round's failure does not hide a later signature",
			missedRun(1, withError(signAt(500, "v4", phase.Precommit, 1, 0, "", 3), "boom"),
				signAt(800, "v4", phase.Precommit, 1, 1, id, 1)),
			CauseNetwork, "precommit r1 signed 100 ms before the decision"},
		{"signer late: precommit returned after the decision",
			missedRun(0, signAt(1100, "v4", phase.Precommit, 1, 0, id, 400)),
			CauseSignerLate, "precommit r0 signed 200 ms after the decision (signature took 400 ms)"},
		{"signer late: a prevote still being signed at the decision",
			missedRun(0, signAt(1200, "v4", phase.Prevote, 1, 0, id, 500)),
			CauseSignerLate, "at the decision its signer was still on the h1 prevote r0 signature, requested 200 ms before, took 500 ms"},
		{"signer late: prevoted, precommit never returned",
			missedRun(0, signAt(300, "v4", phase.Prevote, 1, 0, id, 1)),
			CauseSignerLate, "prevote r0 signed but no precommit signature returned"},
		{"network: signed in time, the next proposer received it late",
			missedRun(0, signAt(800, "v4", phase.Precommit, 1, 0, id, 1), voteAt(1500, "v1", "v4", phase.Precommit, 1, 0, id)),
			CauseNetwork, "v1 (proposer of 2) received it 600 ms after the decision"},
		{"network: signed in time, never received by the next proposer",
			missedRun(0, signAt(800, "v4", phase.Precommit, 1, 0, id, 1), voteAt(810, "v2", "v4", phase.Precommit, 1, 0, id)),
			CauseNetwork, "no vote event shows v1 (proposer of 2) receiving it"},
		{"the decision is the others' commit step, not v's own",
			// v4's node entered commit (at 850, having seen +2/3) before
			// the others: its precommit at 870 still beat their 900.
			missedRun(0, stepAt(850, "v4", 1, 0, "commit"), signAt(870, "v4", phase.Precommit, 1, 0, id, 1)),
			CauseNetwork, "signed 30 ms before the decision"},
		{"asked for just after the others decided, by an idle signer: the node was behind",
			missedRun(0, signAt(920, "v4", phase.Precommit, 1, 0, id, 1)),
			CauseNodeBehind, "precommit r0 asked for 19 ms after the decision (signature took 1 ms): v4's node got there late"},
		{"signed after the decision, asked for after it, the signer busy with a backlog",
			missedRun(0, signAt(1000, "v4", phase.Prevote, 1, 0, id, 750), signAt(1500, "v4", phase.Precommit, 1, 0, id, 500)),
			CauseSignerLate, "signed 600 ms after the decision (signature took 500 ms); at the decision its signer was still on the h1 prevote r0 signature, requested 650 ms before, took 750 ms"},
		{"signed after the decision, asked for after it: a backlog from the height before during the round",
			missedRun(0, eventlog.Event{Time: at(200), Kind: eventlog.KindNewRound, Node: "v1", Height: 1, Proposer: "v1"},
				signAt(890, "v4", phase.Precommit, 0, 1, id, 700), signAt(1000, "v4", phase.Precommit, 1, 0, id, 2)),
			CauseSignerLate, "precommit r0 signed 100 ms after the decision (signature took 2 ms); during the round its signer was still on the h0 precommit r1 signature (requested 10 ms before the round began, took 700 ms)"},
		{"no precommit: the signer still busy with an earlier height's signature",
			missedRun(0, signAt(1800, "v4", phase.Precommit, 0, 0, id, 1500)),
			CauseSignerLate, "no precommit for r0: at the decision its signer was still on the h0 precommit r0 signature, requested 600 ms before, took 1500 ms"},
		{"no precommit: a signature requested and never returned (a hung signer)",
			missedRun(0, requestAt(400, "v4", phase.Prevote, 1, 0), hostAt(6000, false)),
			CauseSignerNotAnswering, "no precommit for r0: at the decision its signer was still on the h1 prevote r0 signature, requested 500 ms before, never returned"},
		// Out less than a node waits (5 s) when the stream ended: it may
		// have been about to return.
		{"no precommit: a signature still out when the run ended is not a hung signer",
			missedRun(0, requestAt(400, "v4", phase.Prevote, 1, 0)),
			CauseSignerLate, "requested 500 ms before, still unanswered when the run ended, 3600 ms after it was requested"},
		{"an answered request is not a hung signer",
			missedRun(0, requestAt(300, "v4", phase.Prevote, 1, 0), signAt(301, "v4", phase.Prevote, 1, 0, id, 1)),
			CauseNodeBehind, "prevote r0 signed, but v4's node never asked for a precommit before the decision"},
		{"no precommit: the node was a height behind, catching up after a restart",
			missedRun(0, faultAt(10, "v4", action.NodeKill, eventlog.FaultStart), faultAt(150, "v4", action.NodeStart, eventlog.FaultStart),
				stepAt(5, "v4", 0, 0, "commit"), eventlog.Event{Time: at(200), Kind: eventlog.KindNewRound, Node: "v1", Height: 1, Proposer: "v1"}),
			CauseNodeBehind, "no precommit: v4's node had not reached height 1 (it was at height 0); its node ran again 750 ms before (after node-kill), catching up"},
		{"no precommit: the node a height behind because its signer had a backlog",
			missedRun(0, stepAt(5, "v4", 0, 0, "commit"), eventlog.Event{Time: at(200), Kind: eventlog.KindNewRound, Node: "v1", Height: 1, Proposer: "v1"},
				signAt(850, "v4", phase.Precommit, 0, 0, id, 600)),
			CauseSignerLate, "no precommit: v4's node had not reached height 1 (it was at height 0), its signer on the h0 precommit r0 signature (requested 50 ms into the round, took 600 ms) during the round"},
		{"network on a saturated host is the host's",
			missedRun(0, signAt(800, "v4", phase.Precommit, 1, 0, id, 1), hostAt(1000, true)),
			CauseHostOverload, "precommit r0 signed 100 ms before the decision (signature took 1 ms); no vote event shows v1 (proposer of 2) receiving it; the host was saturated (1 of 1 host seconds covering it"},
		{"a saturated second outside the round does not count",
			missedRun(0, signAt(800, "v4", phase.Precommit, 1, 0, id, 1), hostAt(3000, true), hostAt(1000, false)),
			CauseNetwork, "no vote event shows v1"},
		{"no evidence on a saturated host is the host's",
			missedRun(0, hostAt(1000, true)),
			CauseHostOverload, "no precommit for r0; the host was saturated"},
		{"a signer-late precommit stays the signer's on a saturated host",
			missedRun(0, signAt(1100, "v4", phase.Precommit, 1, 0, id, 400), hostAt(1000, true)),
			CauseSignerLate, "signed 200 ms after the decision"},
		{"a signer-side event alone is not the node's signature",
			missedRun(0, eventlog.Event{Time: at(800), Kind: eventlog.KindSign, Node: "v4", Validator: "v4", Side: eventlog.SideSigner, Phase: phase.Precommit, Height: 1, LatencyMS: 1, BlockID: id}),
			CauseUnknown, "no signature by v4"},
		{"unknown: a prevote in a later round only, not in progress",
			missedRun(1, signAt(300, "v4", phase.Prevote, 1, 1, id, 1), signAt(310, "v4", phase.Precommit, 1, 0, "", 1)),
			CauseUnknown, "no precommit signature for r1"},
		{"unknown: no events of v4 at all",
			missedRun(0),
			CauseUnknown, "no signature by v4 at height 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MissedPrecommits(tt.events)
			if len(got) != 1 {
				t.Fatalf("got %d missed precommits, want 1: %+v", len(got), got)
			}
			m := got[0]
			if m.Height != 1 || m.Validator != "v4" || m.Cause != tt.cause || !strings.Contains(m.Detail, tt.detail) {
				t.Errorf("got %+v, want cause %s with detail containing %q", m, tt.cause, tt.detail)
			}
			// summary.json counts the same cause, and keeps the same rows
			// for missed.csv.
			s := Summarize(tt.events)
			if !reflect.DeepEqual(s.Missed, got) {
				t.Errorf("Summary.Missed %+v, want %+v", s.Missed, got)
			}
			v := vByName(t, s, "v4")
			if v.MissedByCause.Get(tt.cause) != 1 || v.MissedPrecommits != 1 || v.MissedBlocks != 1 {
				t.Errorf("summary: missed %d blocks %d by cause %+v", v.MissedPrecommits, v.MissedBlocks, v.MissedByCause)
			}
		})
	}
}

func TestDecisionFallsBackToTheBlock(t *testing.T) {
	// No commit step at all: the block event (1000 ms) is the decision.
	evs := []eventlog.Event{runStart("v1", "v2"), signAt(1100, "v2", phase.Precommit, 1, 0, "B", 300),
		block(1, 1000, 0, nil, nil), block(2, 2000, 0, []string{"v2"}, nil), runEnd(3000, eventlog.StopHeights)}
	got := MissedPrecommits(evs)
	if len(got) != 1 || got[0].Cause != CauseSignerLate || !strings.Contains(got[0].Detail, "100 ms after") {
		t.Errorf("got %+v", got)
	}
}

func TestMissedByCauseSumsToMissed(t *testing.T) {
	for _, v := range Summarize(readFixture(t)).Validators {
		sum := 0
		for _, c := range MissedCauses {
			sum += v.MissedByCause.Get(c)
		}
		if sum != v.MissedPrecommits {
			t.Errorf("%s: causes %+v sum to %d, missed %d", v.Name, v.MissedByCause, sum, v.MissedPrecommits)
		}
	}
	var zero MissedByCause
	if zero.String() != "-" || (MissedByCause{SignerLate: 1, Network: 2}).String() != "signer-late 1, network 2" {
		t.Errorf("String: %q, %q", zero.String(), MissedByCause{SignerLate: 1, Network: 2}.String())
	}
	if zero.Get("no-such-cause") != 0 {
		t.Error("Get of an unknown cause")
	}
}

func TestMissedCSV(t *testing.T) {
	evs := missedRun(0, signAt(1100, "v4", phase.Precommit, 1, 0, "B", 400))
	var b strings.Builder
	if err := WriteMissedCSV(&b, Summarize(evs)); err != nil {
		t.Fatal(err)
	}
	want := "height,validator,cause,detail\n1,v4,signer-late,precommit r0 signed 200 ms after the decision (signature took 400 ms)\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestHeightsTheRunDidNotWaitForAreNotCounted: the run waits for the
// block after its target and stops; a block after that is only recorded
// because the run had not stopped yet, so the heights it judges count for
// nothing, missed or not.
func TestHeightsTheRunDidNotWaitForAreNotCounted(t *testing.T) {
	start := runStart("v1", "v2", "v3", "v4")
	start.Heights = 2
	evs := []eventlog.Event{start, block(1, 1000, 0, nil, nil), block(2, 2000, 0, []string{"v4"}, nil),
		block(3, 3000, 0, []string{"v4"}, []string{"v3"}), block(4, 3050, 0, []string{"v4"}, nil), runEnd(3100, eventlog.StopHeights)}
	s := Summarize(evs)
	v4, v3 := vByName(t, s, "v4"), vByName(t, s, "v3")
	if v4.MissedPrecommits != 2 || v4.PrecommitsCounted != 2 || v4.ConsecutiveMissedMax != 2 || v3.NilPrecommits != 1 {
		t.Errorf("v4 missed %d of %d (longest run %d), v3 nil %d; want 2 of 2 (heights 1 and 2), run 2, nil 1",
			v4.MissedPrecommits, v4.PrecommitsCounted, v4.ConsecutiveMissedMax, v3.NilPrecommits)
	}
	if len(s.Missed) != 2 || s.Missed[1].Height != 2 {
		t.Errorf("missed.csv rows %+v, want heights 1 and 2", s.Missed)
	}
	var b strings.Builder
	if err := WriteHeightsCSV(&b, evs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\n3,0,,,1000,,,,0,\n") {
		t.Errorf("heights.csv judges height 3:\n%s", b.String())
	}
}
