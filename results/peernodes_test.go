package results

import (
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/results/eventlog"
)

// TestPeerNodes: a non-validator node's summary counts the heights it
// committed and how late each block reached it, from the block event
// (whoever's commit came first) to its own commit step, also when its
// commit is in the stream before the block event; it never appears among
// the validators.
func TestPeerNodes(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	evs := []eventlog.Event{
		{Time: at(0), Kind: eventlog.KindRunStart, Scenario: "nodes", Validators: []eventlog.ValidatorInfo{{Name: "v1", Power: 1}},
			Nodes: []eventlog.PeerNodeInfo{{Name: "v1-sentry-1", Role: "sentry", SentryOf: "v1"}, {Name: "full", Role: "full"}}},
		{Time: at(1000), Kind: eventlog.KindBlock, Node: "v1", Height: 1},
		{Time: at(1010), Kind: eventlog.KindStep, Node: "v1-sentry-1", Height: 1, Step: "commit"},
		{Time: at(1040), Kind: eventlog.KindStep, Node: "full", Height: 1, Step: "commit"},
		{Time: at(1040), Kind: eventlog.KindStep, Node: "full", Height: 1, Step: "commit"}, // a second commit step counts once
		// the sentry's commit of 2 is recorded before the block event
		{Time: at(1990), Kind: eventlog.KindStep, Node: "v1-sentry-1", Height: 2, Step: "commit"},
		{Time: at(2000), Kind: eventlog.KindBlock, Node: "v1", Height: 2},
		{Time: at(2100), Kind: eventlog.KindStep, Node: "v1-sentry-1", Height: 3, Step: "commit"}, // no block 3 seen
		{Time: at(3000), Kind: eventlog.KindRunEnd, StopReason: eventlog.StopHeights},
	}
	s := Summarize(evs)
	if len(s.Nodes) != 2 {
		t.Fatalf("nodes: %+v", s.Nodes)
	}
	sentry, full := s.Nodes[0], s.Nodes[1]
	if sentry.Name != "v1-sentry-1" || peerRole(sentry) != "sentry of v1" || sentry.HeightsCommitted != 3 || sentry.LastHeight != 3 {
		t.Errorf("sentry: %+v", sentry)
	}
	if st := sentry.CommitLagMS; st.Count != 2 || st.Max != 10 {
		t.Errorf("sentry lag (10 ms, and 0 for the commit before its block; none for height 3): %+v", st)
	}
	if full.HeightsCommitted != 1 || full.CommitLagMS.Count != 1 || full.CommitLagMS.Max != 40 || peerRole(full) != "full" {
		t.Errorf("full: %+v", full)
	}
	for _, v := range s.Validators {
		if v.Name != "v1" {
			t.Errorf("a non-validator node among the validators: %s", v.Name)
		}
	}
	var b strings.Builder
	if err := WriteTable(&b, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "v1-sentry-1") || !strings.Contains(b.String(), "sentry of v1") {
		t.Errorf("the table has no nodes section:\n%s", b.String())
	}
}

// TestPeerNodesInEveryReport: the nodes table is in the text table,
// summary.md and report.html alike, and in none without nodes.
func TestPeerNodesInEveryReport(t *testing.T) {
	with := &Summary{Scenario: "n", Nodes: []PeerNodeSummary{{Name: "v1-sentry-1", Role: "sentry", SentryOf: "v1", HeightsCommitted: 4, LastHeight: 4,
		CommitLagMS: LatencyStats{Count: 4, P50: 3, P95: 9, Max: 9}}}}
	without := &Summary{Scenario: "n"}
	render := map[string]func(*Summary) string{
		"table":    func(s *Summary) string { var b strings.Builder; _ = WriteTable(&b, s); return b.String() },
		"markdown": func(s *Summary) string { var b strings.Builder; _ = WriteMarkdown(&b, s); return b.String() },
		"html":     func(s *Summary) string { var b strings.Builder; _ = WriteHTMLReport(&b, s, nil); return b.String() },
	}
	for name, r := range render {
		got := r(with)
		for _, want := range []string{"Nodes that are not validators", "v1-sentry-1", "sentry of v1", "4 (to 4)"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: no %q in\n%s", name, want, got)
			}
		}
		if strings.Contains(r(without), "Nodes that are not validators") {
			t.Errorf("%s: a nodes section without nodes", name)
		}
	}
}
