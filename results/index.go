package results

import "time"

// hr keys a (height, round).
type hr struct {
	height int64
	round  int32
}

// nodeHR keys what one node observed at a (height, round).
type nodeHR struct {
	node string
	hr
}

// valHeight keys one validator's signatures at one height.
type valHeight struct {
	validator string
	height    int64
}

// voteKey is one phase of one round: the unit that reaches +2/3.
type voteKey struct {
	hr
	precommit bool // else prevote
}

// index holds, once per Summarize, the per-node observations that the
// consensus analysis (missed-precommit causes, late votes, round-change
// causes) looks up. Every "first"/"earliest" is by event time; ties keep
// the first in stream order.
type index struct {
	power      map[string]int64 // run_start voting power by validator name
	totalPower int64
	names      []string // run_start's validators, in order

	signs       map[valHeight][]*Event // node-side sign events, stream order
	signsOf     map[string][]*Event    // the same by validator, every height
	requests    map[string][]*Event    // sign_request events by validator, stream order
	spans       map[string][]sigSpan   // see spansOf; built on first use
	nodeAt      map[string][]nodeAt    // each node's new_round and step events: where it was when
	hosts       []hostMark             // host samples, stream order
	faults      []*Event               // fault events, stream order
	nodeUps     []time.Time            // node_up events, stream order
	commitSteps map[int64][]*Event     // step "commit" events by height
	prevoteStep map[nodeHR]time.Time   // earliest step "prevote" per node
	proposalAt  map[nodeHR]time.Time   // earliest complete proposal per node
	roundStart  map[hr]time.Time       // earliest new_round of a round
	proposer    map[hr]string          // proposer named by the first new_round
	roundNodes  map[hr][]string        // nodes that entered a round (new_round or prevote step), first-seen order
	votes       []*Event               // vote events, stream order
	roundVotes  map[hr][]*Event        // the same by (height, round); see votesAt
	downs       NodeDowns              // when each validator's node was down
	// noVotes: the stream holds no vote events by design (a model run with
	// vote_events false), so who received which vote cannot be told; a
	// stream of real nodes without them is judged as before.
	noVotes bool
}

func newIndex(events []Event, start *Event) *index {
	x := &index{
		power: map[string]int64{}, signs: map[valHeight][]*Event{}, commitSteps: map[int64][]*Event{},
		signsOf: map[string][]*Event{}, requests: map[string][]*Event{}, nodeAt: map[string][]nodeAt{},
		prevoteStep: map[nodeHR]time.Time{}, proposalAt: map[nodeHR]time.Time{},
		roundStart: map[hr]time.Time{}, proposer: map[hr]string{}, roundNodes: map[hr][]string{},
		noVotes: noVoteEvents(start),
	}
	if start != nil {
		for _, v := range start.Validators {
			if _, dup := x.power[v.Name]; !dup {
				x.power[v.Name] = v.Power
				x.totalPower += v.Power
				x.names = append(x.names, v.Name)
			}
		}
	}
	seen := map[nodeHR]bool{}
	inRound := func(ev *Event) {
		k := nodeHR{ev.Node, hr{ev.Height, ev.Round}}
		if ev.Node != "" && !seen[k] {
			seen[k] = true
			x.roundNodes[k.hr] = append(x.roundNodes[k.hr], ev.Node)
		}
	}
	earliest := func(m map[nodeHR]time.Time, k nodeHR, t time.Time) {
		if old, ok := m[k]; !ok || t.Before(old) {
			m[k] = t
		}
	}
	for i := range events {
		ev := &events[i]
		if (ev.Kind == KindStep || ev.Kind == KindNewRound) && ev.Node != "" {
			x.nodeAt[ev.Node] = append(x.nodeAt[ev.Node], nodeAt{t: ev.Time, height: ev.Height, round: ev.Round})
		}
		switch ev.Kind {
		case KindSign:
			if ev.Side != SideSigner && ev.Validator != "" {
				k := valHeight{ev.Validator, ev.Height}
				x.signs[k] = append(x.signs[k], ev)
				x.signsOf[ev.Validator] = append(x.signsOf[ev.Validator], ev)
			}
		case KindSignRequest:
			if ev.Validator != "" {
				x.requests[ev.Validator] = append(x.requests[ev.Validator], ev)
			}
		case KindHost:
			if ev.Host != nil {
				x.hosts = append(x.hosts, hostMark{t: ev.Time, sample: *ev.Host})
			}
		case KindStep:
			switch ev.Step {
			case "commit":
				x.commitSteps[ev.Height] = append(x.commitSteps[ev.Height], ev)
			case "prevote":
				inRound(ev)
				earliest(x.prevoteStep, nodeHR{ev.Node, hr{ev.Height, ev.Round}}, ev.Time)
			}
		case KindNewRound:
			inRound(ev)
			k := hr{ev.Height, ev.Round}
			if t, ok := x.roundStart[k]; !ok || ev.Time.Before(t) {
				x.roundStart[k] = ev.Time
			}
			if _, ok := x.proposer[k]; !ok && ev.Proposer != "" {
				x.proposer[k] = ev.Proposer
			}
		case KindProposal:
			earliest(x.proposalAt, nodeHR{ev.Node, hr{ev.Height, ev.Round}}, ev.Time)
		case KindVote:
			x.votes = append(x.votes, ev)
		case KindFault:
			x.downs.Observe(ev)
			x.faults = append(x.faults, ev)
		case KindNodeUp:
			x.nodeUps = append(x.nodeUps, ev.Time)
		}
	}
	return x
}

// votesAt returns the vote events of one round, in stream order. The
// per-round index is built on first use: a run without round changes or
// lost votes never needs it.
func (x *index) votesAt(k hr) []*Event {
	if x.roundVotes == nil {
		x.roundVotes = map[hr][]*Event{}
		for _, ev := range x.votes {
			k := hr{ev.Height, ev.Round}
			x.roundVotes[k] = append(x.roundVotes[k], ev)
		}
	}
	return x.roundVotes[k]
}

// firstReceipt is when node first received voter's vote of phase at k.
func (x *index) firstReceipt(node, voter, phase string, k hr) (t time.Time, ok bool) {
	for _, ev := range x.votesAt(k) {
		if ev.Node == node && ev.Validator == voter && ev.Phase == phase && (!ok || ev.Time.Before(t)) {
			t, ok = ev.Time, true
		}
	}
	return t, ok
}

// quorum reports whether power is more than 2/3 of the total, the
// threshold CometBFT acts on.
func (x *index) quorum(power int64) bool { return x.totalPower > 0 && power*3 > x.totalPower*2 }
