// Package calibrate fits the sim's processing parameters to real runs on
// this host (valnet calibrate): it runs a small grid of real in-process
// networks, measures from their events what can be measured directly
// (a local signature, building a proposal, applying a block), then fits
// the rest (the gossip routines' effective sleep and a vote's processing)
// by running the sim on the same scenarios and matching the phase delays
// and block intervals the real runs show. It drives runner.Run for both,
// as valnet run does (cmd → calibrate → runner).
package calibrate

import (
	"slices"
	"time"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/results/eventlog"
)

// Delays are a run's per-phase delays in ms, from its events: the
// statistics calibrate matches between real runs and the sim.
type Delays struct {
	// ProposalHop: from the proposer's signed proposal to its completion
	// at each other node.
	ProposalHop []float64
	// PrevoteToPrecommit: a node's prevote step to its precommit step
	// (waiting for +2/3 prevotes).
	PrevoteToPrecommit []float64
	// PrecommitToCommit: a node's precommit step to its commit step.
	PrecommitToCommit []float64
	// RoundToCommit: a node's round 0 start to its commit step.
	RoundToCommit []float64
	// Finalize: a node's commit step to its next new_height step
	// (finalizeCommit: execute, commit, save).
	Finalize []float64
	// Propose: the proposer's new_round to its proposal sign request
	// (building the block).
	Propose []float64
	// LocalSign: successful signatures of local signers, node side.
	LocalSign []float64
}

type nodeStep struct {
	node   string
	height int64
	round  int32
	step   string
}

// Measure takes the delays of a run's events (stream order).
func Measure(events []eventlog.Event) Delays {
	var d Delays
	at := map[nodeStep]time.Time{}
	first := func(k nodeStep, t time.Time) {
		if _, ok := at[k]; !ok {
			at[k] = t
		}
	}
	type hr struct {
		h int64
		r int32
	}
	proposalSigned := map[hr]eventlog.Event{}
	local := map[string]bool{}
	for _, e := range events {
		switch e.Kind {
		case eventlog.KindRunStart:
			for _, v := range e.Validators {
				local[v.Name] = v.Signer == "local"
			}
		case eventlog.KindStep:
			first(nodeStep{e.Node, e.Height, e.Round, e.Step}, e.Time)
		case eventlog.KindNewRound:
			first(nodeStep{e.Node, e.Height, e.Round, "new_round"}, e.Time)
		case eventlog.KindProposal:
			first(nodeStep{e.Node, e.Height, e.Round, "proposal"}, e.Time)
		case eventlog.KindSignRequest:
			if e.Phase == phase.Proposal {
				first(nodeStep{e.Node, e.Height, e.Round, "proposal_request"}, e.Time)
			}
		case eventlog.KindSign:
			if e.Side != "" || e.Error != "" {
				continue
			}
			if e.Phase == phase.Proposal {
				proposalSigned[hr{e.Height, e.Round}] = e
			}
			if local[e.Validator] {
				d.LocalSign = append(d.LocalSign, e.LatencyMS)
			}
		}
	}
	ms := func(a, b time.Time) float64 { return float64(b.Sub(a).Microseconds()) / 1000 }
	for k, t := range at {
		switch k.step {
		case "proposal":
			if s, ok := proposalSigned[hr{k.height, k.round}]; ok && s.Validator != k.node {
				d.ProposalHop = append(d.ProposalHop, ms(s.Time, t))
			}
		case "prevote":
			if t2, ok := at[nodeStep{k.node, k.height, k.round, "precommit"}]; ok {
				d.PrevoteToPrecommit = append(d.PrevoteToPrecommit, ms(t, t2))
			}
		case "precommit":
			if t2, ok := at[nodeStep{k.node, k.height, k.round, "commit"}]; ok {
				d.PrecommitToCommit = append(d.PrecommitToCommit, ms(t, t2))
			}
		case "new_round":
			if t2, ok := at[nodeStep{k.node, k.height, k.round, "commit"}]; ok && k.round == 0 {
				d.RoundToCommit = append(d.RoundToCommit, ms(t, t2))
			}
			if t2, ok := at[nodeStep{k.node, k.height, k.round, "proposal_request"}]; ok {
				d.Propose = append(d.Propose, ms(t, t2))
			}
		case "commit":
			if t2, ok := at[nodeStep{k.node, k.height + 1, 0, "new_height"}]; ok {
				d.Finalize = append(d.Finalize, ms(t, t2))
			}
		}
	}
	for _, s := range []*[]float64{&d.ProposalHop, &d.PrevoteToPrecommit, &d.PrecommitToCommit, &d.RoundToCommit, &d.Finalize, &d.Propose, &d.LocalSign} {
		slices.Sort(*s)
	}
	return d
}

func sortFloats(s []float64) { slices.Sort(s) }
