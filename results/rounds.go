package results

import (
	"fmt"
	"strings"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/internal/signfail"
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
	// A proposal signature the signer chain withheld or never returned is
	// named by why (internal/signfail): signer-failed, signature-invalid,
	// signer-conflict, signer-not-answering.
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

// lateVotes counts, per voter, the (round, phase) of height hd whose vote
// was late at a majority of the other nodes: it reached them after they
// already held +2/3 of the voting power for that phase (or never reached
// them), so it counted for nothing there. Each node's +2/3 is replayed
// from its vote events in stream order; a voter's own node is not a judge
// of it. Without run_start voting power nothing can be late.
func (x *index) lateVotes(hd *hdata, prevotes, precommits map[int32]int) {
	if x.totalPower <= 0 {
		return
	}
	const (
		unheard = iota
		inTime
		late
	)
	type nodeState struct {
		power   int64
		reached bool
		heard   map[int32]uint8 // by voter: unheard, inTime or late
	}
	type keyState struct {
		nodes  map[int32]*nodeState
		judges []int32        // nodes that reached +2/3
		voters map[int32]bool // known to have voted
	}
	type key struct {
		round     int32
		precommit bool
	}
	keys := map[key]*keyState{}
	var order []key
	var cur *keyState
	var curKey key
	for _, ev := range hd.votes {
		if ev.phase != phase.Prevote && ev.phase != phase.Precommit || ev.validator == x.emptyID {
			continue
		}
		k := key{ev.round, ev.phase == phase.Precommit}
		if cur == nil || k != curKey { // votes of one round come in bursts
			cur, curKey = keys[k], k
			if cur == nil {
				cur = &keyState{nodes: map[int32]*nodeState{}, voters: map[int32]bool{}}
				keys[k] = cur
				order = append(order, k)
			}
		}
		cur.voters[ev.validator] = true
		ns := cur.nodes[ev.node]
		if ns == nil {
			ns = &nodeState{heard: map[int32]uint8{}}
			cur.nodes[ev.node] = ns
		}
		if ns.heard[ev.validator] != unheard {
			continue
		}
		if ns.reached {
			ns.heard[ev.validator] = late
			continue
		}
		ns.heard[ev.validator] = inTime
		ns.power += x.powerOf(ev.validator)
		if x.quorum(ns.power) {
			ns.reached = true
			cur.judges = append(cur.judges, ev.node)
		}
	}
	// A vote signed but never received anywhere is late everywhere.
	for v, signs := range hd.signs {
		for _, ev := range signs {
			if ev.err == "" && (ev.phase == phase.Prevote || ev.phase == phase.Precommit) {
				if ks := keys[key{ev.round, ev.phase == phase.Precommit}]; ks != nil { // no judges without vote events
					ks.voters[v] = true
				}
			}
		}
	}
	for _, k := range order {
		ks := keys[k]
		for v := range ks.voters {
			judges, lateAt := 0, 0
			for _, n := range ks.judges {
				if n == v { // node and validator share the name
					continue
				}
				judges++
				if ks.nodes[n].heard[v] != inTime {
					lateAt++
				}
			}
			if judges > 0 && lateAt*2 > judges {
				if k.precommit {
					precommits[v]++
				} else {
					prevotes[v]++
				}
			}
		}
	}
}

// roundChanges explains every round r < cr, the commit round of committed
// height hd, and counts per proposer the turns whose proposal did not
// reach a majority of the other nodes before they prevoted (notReceived).
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
func (x *index) roundChanges(c *chain, hd *hdata, cr int32, notReceived map[string]int) []RoundChange {
	var changes []RoundChange
	for r := range cr {
		rc := x.roundChange(c, hd, r)
		if rc.notReceived && rc.Proposer != "" {
			notReceived[rc.Proposer]++
		}
		changes = append(changes, rc.RoundChange)
	}
	return changes
}

type roundVerdict struct {
	RoundChange
	notReceived bool
}

func (x *index) roundChange(c *chain, hd *hdata, r int32) roundVerdict {
	h := hd.height
	k := hr{h, r}
	p := x.proposer(k)
	pid := x.names.id(p)
	out := roundVerdict{RoundChange: RoundChange{Height: h, Round: r, Proposer: p}}

	rd := hd.rounds[r]
	var others []int32
	if rd != nil {
		for n := range rd.nodes {
			if n != pid {
				others = append(others, n)
			}
		}
	}
	var signed, failed *signRec // the proposer's proposal signature at (h, r)
	signs := hd.signs[pid]
	for i := range signs {
		ev := &signs[i]
		if ev.phase != phase.Proposal || ev.round != r {
			continue
		}
		if ev.err == "" && signed == nil {
			signed = ev
		} else if ev.err != "" && failed == nil {
			failed = ev
		}
	}

	// Who had the proposal in time, and who had prevoted before it was
	// even signed.
	inTime, beforeSig := 0, 0
	for _, n := range others {
		pv, prevoted := rd.prevoteStep[n]
		if t, got := rd.proposalAt[n]; got && (!prevoted || !t.After(pv)) {
			inTime++
		}
		if signed != nil && prevoted && pv.Before(signed.t) {
			beforeSig++
		}
	}
	majority := func(n int) bool { return n*2 > len(others) }
	out.notReceived = len(others) > 0 && !majority(inTime)
	began, hasBegan := x.roundStart(k)
	// The round ended when the next one began or, without a sign of
	// that, when the height was decided.
	ended := x.decided(c, hd, x.emptyID)
	if t, ok := x.roundStart(hr{h, r + 1}); ok {
		ended = t
	}
	overloaded := func(cause, detail string) (string, string) {
		if !hasBegan {
			return cause, detail
		}
		if why, sat := x.saturatedDuring(began, ended); sat {
			return CauseHostOverload, detail + "; " + why
		}
		return cause, detail
	}

	var down *downWindow
	if hasBegan {
		down = x.downDuring(p, began, ended)
	}
	hung := func() (sigSpan, bool) { return x.unanswered(pid, phase.Proposal, k) }
	busy := func() (sigSpan, bool) { return x.busyOtherThan(pid, began, phase.Proposal, k) }
	switch {
	case signed == nil && p != "" && down != nil:
		out.Cause = RoundProposerDown
		out.Detail = fmt.Sprintf("%s's node was down (%s)", p, down.text())
	case signed == nil && failed == nil && isTrue(hung):
		pending, _ := hung()
		out.Cause, out.Detail = CauseSignerNotAnswering, fmt.Sprintf("%s's proposal signature was requested and %s (signer not answering)", p, x.unansweredText(pending))
		if !x.gaveUp(pending) {
			out.Cause, out.Detail = RoundProposerSignerSlow, fmt.Sprintf("%s's proposal signature was requested and %s", p, x.unansweredText(pending))
		}
		if hasBegan {
			out.Detail = strings.Replace(out.Detail, "was requested", "was requested "+formatMS(durationMS(pending.began.Sub(began)))+" ms into the round", 1)
		}
	case signed == nil && failed == nil && p != "" && hasBegan && isTrue(busy):
		s, _ := busy()
		out.Cause = RoundProposerSignerSlow
		out.Detail = fmt.Sprintf("when the round began, %s's signer was still on %s", p, x.busyText(s, began))
	case signed == nil && failed == nil && p != "" && hasBegan && len(others) > 0 && !x.entered(pid, k, ended):
		out.Cause = RoundProposerBehind
		out.Detail = x.behindText(pid, h, ended)
		if at, ok := x.heightAt(pid, ended); ok && at == h {
			out.Detail = fmt.Sprintf("%s's node was not in round %d of height %d%s", p, r, h, x.cameBackText(p, ended))
		}
	case len(others) > 0 && signed != nil && majority(beforeSig):
		out.Cause = RoundProposerSignerSlow
		out.Detail = fmt.Sprintf("%s's proposal signature took %s ms and returned after %d of %d other nodes had prevoted",
			p, formatMS(signed.latencyMS), beforeSig, len(others))
	case len(others) > 0 && !majority(inTime), len(others) == 0 && (failed != nil || p != "" && signed == nil):
		out.Cause = RoundProposalMissing
		switch {
		case failed != nil && signed == nil:
			out.Cause = signfail.Of(failed.failure)
			out.Detail = fmt.Sprintf("%s's proposal signature failed: %s", p, failed.err)
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

// isTrue is f's verdict: a look-up made only when a case needs it.
func isTrue[T any](f func() (T, bool)) bool {
	_, ok := f()
	return ok
}

// bestVotePower is the largest voting power behind one non-nil block at
// (h, r, phase), over every vote seen by any node or signed by any
// validator; total is the power of all voters, nil votes included.
func (x *index) bestVotePower(k hr, ph string) (best, total int64) {
	perBlock := map[string]map[int32]bool{}
	all := map[int32]bool{}
	add := func(voter int32, block string) {
		all[voter] = true
		if block == "" {
			return
		}
		if perBlock[block] == nil {
			perBlock[block] = map[int32]bool{}
		}
		perBlock[block][voter] = true
	}
	for _, ev := range x.votesAt(k) {
		if ev.phase == ph {
			add(ev.validator, ev.blockID)
		}
	}
	for _, v := range x.valIDs {
		for _, ev := range x.signsOf(v, k.height) {
			if ev.round == k.round && ev.phase == ph && ev.err == "" {
				add(v, ev.blockID)
			}
		}
	}
	for _, voters := range perBlock {
		var p int64
		for v := range voters {
			p += x.powerOf(v)
		}
		best = max(best, p)
	}
	for v := range all {
		total += x.powerOf(v)
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
		for _, v := range c.namesOf(nb.absent) {
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
