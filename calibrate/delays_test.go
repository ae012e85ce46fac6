package calibrate

import (
	"slices"
	"testing"
	"time"

	"github.com/valnet/valnet/results/eventlog"
)

// TestMeasure: each delay from a hand-made height of two nodes.
func TestMeasure(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	step := func(ms int, node, s string, h int64) eventlog.Event {
		return eventlog.Event{Time: at(ms), Kind: eventlog.KindStep, Node: node, Height: h, Step: s}
	}
	events := []eventlog.Event{
		{Kind: eventlog.KindRunStart, Validators: []eventlog.ValidatorInfo{{Name: "a", Signer: "local"}, {Name: "b", Signer: "simulated(model:yubihsm2)"}}},
		{Time: at(0), Kind: eventlog.KindNewRound, Node: "a", Height: 2, Proposer: "a"},
		{Time: at(0), Kind: eventlog.KindNewRound, Node: "b", Height: 2, Proposer: "a"},
		{Time: at(1), Kind: eventlog.KindSignRequest, Node: "a", Validator: "a", Height: 2, Phase: "proposal"},
		{Time: at(2), Kind: eventlog.KindSign, Node: "a", Validator: "a", Height: 2, Phase: "proposal", LatencyMS: 1},
		{Time: at(40), Kind: eventlog.KindProposal, Node: "b", Height: 2},
		step(41, "b", "prevote", 2),
		{Time: at(60), Kind: eventlog.KindSign, Node: "b", Validator: "b", Height: 2, Phase: "prevote", LatencyMS: 19},
		step(90, "b", "precommit", 2),
		step(150, "b", "commit", 2),
		step(153, "b", "new_height", 3),
	}
	d := Measure(events)
	for _, c := range []struct {
		name string
		got  []float64
		want []float64
	}{
		{"proposal hop (signed at 2, complete at b at 40)", d.ProposalHop, []float64{38}},
		{"prevote to precommit", d.PrevoteToPrecommit, []float64{49}},
		{"precommit to commit", d.PrecommitToCommit, []float64{60}},
		{"round to commit", d.RoundToCommit, []float64{150}},
		{"finalize", d.Finalize, []float64{3}},
		{"propose", d.Propose, []float64{1}},
		{"local signatures only", d.LocalSign, []float64{1}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
}
