package sim

import (
	"testing"
	"time"

	"github.com/valnet/valnet/results/eventlog"
)

// peerNodesYAML: four public validators, one behind two sentries, two
// full nodes and a seed, every link 50 ms one way, nothing else costing
// time (exactCalibration).
const peerNodesYAML = `name: peer-nodes
run: {backend: sim, heights: 12, max_duration: 5m, sim: {calibration: CALIBRATION}}
network: {latency: 50ms}
validators:
  - {name: v, count: 4}
  - {name: guarded, sentries: 2}
nodes:
  - {name: full, count: 2}
  - {name: seed, role: seed}
`

const peerLink = 50 * time.Millisecond

// TestSentriedValidatorOnlyThroughSentries: a validator behind sentries
// dials them alone (Plan.Layout), so every vote between it and another
// validator crosses two links, through a sentry: 2 x 50 ms at the least.
// Between public validators a vote goes over one direct link (mesh), 50
// ms. Both are seen, so neither check passes on no data.
func TestSentriedValidatorOnlyThroughSentries(t *testing.T) {
	events, reason := simRun(t, peerNodesYAML, exactCalibration)
	if reason != eventlog.StopHeights {
		t.Fatalf("stopped: %s", reason)
	}
	var viaSentry, direct int
	voteTravels(events, func(e eventlog.Event, took time.Duration) {
		switch {
		case e.Node == "guarded" || e.Validator == "guarded":
			if e.Node == "guarded-sentry-1" || e.Node == "guarded-sentry-2" {
				return // the validator's own link to its sentry
			}
			if contains([]string{"v-1", "v-2", "v-3", "v-4", "guarded"}, e.Node) {
				viaSentry++
				if took < 2*peerLink {
					t.Errorf("%s's %s at h%d r%d reached %s in %v: under two links (%v), so not through a sentry", e.Validator, e.Phase, e.Height, e.Round, e.Node, took, 2*peerLink)
				}
			}
		case contains([]string{"v-1", "v-2", "v-3", "v-4"}, e.Node):
			direct++
			if took != peerLink {
				t.Errorf("%s's %s at h%d r%d reached %s in %v, want the direct link's %v", e.Validator, e.Phase, e.Height, e.Round, e.Node, took, peerLink)
			}
		}
	})
	if viaSentry == 0 || direct == 0 {
		t.Fatalf("votes seen: %d through sentries, %d direct; want some of each", viaSentry, direct)
	}
}

// TestPeerNodesSignNothingAndFollow: nodes that are not validators sign
// and propose nothing (signAddVote returns for a node outside the
// validator set), full nodes and sentries commit every height, and a seed,
// which hangs up on every peer, commits none.
func TestPeerNodesSignNothingAndFollow(t *testing.T) {
	events, reason := simRun(t, peerNodesYAML, exactCalibration)
	if reason != eventlog.StopHeights {
		t.Fatalf("stopped: %s", reason)
	}
	peers := []string{"full-1", "full-2", "seed", "guarded-sentry-1", "guarded-sentry-2"}
	committed := map[string]map[int64]bool{}
	for _, e := range events {
		switch {
		case e.Kind == eventlog.KindSignRequest && contains(peers, e.Node):
			t.Errorf("%s asked to sign %s at h%d: it is not a validator", e.Node, e.Phase, e.Height)
		case e.Kind == eventlog.KindBlock && contains(peers, e.Proposer):
			t.Errorf("block %d proposed by %s, not a validator", e.Height, e.Proposer)
		case e.Kind == eventlog.KindStep && e.Step == "commit":
			if committed[e.Node] == nil {
				committed[e.Node] = map[int64]bool{}
			}
			committed[e.Node][e.Height] = true
		}
	}
	for _, name := range []string{"full-1", "full-2", "guarded-sentry-1", "guarded-sentry-2", "guarded", "v-1"} {
		if got := len(committed[name]); got < 12 {
			t.Errorf("%s committed %d heights, want 12", name, got)
		}
	}
	if got := len(committed["seed"]); got != 0 {
		t.Errorf("the seed committed %d heights; it carries no consensus traffic", got)
	}
}

// voteTravels calls f for every receipt of a vote at a node other than
// its validator's, with how long the vote took from its own node's
// receipt (its signing) to that node.
func voteTravels(events []eventlog.Event, f func(e eventlog.Event, took time.Duration)) {
	type voteKey struct {
		validator string
		height    int64
		round     int32
		phase     string
	}
	own := map[voteKey]time.Time{} // a vote at its own validator's node
	for _, e := range events {
		if e.Kind == eventlog.KindVote && e.Node == e.Validator {
			own[voteKey{e.Validator, e.Height, e.Round, e.Phase}] = e.Time
		}
	}
	for _, e := range events {
		if e.Kind != eventlog.KindVote || e.Node == e.Validator {
			continue
		}
		if signed, ok := own[voteKey{e.Validator, e.Height, e.Round, e.Phase}]; ok {
			f(e, e.Time.Sub(signed))
		}
	}
}
