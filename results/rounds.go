package results

import (
	"fmt"

	"github.com/valnet/valnet/internal/phase"
)

// Causes of a round change, i.e. of a round that ended without a decision
// (and CauseHostOverload, before proposal-missing's "the proposal did not
// get through", no-polka and no-precommit-quorum).
const (
	RoundProposerDown       = "proposer-down"
	RoundProposerBehind     = "proposer-behind"
	RoundProposerSignerSlow = "proposer-signer-slow"
	RoundProposalMissing    = "proposal-missing"
	RoundNoPolka            = "no-polka"
	RoundNoPrecommitQuorum  = "no-precommit-quorum"
	RoundUnknown            = "unknown" // no event tells anything about the round
)

// RoundChange is one round of a committed height that ended without a
// decision (round < the height's commit round), and why.
type RoundChange struct {
	Height   int64  `json:"height"`
	Round    int32  `json:"round"`
	Cause    string `json:"cause"`
	Proposer string `json:"proposer,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

// lateVotes counts, per voter, the (height, round, phase) whose vote was
// late at a majority of the other nodes: it reached them after they already
// held +2/3 of the voting power for that phase (or never reached them),
// so it counted for nothing there. Each node's +2/3 is replayed from its
// vote events in stream order; a voter's own node is not a judge of it.
// Without run_start voting power nothing can be late.
func (x *index) lateVotes() (prevotes, precommits map[string]int) {
	prevotes, precommits = map[string]int{}, map[string]int{}
	if x.totalPower <= 0 {
		return prevotes, precommits
	}
	// Names are interned: this loop sees every vote event of the run.
	ids := map[string]int{}
	var names []string
	id := func(name string) int {
		i, ok := ids[name]
		if !ok {
			i = len(names)
			ids[name] = i
			names = append(names, name)
		}
		return i
	}
	const (
		unheard = iota
		inTime
		late
	)
	type nodeState struct {
		power   int64
		reached bool
		heard   []uint8 // by voter id: unheard, inTime or late
	}
	type keyState struct {
		nodes  map[int]*nodeState
		judges []int  // nodes that reached +2/3
		voters []bool // by voter id: known to have voted
	}
	grow := func(s []uint8, i int) []uint8 {
		for len(s) <= i {
			s = append(s, unheard)
		}
		return s
	}
	keys := map[voteKey]*keyState{}
	var order []voteKey
	state := func(k voteKey) *keyState {
		ks := keys[k]
		if ks == nil {
			ks = &keyState{nodes: map[int]*nodeState{}}
			keys[k] = ks
			order = append(order, k)
		}
		return ks
	}
	voted := func(ks *keyState, v int) {
		for len(ks.voters) <= v {
			ks.voters = append(ks.voters, false)
		}
		ks.voters[v] = true
	}
	var cur *keyState
	var curKey voteKey
	for _, ev := range x.votes {
		if ev.Phase != phase.Prevote && ev.Phase != phase.Precommit || ev.Validator == "" {
			continue
		}
		k := voteKey{hr{ev.Height, ev.Round}, ev.Phase == phase.Precommit}
		if cur == nil || k != curKey { // votes of one round come in bursts
			cur, curKey = state(k), k
		}
		v, n := id(ev.Validator), id(ev.Node)
		voted(cur, v)
		ns := cur.nodes[n]
		if ns == nil {
			ns = &nodeState{}
			cur.nodes[n] = ns
		}
		ns.heard = grow(ns.heard, v)
		if ns.heard[v] != unheard {
			continue
		}
		if ns.reached {
			ns.heard[v] = late
			continue
		}
		ns.heard[v] = inTime
		ns.power += x.power[ev.Validator]
		if x.quorum(ns.power) {
			ns.reached = true
			cur.judges = append(cur.judges, n)
		}
	}
	// A vote signed but never received anywhere is late everywhere.
	for vh, evs := range x.signs {
		for _, ev := range evs {
			if ev.Error == "" && (ev.Phase == phase.Prevote || ev.Phase == phase.Precommit) {
				k := voteKey{hr{vh.height, ev.Round}, ev.Phase == phase.Precommit}
				if ks := keys[k]; ks != nil { // no judges without vote events
					voted(ks, id(vh.validator))
				}
			}
		}
	}
	for _, k := range order {
		ks := keys[k]
		for v, ok := range ks.voters {
			if !ok {
				continue
			}
			judges, lateAt := 0, 0
			for _, n := range ks.judges {
				if n == v { // node and validator share the name
					continue
				}
				judges++
				if h := ks.nodes[n].heard; v >= len(h) || h[v] != inTime {
					lateAt++
				}
			}
			if judges > 0 && lateAt*2 > judges {
				if k.precommit {
					precommits[names[v]]++
				} else {
					prevotes[names[v]]++
				}
			}
		}
	}
	return prevotes, precommits
}

// roundChanges explains every round r < commit round of every committed
// height, and counts per proposer the turns whose proposal did not reach a
// majority of the other nodes before they prevoted (notReceived).
//
// Causes, first match wins: proposer-signer-slow (the proposer's proposal
// signature returned after most other nodes had already prevoted, their
// propose timeout spent; checked first because a slow signature also
// leaves the proposal missing), proposal-missing (most other nodes had no
// complete proposal before prevoting: the signer failed, the proposer did
// not propose, or the proposal did not get through), no-polka (the
// proposal was there but no block got +2/3 prevotes), no-precommit-quorum
// (a polka, yet no +2/3 precommits for it); unknown when no event tells
// anything about the round.
func (x *index) roundChanges(c *chain) (changes []RoundChange, notReceived map[string]int) {
	changes, notReceived = []RoundChange{}, map[string]int{}
	for _, h := range c.heights {
		cr, ok := c.commitRound(h)
		if !ok {
			continue
		}
		for r := range cr {
			rc := x.roundChange(c, h, r)
			if rc.notReceived && rc.Proposer != "" {
				notReceived[rc.Proposer]++
			}
			changes = append(changes, rc.RoundChange)
		}
	}
	return changes, notReceived
}

type roundVerdict struct {
	RoundChange
	notReceived bool
}

func (x *index) roundChange(c *chain, h int64, r int32) roundVerdict {
	k := hr{h, r}
	p := x.proposer[k]
	out := roundVerdict{RoundChange: RoundChange{Height: h, Round: r, Proposer: p}}

	var others []string
	for _, n := range x.roundNodes[k] {
		if n != p {
			others = append(others, n)
		}
	}
	var signed, failed *Event // the proposer's proposal signature at (h, r)
	for _, ev := range x.signs[valHeight{p, h}] {
		if ev.Phase != phase.Proposal || ev.Round != r {
			continue
		}
		if ev.Error == "" && signed == nil {
			signed = ev
		} else if ev.Error != "" && failed == nil {
			failed = ev
		}
	}

	// Who had the proposal in time, and who had prevoted before it was
	// even signed.
	inTime, beforeSig := 0, 0
	for _, n := range others {
		nk := nodeHR{n, k}
		pv, prevoted := x.prevoteStep[nk]
		if t, got := x.proposalAt[nk]; got && (!prevoted || !t.After(pv)) {
			inTime++
		}
		if signed != nil && prevoted && pv.Before(signed.Time) {
			beforeSig++
		}
	}
	majority := func(n int) bool { return n*2 > len(others) }
	out.notReceived = len(others) > 0 && !majority(inTime)
	began, hasBegan := x.roundStart[k]
	// The round ended when the next one began or, without a sign of
	// that, when the height was decided.
	ended := x.decided(c, h, "")
	if t, ok := x.roundStart[hr{h, r + 1}]; ok {
		ended = t
	}
	pending, hung := x.unanswered(p, phase.Proposal, k)
	overloaded := func(cause, detail string) (string, string) {
		if why, sat := x.saturatedDuring(began, ended); hasBegan && sat {
			return CauseHostOverload, detail + "; " + why
		}
		return cause, detail
	}

	busy, isBusy := x.busyOtherThan(p, began, phase.Proposal, k)
	var down *downWindow
	if hasBegan {
		down = x.downs.downDuring(p, began, ended)
	}
	switch {
	case signed == nil && p != "" && down != nil:
		out.Cause = RoundProposerDown
		out.Detail = fmt.Sprintf("%s's node was down (%s)", p, down.text())
	case signed == nil && failed == nil && hung:
		out.Cause = RoundProposerSignerSlow
		out.Detail = fmt.Sprintf("%s's proposal signature was requested and never returned (signer not answering)", p)
		if hasBegan {
			out.Detail = fmt.Sprintf("%s's proposal signature was requested %s ms into the round and never returned (signer not answering)",
				p, formatMS(durationMS(pending.began.Sub(began))))
		}
	case signed == nil && failed == nil && p != "" && hasBegan && isBusy:
		out.Cause = RoundProposerSignerSlow
		out.Detail = fmt.Sprintf("when the round began, %s's signer was still on %s", p, busyText(busy, began))
	case signed == nil && failed == nil && p != "" && hasBegan && len(others) > 0 && !x.entered(p, k, ended):
		out.Cause = RoundProposerBehind
		out.Detail = x.behindText(p, h, ended)
		if at, ok := x.heightAt(p, ended); ok && at == h {
			out.Detail = fmt.Sprintf("%s's node was not in round %d of height %d%s", p, r, h, x.cameBackText(p, ended))
		}
	case len(others) > 0 && signed != nil && majority(beforeSig):
		out.Cause = RoundProposerSignerSlow
		out.Detail = fmt.Sprintf("%s's proposal signature took %s ms and returned after %d of %d other nodes had prevoted",
			p, formatMS(signed.LatencyMS), beforeSig, len(others))
	case len(others) > 0 && !majority(inTime), len(others) == 0 && (failed != nil || p != "" && signed == nil):
		out.Cause = RoundProposalMissing
		switch {
		case failed != nil && signed == nil:
			out.Detail = fmt.Sprintf("%s's proposal signature failed: %s", p, failed.Error)
		case signed == nil && p != "":
			out.Cause, out.Detail = overloaded(RoundProposalMissing, fmt.Sprintf("%s signed no proposal", p))
		default:
			out.Cause, out.Detail = overloaded(RoundProposalMissing, fmt.Sprintf("the proposal reached %d of %d other nodes before they prevoted", inTime, len(others)))
		}
	default:
		pv, pvTotal := x.bestVotePower(k, phase.Prevote)
		if len(others) == 0 && pvTotal == 0 {
			out.Cause = RoundUnknown
			return out
		}
		if x.quorum(pv) {
			pc, _ := x.bestVotePower(k, phase.Precommit)
			out.Cause, out.Detail = overloaded(RoundNoPrecommitQuorum, fmt.Sprintf("a block had %d of %d prevote power but only %d precommit power", pv, x.totalPower, pc))
		} else {
			out.Cause, out.Detail = overloaded(RoundNoPolka, fmt.Sprintf("the most prevoted block had %d of %d power", pv, x.totalPower))
		}
	}
	return out
}

// bestVotePower is the largest voting power behind one non-nil block at
// (h, r, phase), over every vote seen by any node or signed by any
// validator; total is the power of all voters, nil votes included.
func (x *index) bestVotePower(k hr, phase string) (best, total int64) {
	perBlock := map[string]map[string]bool{}
	all := map[string]bool{}
	add := func(voter, block string) {
		all[voter] = true
		if block == "" {
			return
		}
		if perBlock[block] == nil {
			perBlock[block] = map[string]bool{}
		}
		perBlock[block][voter] = true
	}
	for _, ev := range x.votesAt(k) {
		if ev.Phase == phase {
			add(ev.Validator, ev.BlockID)
		}
	}
	for name := range x.power {
		for _, ev := range x.signs[valHeight{name, k.height}] {
			if ev.Round == k.round && ev.Phase == phase && ev.Error == "" {
				add(name, ev.BlockID)
			}
		}
	}
	for _, voters := range perBlock {
		var p int64
		for v := range voters {
			p += x.power[v]
		}
		best = max(best, p)
	}
	for v := range all {
		total += x.power[v]
	}
	return best, total
}

// consecutiveMissed is, per validator, the longest run of consecutive
// heights whose next block has the validator absent. A height without a
// next block breaks the run: nothing is known about it.
func consecutiveMissed(c *chain) map[string]int {
	best, run := map[string]int{}, map[string]int{}
	var prev int64
	for _, h := range c.heights {
		nb := c.lastCommit(h)
		if nb == nil || (prev != 0 && h != prev+1) {
			clear(run)
		}
		if nb == nil {
			prev = 0
			continue
		}
		absent := map[string]bool{}
		for _, v := range nb.LastCommitAbsent {
			if v != "" {
				absent[v] = true
			}
		}
		for v := range run {
			if !absent[v] {
				delete(run, v)
			}
		}
		for v := range absent {
			run[v]++
			best[v] = max(best[v], run[v])
		}
		prev = h
	}
	return best
}
