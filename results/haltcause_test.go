package results

import (
	"fmt"
	"github.com/valnet/valnet/internal/action"
	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/results/eventlog"
	"html"
	"strings"
	"testing"
)

// stuckRun: four validators, blocks 1 and 2 at 1 s and 2 s, then height 3
// as extra describes (times from 2 s on), and the run ends at 60 s unless
// extra holds block 3. Halt threshold: an explicit 10 s.
func stuckRun(extra ...eventlog.Event) []eventlog.Event {
	start := runStart("v1", "v2", "v3", "v4")
	start.HaltAfterMS, start.HaltAfterExplicit = 10000, true
	evs := []eventlog.Event{start}
	for i, n := range []string{"v1", "v2", "v3", "v4"} {
		evs = append(evs, eventlog.Event{Time: at(10 + float64(i)), Kind: eventlog.KindNodeUp, Node: n})
	}
	evs = append(evs, block(1, 1000, 0, nil, nil), block(2, 2000, 0, nil, nil))
	evs = append(evs, extra...)
	end := runEnd(60000, eventlog.StopMaxDuration)
	for _, ev := range extra {
		if ev.Kind == eventlog.KindBlock {
			end = runEnd(ev.Time.Sub(t0).Seconds()*1000+500, eventlog.StopHeights)
		}
	}
	return append(evs, end)
}

// enterRound: every node in nodes enters (h, r) at ms, v1..v4 proposing in
// turn.
func enterRound(ms float64, h int64, r int32, nodes ...string) []eventlog.Event {
	p := fmt.Sprintf("v%d", (int(h)-1+int(r))%4+1)
	var evs []eventlog.Event
	for _, n := range nodes {
		evs = append(evs, eventlog.Event{Time: at(ms), Kind: eventlog.KindNewRound, Node: n, Height: h, Round: r, Proposer: p})
	}
	return evs
}

// prevotes: each voter signs its prevote at (h, r) at ms (nil), and the
// nodes in hears[voter] receive it.
func prevotes(ms float64, h int64, r int32, hears map[string][]string, voters ...string) []eventlog.Event {
	var evs []eventlog.Event
	for _, v := range voters {
		evs = append(evs, signAt(ms, v, phase.Prevote, h, r, "", 1))
		for _, n := range append([]string{v}, hears[v]...) {
			evs = append(evs, voteAt(ms+1, n, v, phase.Prevote, h, r, ""))
		}
	}
	return evs
}

func cat(parts ...[]eventlog.Event) []eventlog.Event {
	var out []eventlog.Event
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var all4 = []string{"v1", "v2", "v3", "v4"}

func TestHaltCauses(t *testing.T) {
	everyone := map[string][]string{"v1": all4, "v2": all4, "v3": all4, "v4": all4}
	failPrevote := func(v string) eventlog.Event {
		return withError(signAt(2600, v, phase.Prevote, 3, 0, "", 2), "signer: injected fault (signer-error)")
	}
	lostPrevotes := cat(enterRound(2100, 3, 0, all4...), []eventlog.Event{signAt(2200, "v3", phase.Proposal, 3, 0, "B3", 1),
		failPrevote("v1"), failPrevote("v2"), failPrevote("v3")}, prevotes(2600, 3, 0, everyone, "v4"))
	tests := []struct {
		name       string
		events     []eventlog.Event
		fromHeight int64
		resumed    bool
		round      int32
		cause      string
		detail     string // exact, or a prefix ending in "…"
	}{
		{"three of four signers fail their prevote: the round waits for good",
			stuckRun(lostPrevotes...), 2, false, 0, HaltSignerFailed,
			"no +2/3 prevotes at h3 r0: v1, v2, v3 failed to sign their prevote (signer-failed); CometBFT does not retry a failed signature, so the round waits until a node restarts"},
		{"…until two nodes restart",
			stuckRun(append(lostPrevotes, faultAt(40000, "v1", action.NodeRestart, eventlog.FaultStart), faultAt(40500, "v2", action.NodeRestart, eventlog.FaultStart),
				block(3, 45000, 0, nil, nil))...), 2, true, 0, HaltSignerFailed,
			"no +2/3 prevotes at h3 r0: v1, v2, v3 failed to sign their prevote (signer-failed); CometBFT does not retry a failed signature, so the round waits until a node restarts; then node-restart v1 (+38s), node-restart v2 (+38.5s); it resumed at +43s"},
		{"half the validators down, until one is started again",
			stuckRun(cat([]eventlog.Event{faultAt(1500, "v3", action.NodeKill, eventlog.FaultStart), faultAt(1600, "v4", action.NodeStop, eventlog.FaultStart)},
				enterRound(2100, 3, 0, "v1", "v2"), prevotes(2600, 3, 0, map[string][]string{"v1": {"v2"}, "v2": {"v1"}}, "v1", "v2"),
				[]eventlog.Event{faultAt(30000, "v3", action.NodeKill, eventlog.FaultEnd), block(3, 31000, 0, nil, nil)})...),
			2, true, 0, HaltValidatorsDown,
			"validators down at h3: v3 (node-kill), v4 (node-stop); the others hold 20 of 40 voting power, not more than 2/3; then the end of node-kill v3 (+28s); it resumed at +29s"},
		{"half the validators down",
			stuckRun(cat([]eventlog.Event{faultAt(1500, "v3", action.NodeKill, eventlog.FaultStart), faultAt(1600, "v4", action.NodeStop, eventlog.FaultStart)},
				enterRound(2100, 3, 0, "v1", "v2"), prevotes(2600, 3, 0, map[string][]string{"v1": {"v2"}, "v2": {"v1"}}, "v1", "v2"))...),
			2, false, 0, HaltValidatorsDown,
			"validators down at h3: v3 (node-kill), v4 (node-stop); the others hold 20 of 40 voting power, not more than 2/3"},
		{"a 2/2 partition",
			stuckRun(cat([]eventlog.Event{{Time: at(1500), Kind: eventlog.KindFault, Action: action.Partition, State: eventlog.FaultStart, Detail: "partition [v1 v2] | [v3 v4]"}},
				enterRound(2100, 3, 0, all4...),
				prevotes(2600, 3, 0, map[string][]string{"v1": {"v2"}, "v2": {"v1"}, "v3": {"v4"}, "v4": {"v3"}}, all4...),
				[]eventlog.Event{{Time: at(20000), Kind: eventlog.KindFault, Action: action.Partition, State: eventlog.FaultEnd, Detail: "partition healed"}},
				[]eventlog.Event{block(3, 21000, 0, nil, nil)})...),
			2, true, 0, HaltPartition,
			"partition [v1 v2] | [v3 v4]: no side holds +2/3 of the voting power (the most prevote power any node received at h3 r0 is 20 of 40: v1, v2); then the end of partition (+18s); it resumed at +19s"},
		{"a partition that was healed is not the cause",
			stuckRun(cat([]eventlog.Event{{Time: at(1500), Kind: eventlog.KindFault, Action: action.Partition, State: eventlog.FaultStart, Detail: "partition [v1 v2] | [v3 v4]"},
				{Time: at(1800), Kind: eventlog.KindFault, Action: action.Heal, State: eventlog.FaultStart}},
				enterRound(2100, 3, 0, all4...),
				prevotes(2600, 3, 0, map[string][]string{"v1": {"v2"}, "v2": {"v1"}, "v3": {"v4"}, "v4": {"v3"}}, all4...))...),
			2, false, 0, HaltNetwork, "no node received +2/3 prevotes at h3 r0: 40 of 40 voting power cast one, but the most any node received is 20 (v1, v2)…"},
		{"three signers never answer their prevote",
			stuckRun(cat(enterRound(2100, 3, 0, all4...), []eventlog.Event{signAt(2200, "v3", phase.Proposal, 3, 0, "B3", 1),
				requestAt(2500, "v1", phase.Prevote, 3, 0), requestAt(2500, "v2", phase.Prevote, 3, 0), requestAt(2500, "v3", phase.Prevote, 3, 0)},
				prevotes(2600, 3, 0, everyone, "v4"))...),
			2, false, 0, HaltSignerNotAnswering,
			"no +2/3 prevotes at h3 r0: v1, v2, v3 cast no prevote: v1's signer was still on the h3 prevote r0 signature, requested 9500 ms before, never returned; v2's…"},
		{"a chain that never starts: no peers",
			func() []eventlog.Event {
				start := runStart("v1", "v2", "v3", "v4")
				start.HaltAfterMS = 12500
				evs := []eventlog.Event{start}
				for i, n := range all4 {
					evs = append(evs, eventlog.Event{Time: at(100 * float64(i+1)), Kind: eventlog.KindNodeUp, Node: n})
				}
				evs = append(evs, enterRound(500, 1, 0, all4...)...)
				evs = append(evs, signAt(510, "v1", phase.Proposal, 1, 0, "B1", 1), eventlog.Event{Time: at(511), Kind: eventlog.KindProposal, Node: "v1", Height: 1, BlockID: "B1"})
				evs = append(evs, prevotes(3500, 1, 0, nil, all4...)...)
				return append(evs, runEnd(120000, eventlog.StopMaxDuration))
			}(),
			0, false, 0, HaltNetwork,
			"no node received +2/3 prevotes at h1 r0: 40 of 40 voting power cast one, but the most any node received is 10 (v1); no node received a vote from another node: no peers connected; no proposal reached a node other than its proposer's"},
		{"rounds that keep failing for want of a proposal",
			stuckRun(cat(enterRound(2100, 3, 0, all4...), prevotes(5100, 3, 0, everyone, all4...),
				[]eventlog.Event{voteAt(6100, "v1", "v1", phase.Precommit, 3, 0, ""), voteAt(6100, "v1", "v2", phase.Precommit, 3, 0, ""), voteAt(6100, "v1", "v3", phase.Precommit, 3, 0, "")},
				enterRound(7100, 3, 1, all4...), prevotes(10100, 3, 1, everyone, all4...))...),
			2, false, 1, HaltNoProposal, "h3 reached round 1 without a decision; round 0 failed (proposal-missing): v3 signed no proposal"},
		{"silent validators on a saturated host",
			stuckRun(cat(enterRound(2100, 3, 0, all4...), prevotes(2600, 3, 0, everyone, "v1"), []eventlog.Event{hostAt(5000, true)})...),
			2, false, 0, CauseHostOverload, "no +2/3 prevotes at h3 r0: v2, v3, v4 cast no prevote; the host was saturated…"},
		{"silent validators, no evidence",
			stuckRun(cat(enterRound(2100, 3, 0, all4...), prevotes(2600, 3, 0, everyone, "v1"))...),
			2, false, 0, HaltUnknown, "no +2/3 prevotes at h3 r0: v2, v3, v4 cast no prevote"},
		{"nodes up, none in consensus: block sync waits for a peer", stuckRun(), 2, false, 0, HaltNetwork,
			"no node entered consensus: CometBFT starts it after block sync, which waits for a connected peer; no peers connected"},
		{"no events at all",
			func() []eventlog.Event {
				start := runStart("v1", "v2", "v3", "v4")
				start.HaltAfterMS, start.HaltAfterExplicit = 10000, true
				return []eventlog.Event{start, block(1, 1000, 0, nil, nil), block(2, 2000, 0, nil, nil), runEnd(60000, eventlog.StopMaxDuration)}
			}(), 2, false, 0, HaltUnknown, "no consensus event from any node"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Summarize(tt.events)
			if len(s.Halts) != 1 {
				t.Fatalf("halts %+v, want one", s.Halts)
			}
			h := s.Halts[0]
			if h.FromHeight != tt.fromHeight || h.Height != tt.fromHeight+1 || h.Round != tt.round || h.Resumed != tt.resumed {
				t.Errorf("halt from %d at h%d r%d resumed %v, want from %d r%d resumed %v", h.FromHeight, h.Height, h.Round, h.Resumed, tt.fromHeight, tt.round, tt.resumed)
			}
			want, prefix := strings.CutSuffix(tt.detail, "…")
			if h.Cause != tt.cause || (!prefix && h.Detail != want) || (prefix && !strings.HasPrefix(h.Detail, want)) {
				t.Errorf("cause %s: %s\nwant  %s: %s", h.Cause, h.Detail, tt.cause, tt.detail)
			}
			// Every report shows the cause with the halt.
			for name, write := range map[string]func(*strings.Builder) error{
				"table":       func(b *strings.Builder) error { return WriteTable(b, s) },
				"summary.md":  func(b *strings.Builder) error { return WriteMarkdown(b, s) },
				"report.html": func(b *strings.Builder) error { return WriteHTMLReport(b, s, tt.events) },
			} {
				var b strings.Builder
				if err := write(&b); err != nil {
					t.Fatal(err)
				}
				out, want := b.String(), "cause "+h.Cause+": "+h.Detail
				switch name {
				case "report.html":
					out = html.UnescapeString(out)
				case "summary.md":
					want = mdCell(want)
				}
				if !strings.Contains(out, want) {
					t.Errorf("%s does not show the cause:\n%s", name, out)
				}
			}
		})
	}
}

func TestEveryHaltCauseHasAMetric(t *testing.T) {
	s := &Summary{Halts: []Halt{{Cause: HaltPartition}, {Cause: HaltPartition}, {Cause: HaltSignerFailed}}}
	for _, c := range HaltCauses {
		want := map[string]float64{HaltPartition: 2, HaltSignerFailed: 1}[c]
		if got, err := s.Metric(HaltMetric(c), "", ""); err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", HaltMetric(c), got, err, want)
		}
	}
	if got, _ := s.Metric("halts", "", ""); got != 3 {
		t.Errorf("halts = %v", got)
	}
}
