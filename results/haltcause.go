package results

import (
	"fmt"
	"github.com/valnet/valnet/internal/action"
	"github.com/valnet/valnet/internal/phase"
	"strings"
	"time"
)

// Causes of a halt, in the order they are tried (CauseHostOverload comes
// before unknown).
const (
	HaltValidatorsDown     = "validators-down"
	HaltPartition          = "partition"
	HaltSignerFailed       = "signer-failed"
	HaltSignerNotAnswering = "signer-not-answering"
	HaltNetwork            = "network"
	HaltNoProposal         = "no-proposal"
	HaltUnknown            = "unknown"
)

// HaltCauses lists every cause of a halt, in report order.
var HaltCauses = []string{HaltValidatorsDown, HaltPartition, HaltSignerFailed, HaltSignerNotAnswering,
	HaltNetwork, HaltNoProposal, CauseHostOverload, HaltUnknown}

// noRetry is why a failed signature stops a round for good: CometBFT
// v1.0.1 signs a vote once (internal/consensus/state.go, signAddVote logs
// the error and returns), and a round advances only on +2/3 of the votes
// of a step, so the others wait until a node restarts and signs again.
const noRetry = "CometBFT does not retry a failed signature, so the round waits until a node restarts"

// networkStart is when the chain could first commit: the first new_round
// after the last node_up before the first commit (consensus started; the
// nodes wait for the genesis time before it, which is no stall), or that
// node_up when no node entered a round (a network that never started
// consensus stalls from there), or run_start.
func (x *index) networkStart(c *chain, start *Event) time.Time {
	var t time.Time
	if start != nil {
		t = start.Time
	}
	for _, up := range x.nodeUps {
		if len(c.heights) > 0 && up.After(c.blocks[c.heights[0]].Time) {
			continue
		}
		if up.After(t) {
			t = up
		}
	}
	var consensus time.Time
	for _, at := range x.roundStart {
		if !at.Before(t) && (consensus.IsZero() || at.Before(consensus)) {
			consensus = at
		}
	}
	if !consensus.IsZero() {
		return consensus
	}
	return t
}

// explainHalt says where the chain stood during sp and why. The evidence
// is what the events show up to the moment the stretch became a halt
// (threshold after its start): what happened later, such as the restart
// that ended it, is named apart.
func (x *index) explainHalt(c *chain, sp haltSpan, threshold time.Duration) Halt {
	h := sp.Halt
	h.Height = sp.FromHeight + 1
	at := sp.from.Add(threshold)
	if at.After(sp.to) {
		at = sp.to
	}
	round, entered := x.highestRound(h.Height, at)
	h.Round = round
	h.Cause, h.Detail = x.haltCause(c, h.Height, round, entered, sp.from, at)
	h.needsVotes = h.Cause == HaltUnknown && strings.HasPrefix(h.Detail, cannotTellVotes)
	if sp.Resumed {
		h.Detail += x.resumedText(sp.from, at, sp.to)
	}
	return h
}

// highestRound is the highest round any node had entered at height by t.
func (x *index) highestRound(height int64, t time.Time) (round int32, ok bool) {
	for _, marks := range x.nodeAt {
		for _, m := range marks {
			if m.height == height && !m.t.After(t) && (!ok || m.round > round) {
				round, ok = m.round, true
			}
		}
	}
	return round, ok
}

// haltCause: the first that applies of validators down (the rest hold no
// +2/3), a partition no side of which holds +2/3, too few votes cast in
// the last round (signer failed, not answering, nodes down) or cast but
// not delivered (network), rounds that keep failing for want of a
// proposal, a saturated host, or unknown.
func (x *index) haltCause(c *chain, height int64, round int32, entered bool, from, at time.Time) (cause, detail string) {
	var down []string
	var downPower int64
	for _, v := range x.names {
		if w := x.downs.downDuring(v, at, at); w != nil {
			down = append(down, fmt.Sprintf("%s (%s)", v, w.action))
			downPower += x.power[v]
		}
	}
	if len(down) > 0 && !x.quorum(x.totalPower-downPower) {
		return HaltValidatorsDown, fmt.Sprintf("validators down at h%d: %s; the others hold %d of %d voting power, not more than 2/3",
			height, joinNames(down), x.totalPower-downPower, x.totalPower)
	}
	k := hr{height, round}
	if part, ok := x.partitionAt(at); ok {
		if x.noVotes {
			// A partition halts the chain when no side holds +2/3:
			// only the votes each node received can tell.
			return HaltUnknown, cannotTellVotes + fmt.Sprintf("%s was in force; whether any node received prevotes of more than 2/3 of the power at h%d r%d is not recorded",
				part, height, round)
		}
		if best, who := x.bestHeard(k, phase.Prevote, at); len(x.votes) > 0 && !x.quorum(best) {
			return HaltPartition, fmt.Sprintf("%s: no side holds +2/3 of the voting power (the most prevote power any node received at h%d r%d is %d of %d: %s)",
				part, height, round, best, x.totalPower, joinNames(who))
		}
	}
	if !entered {
		switch {
		case len(x.nodeAt) == 0 && len(x.nodeUps) > 0:
			// CometBFT v1.0.1 starts consensus once block sync is caught
			// up, and block sync is never caught up without a peer
			// (internal/blocksync/pool.go, IsCaughtUp) unless the node
			// itself holds 1/3 of the power.
			return HaltNetwork, "no node entered consensus: CometBFT starts it after block sync, which waits for a connected peer; no peers connected"
		case len(x.nodeAt) == 0:
			return HaltUnknown, "no consensus event from any node"
		}
		return HaltUnknown, fmt.Sprintf("no node entered height %d", height)
	}
	// Too few votes: a signer that failed or hangs, a node down. A
	// shortfall of validators that merely cast nothing yet may be a round
	// still under way; it is kept for when nothing else explains the halt.
	var silent string
	for _, phase := range []string{phase.Prevote, phase.Precommit} {
		cause, detail, ok, onlySilent := x.voteShortfall(k, phase, from, at)
		if ok && !onlySilent {
			return cause, detail
		}
		if ok {
			silent = detail
			break
		}
	}
	// The rounds advance on their timeouts and fail one after another:
	// the last one that failed says why.
	failedRound := round - 1
	if x.roundAdvanced(k, at) {
		failedRound = round
	}
	if failedRound >= 0 {
		rc := x.roundChange(c, height, failedRound)
		text := fmt.Sprintf("h%d r%d failed (%s): %s", height, failedRound, rc.Cause, rc.Detail)
		if failedRound < round {
			text = fmt.Sprintf("h%d reached round %d without a decision; round %d failed (%s): %s", height, round, failedRound, rc.Cause, rc.Detail)
		}
		switch rc.Cause {
		case RoundProposalMissing, RoundProposerDown, RoundProposerBehind, RoundProposerSignerSlow:
			return HaltNoProposal, text
		case CauseHostOverload:
			return CauseHostOverload, text
		}
		if silent == "" {
			silent = text
		}
	}
	if silent == "" {
		silent = fmt.Sprintf("h%d r%d: +2/3 prevotes and precommits were cast and received, and no event says why nothing committed", height, round)
	}
	if why, sat := x.saturatedDuring(from, at); sat {
		return CauseHostOverload, silent + "; " + why
	}
	return HaltUnknown, silent
}

// voteShortfall explains a round that lacks +2/3 of phase's votes by t:
// too little power cast one (whose signers failed, did not answer, whose
// nodes were down, or that cast nothing: onlySilent when that is all), or
// enough cast but no node received +2/3. ok false: some node had +2/3.
func (x *index) voteShortfall(k hr, phase string, from, t time.Time) (cause, detail string, ok, onlySilent bool) {
	cast := map[string]bool{}
	for _, ev := range x.votesAt(k) {
		if ev.Phase == phase && !ev.Time.After(t) {
			cast[ev.Validator] = true
		}
	}
	var failed, hung, hungWhy, down, silent []string
	var castPower int64
	for _, v := range x.names {
		var err string
		for _, ev := range x.signs[valHeight{v, k.height}] {
			if ev.Phase != phase || ev.Round != k.round || ev.Time.After(t) {
				continue
			}
			if ev.Error == "" {
				cast[v] = true
			} else {
				err = ev.Error
			}
		}
		switch {
		case cast[v]:
			castPower += x.power[v]
		case err != "":
			failed = append(failed, v)
		case x.downs.downDuring(v, t, t) != nil:
			down = append(down, v)
		default:
			if s, busy := x.busyAt(v, t); busy {
				hung = append(hung, v)
				hungWhy = append(hungWhy, fmt.Sprintf("%s's signer was still on %s", v, busyText(s, t)))
			} else {
				silent = append(silent, v)
			}
		}
	}
	if x.quorum(castPower) {
		if x.noVotes {
			return HaltUnknown, cannotTellVotes + fmt.Sprintf("%d of %d voting power cast a %s at h%d r%d; whether any node received +2/3 of them is not recorded",
				castPower, x.totalPower, phase, k.height, k.round), true, false
		}
		best, who := x.bestHeard(k, phase, t)
		if len(x.votes) == 0 || x.quorum(best) {
			return "", "", false, false
		}
		detail = fmt.Sprintf("no node received +2/3 %ss at h%d r%d: %d of %d voting power cast one, but the most any node received is %d (%s)",
			phase, k.height, k.round, castPower, x.totalPower, best, joinNames(who))
		if !x.foreignVote(from, t) {
			detail += "; no node received a vote from another node: no peers connected"
		}
		if !x.proposalReceived(k, t) {
			detail += "; no proposal reached a node other than its proposer's"
		}
		return HaltNetwork, detail, true, false
	}
	var clauses []string
	if len(failed) > 0 {
		clauses = append(clauses, fmt.Sprintf("%s failed to sign %s %s (signer error); %s", joinNames(failed), their(failed), phase, noRetry))
	}
	if len(hung) > 0 {
		clauses = append(clauses, fmt.Sprintf("%s cast no %s: %s (signer not answering)", joinNames(hung), phase, strings.Join(hungWhy, "; ")))
	}
	if len(down) > 0 {
		clauses = append(clauses, fmt.Sprintf("%s down", joinNames(down)))
	}
	if len(silent) > 0 {
		clauses = append(clauses, fmt.Sprintf("%s cast no %s", joinNames(silent), phase))
	}
	detail = fmt.Sprintf("no +2/3 %ss at h%d r%d: %s", phase, k.height, k.round, strings.Join(clauses, "; "))
	switch {
	case len(failed) > 0:
		return HaltSignerFailed, detail, true, false
	case len(hung) > 0:
		return HaltSignerNotAnswering, detail, true, false
	case len(down) > 0:
		return HaltValidatorsDown, detail, true, false
	}
	return HaltUnknown, detail, true, true
}

// roundAdvanced reports whether some node had +2/3 precommits (for any
// block or nil) at k by t: the round was over, the next one due.
func (x *index) roundAdvanced(k hr, t time.Time) bool {
	_, who := x.bestHeard(k, phase.Precommit, t)
	var p int64
	for _, v := range who {
		p += x.power[v]
	}
	return x.quorum(p)
}

// bestHeard is the most voting power whose phase votes at k one node had
// received by t (its own included), and whose they were.
func (x *index) bestHeard(k hr, phase string, t time.Time) (best int64, who []string) {
	heard := map[string][]string{}
	seen := map[[2]string]bool{}
	for _, ev := range x.votesAt(k) {
		if ev.Phase != phase || ev.Time.After(t) || seen[[2]string{ev.Node, ev.Validator}] {
			continue
		}
		seen[[2]string{ev.Node, ev.Validator}] = true
		heard[ev.Node] = append(heard[ev.Node], ev.Validator)
	}
	for _, node := range x.names { // a stable order for ties
		var p int64
		for _, v := range heard[node] {
			p += x.power[v]
		}
		if p > best {
			best, who = p, heard[node]
		}
	}
	return best, who
}

// foreignVote reports whether any node received a vote of another
// validator in [from, t].
func (x *index) foreignVote(from, t time.Time) bool {
	for _, ev := range x.votes {
		if ev.Node != ev.Validator && !ev.Time.Before(from) && !ev.Time.After(t) {
			return true
		}
	}
	return false
}

// proposalReceived reports whether a node other than the proposer's had
// the proposal of k by t.
func (x *index) proposalReceived(k hr, t time.Time) bool {
	for nk, at := range x.proposalAt {
		if nk.hr == k && nk.node != x.proposer[k] && !at.After(t) {
			return true
		}
	}
	return false
}

// partitionAt describes the partitions and isolations in force at t (a
// partition or isolate fault started, neither ended nor healed).
func (x *index) partitionAt(t time.Time) (string, bool) {
	type open struct{ key, detail string }
	var active []open
	for _, ev := range x.faults {
		if ev.Time.After(t) {
			break
		}
		key := ev.Action + "/" + ev.Validator
		switch {
		case ev.Action == action.Heal:
			active = nil
		case ev.Action != action.Partition && ev.Action != action.Isolate:
		case ev.State == FaultStart:
			d := ev.Detail
			if d == "" {
				d = strings.TrimSpace(ev.Action + " " + ev.Validator)
			}
			active = append(active, open{key, d})
		case ev.State == FaultEnd:
			for i := range active {
				if active[i].key == key {
					active = append(active[:i], active[i+1:]...)
					break
				}
			}
		}
	}
	if len(active) == 0 {
		return "", false
	}
	var parts []string
	for _, a := range active {
		parts = append(parts, a.detail)
	}
	return strings.Join(parts, "; "), true
}

// resumedText lists the faults that started, and the windows that ended,
// between the halt's evidence (at) and the next commit (to), each with its
// time since the halt began, and when the chain resumed, e.g. "; then the
// end of signer-error v-1 (+30.1s), node-restart v-1 (+42.6s); it resumed
// at +43.8s". So a reader sees what the chain came back after, and what it
// did not.
func (x *index) resumedText(began, at, to time.Time) string {
	since := func(t time.Time) string { return "+" + t.Sub(began).Round(100*time.Millisecond).String() }
	var what []string
	started := map[string]bool{}
	for _, ev := range x.faults {
		if !ev.Time.After(at) || ev.Time.After(to) {
			continue
		}
		name := strings.TrimSpace(ev.Action + " " + ev.Validator)
		switch {
		case ev.State == FaultStart:
			started[name] = true
			what = append(what, name+" ("+since(ev.Time)+")")
		case ev.State == FaultEnd && !started[name]:
			what = append(what, "the end of "+name+" ("+since(ev.Time)+")")
		}
	}
	if len(what) == 0 {
		return ""
	}
	return "; then " + strings.Join(what, ", ") + "; it resumed at " + since(to)
}

// joinNames: "v-1, v-2, v-3".
func joinNames(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func their(names []string) string {
	if len(names) == 1 {
		return "its"
	}
	return "their"
}
