package results

import (
	"fmt"
	"github.com/valnet/valnet/internal/action"
	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/internal/signfail"
	"github.com/valnet/valnet/results/eventlog"
	"strings"
	"time"
)

// Causes of a halt, in the order they are tried (CauseHostOverload comes
// before unknown).
const (
	HaltValidatorsDown     = "validators-down"
	HaltPartition          = "partition"
	HaltSignerFailed       = signfail.SignerFailed
	HaltSignatureInvalid   = signfail.SignatureInvalid
	HaltSignerConflict     = signfail.SignerConflict
	HaltSignerNotAnswering = signfail.SignerNotAnswering
	HaltNetwork            = "network"
	HaltNoProposal         = "no-proposal"
	HaltUnknown            = "unknown"
)

// HaltCauses lists every cause of a halt, in report order.
var HaltCauses = []string{HaltValidatorsDown, HaltPartition, HaltSignerFailed, HaltSignatureInvalid, HaltSignerConflict, HaltSignerNotAnswering,
	HaltNetwork, HaltNoProposal, CauseHostOverload, HaltUnknown}

// noRetry is why a failed signature stops a round for good: CometBFT
// v1.0.1 signs a vote once (internal/consensus/state.go, signAddVote logs
// the error and returns), and a round advances only on +2/3 of the votes
// of a step, so the others wait until a node restarts and signs again.
const noRetry = "CometBFT does not retry a failed signature, so the round waits until a node restarts"

// explainHalt says where the chain stood during sp and why. The evidence
// is what the events show up to the moment the stretch became a halt
// (threshold after its start): what happened later, such as the restart
// that ended it, is named apart. hd is the height that could not commit
// (nil: no event named it).
func (x *index) explainHalt(c *chain, hd *hdata, sp haltSpan, threshold time.Duration) Halt {
	h := sp.Halt
	h.Height = sp.FromHeight + 1
	if hd == nil {
		hd = &hdata{height: h.Height, rounds: map[int32]*rdata{}, stepCommit: noRound}
	}
	at := sp.from.Add(threshold)
	if at.After(sp.to) {
		at = sp.to
	}
	round, entered := highestRound(hd, at)
	h.Round = round
	h.Cause, h.Detail = x.haltCause(c, hd, round, entered, sp.from, at)
	h.needsVotes = h.Cause == HaltUnknown && strings.HasPrefix(h.Detail, cannotTellVotes)
	if sp.Resumed {
		h.Detail += x.resumedText(sp.from, at, sp.to)
	}
	return h
}

// highestRound is the highest round any node had entered at height hd by t.
func highestRound(hd *hdata, t time.Time) (round int32, ok bool) {
	for r, rd := range hd.rounds {
		if ok && r <= round {
			continue
		}
		for _, at := range rd.marks {
			if !at.After(t) {
				round, ok = r, true
				break
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
func (x *index) haltCause(c *chain, hd *hdata, round int32, entered bool, from, at time.Time) (cause, detail string) {
	height := hd.height
	var down []string
	var downPower int64
	for i, v := range x.vals {
		if w := x.downDuring(v, at, at); w != nil {
			down = append(down, fmt.Sprintf("%s (%s)", v, w.action))
			downPower += x.powerOf(x.valIDs[i])
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
		if best, who := x.bestHeard(k, phase.Prevote, at); x.has(factVote) && !x.quorum(best) {
			return HaltPartition, fmt.Sprintf("%s: no side holds +2/3 of the voting power (the most prevote power any node received at h%d r%d is %d of %d: %s)",
				part, height, round, best, x.totalPower, joinNames(who))
		}
	}
	if !entered {
		switch {
		case !x.has(factMark) && x.has(factNodeUp):
			// CometBFT v1.0.1 starts consensus once block sync is caught
			// up, and block sync is never caught up without a peer
			// (internal/blocksync/pool.go, IsCaughtUp) unless the node
			// itself holds 1/3 of the power.
			return HaltNetwork, "no node entered consensus: CometBFT starts it after block sync, which waits for a connected peer; no peers connected"
		case !x.has(factMark):
			return HaltUnknown, "no consensus event from any node"
		}
		return HaltUnknown, fmt.Sprintf("no node entered height %d", height)
	}
	// Too few votes: a signer that failed or hangs, a node down. A
	// shortfall of validators that merely cast nothing yet may be a round
	// still under way; it is kept for when nothing else explains the halt.
	var silent string
	for _, phase := range []string{phase.Prevote, phase.Precommit} {
		cause, detail, ok, onlySilent := x.voteShortfall(hd, k, phase, from, at)
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
		rc := x.roundChange(c, hd, failedRound)
		text := fmt.Sprintf("h%d r%d failed (%s): %s", height, failedRound, rc.Cause, rc.Detail)
		if failedRound < round {
			text = fmt.Sprintf("h%d reached round %d without a decision; round %d failed (%s): %s", height, round, failedRound, rc.Cause, rc.Detail)
		}
		switch rc.Cause {
		case RoundProposalMissing, RoundProposerDown, RoundProposerBehind, RoundProposerSignerSlow,
			signfail.SignerFailed, signfail.SignatureInvalid, signfail.SignerConflict, signfail.SignerNotAnswering:
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
func (x *index) voteShortfall(hd *hdata, k hr, ph string, from, t time.Time) (cause, detail string, ok, onlySilent bool) {
	cast := map[int32]bool{}
	for _, ev := range x.votesAt(k) {
		if ev.phase == ph && !ev.t.After(t) {
			cast[ev.validator] = true
		}
	}
	var failed, hung, hungWhy, down, silent []string
	failedPower := map[string]int64{} // by failure kind
	var castPower int64
	for i, v := range x.vals {
		id := x.valIDs[i]
		var err, failure string
		for _, ev := range hd.signs[id] {
			if ev.phase != ph || ev.round != k.round || ev.t.After(t) {
				continue
			}
			if ev.err == "" {
				cast[id] = true
			} else {
				err, failure = ev.err, ev.failure
			}
		}
		switch {
		case cast[id]:
			castPower += x.powerOf(id)
		case err != "":
			failed = append(failed, v)
			failedPower[signfail.Of(failure)] += x.powerOf(id)
		case x.downDuring(v, t, t) != nil:
			down = append(down, v)
		default:
			if s, busy := x.busyAt(id, t); busy {
				hung = append(hung, v)
				hungWhy = append(hungWhy, fmt.Sprintf("%s's signer was still on %s", v, x.busyText(s, t)))
			} else {
				silent = append(silent, v)
			}
		}
	}
	if x.quorum(castPower) {
		if x.noVotes {
			return HaltUnknown, cannotTellVotes + fmt.Sprintf("%d of %d voting power cast a %s at h%d r%d; whether any node received +2/3 of them is not recorded",
				castPower, x.totalPower, ph, k.height, k.round), true, false
		}
		best, who := x.bestHeard(k, ph, t)
		if !x.has(factVote) || x.quorum(best) {
			return "", "", false, false
		}
		detail = fmt.Sprintf("no node received +2/3 %ss at h%d r%d: %d of %d voting power cast one, but the most any node received is %d (%s)",
			ph, k.height, k.round, castPower, x.totalPower, best, joinNames(who))
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
		clauses = append(clauses, fmt.Sprintf("%s failed to sign %s %s (%s); %s", joinNames(failed), their(failed), ph, failureText(failedPower), noRetry))
	}
	if len(hung) > 0 {
		clauses = append(clauses, fmt.Sprintf("%s cast no %s: %s (signer not answering)", joinNames(hung), ph, strings.Join(hungWhy, "; ")))
	}
	if len(down) > 0 {
		clauses = append(clauses, fmt.Sprintf("%s down", joinNames(down)))
	}
	if len(silent) > 0 {
		clauses = append(clauses, fmt.Sprintf("%s cast no %s", joinNames(silent), ph))
	}
	detail = fmt.Sprintf("no +2/3 %ss at h%d r%d: %s", ph, k.height, k.round, strings.Join(clauses, "; "))
	switch {
	case len(failed) > 0:
		return mainFailure(failedPower), detail, true, false
	case len(hung) > 0:
		return HaltSignerNotAnswering, detail, true, false
	case len(down) > 0:
		return HaltValidatorsDown, detail, true, false
	}
	return HaltUnknown, detail, true, true
}

// mainFailure is the failure kind behind the most voting power (the
// first in report order on a tie).
func mainFailure(power map[string]int64) string {
	best := signfail.SignerFailed
	for _, k := range signfail.All() {
		if power[k] > power[best] {
			best = k
		}
	}
	return best
}

// failureText names the failure kinds of power, in report order:
// "signer-failed" or "signature-invalid, signer-not-answering".
func failureText(power map[string]int64) string {
	var out []string
	for _, k := range signfail.All() {
		if power[k] > 0 {
			out = append(out, k)
		}
	}
	return strings.Join(out, ", ")
}

// roundAdvanced reports whether some node had +2/3 precommits (for any
// block or nil) at k by t: the round was over, the next one due.
func (x *index) roundAdvanced(k hr, t time.Time) bool {
	_, who := x.bestHeard(k, phase.Precommit, t)
	var p int64
	for _, v := range who {
		p += x.powerOf(x.names.id(v))
	}
	return x.quorum(p)
}

// bestHeard is the most voting power whose phase votes at k one node had
// received by t (its own included), and whose they were.
func (x *index) bestHeard(k hr, ph string, t time.Time) (best int64, who []string) {
	heard := map[int32][]int32{}
	seen := map[[2]int32]bool{}
	for _, ev := range x.votesAt(k) {
		if ev.phase != ph || ev.t.After(t) || seen[[2]int32{ev.node, ev.validator}] {
			continue
		}
		seen[[2]int32{ev.node, ev.validator}] = true
		heard[ev.node] = append(heard[ev.node], ev.validator)
	}
	var bestIDs []int32
	for _, node := range x.valIDs { // a stable order for ties
		var p int64
		for _, v := range heard[node] {
			p += x.powerOf(v)
		}
		if p > best {
			best, bestIDs = p, heard[node]
		}
	}
	for _, v := range bestIDs {
		who = append(who, x.names.name(v))
	}
	return best, who
}

// foreignVote reports whether any node received a vote of another
// validator in [from, t].
func (x *index) foreignVote(from, t time.Time) bool {
	x.looked(lookForeign, from, t)
	f, to := stampOf(from), stampOf(t)
	for _, at := range x.foreign {
		if at >= f && at <= to {
			return true
		}
	}
	return false
}

// proposalReceived reports whether a node other than the proposer's had
// the proposal of k by t.
func (x *index) proposalReceived(k hr, t time.Time) bool {
	rd := x.roundOf(k)
	if rd == nil {
		return false
	}
	p := x.names.id(x.proposer(k))
	for node, at := range rd.proposalAt {
		if node != p && !at.After(t) {
			return true
		}
	}
	return false
}

// partitionAt describes the partitions and isolations in force at t (a
// partition or isolate fault started, neither ended nor healed).
func (x *index) partitionAt(t time.Time) (string, bool) {
	x.looked(lookFault, t, t)
	type open struct{ key, detail string }
	var active []open
	for _, ev := range x.faults {
		if ev.t.After(t) {
			break
		}
		key := ev.action + "/" + ev.validator
		switch {
		case ev.action == action.Heal:
			active = nil
		case ev.action != action.Partition && ev.action != action.Isolate:
		case ev.state == eventlog.FaultStart:
			d := ev.detail
			if d == "" {
				d = strings.TrimSpace(ev.action + " " + ev.validator)
			}
			active = append(active, open{key, d})
		case ev.state == eventlog.FaultEnd:
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
	x.looked(lookFault, at, to)
	since := func(t time.Time) string { return "+" + t.Sub(began).Round(100*time.Millisecond).String() }
	var what []string
	started := map[string]bool{}
	for _, ev := range x.faults {
		if !ev.t.After(at) || ev.t.After(to) {
			continue
		}
		name := strings.TrimSpace(ev.action + " " + ev.validator)
		switch {
		case ev.state == eventlog.FaultStart:
			started[name] = true
			what = append(what, name+" ("+since(ev.t)+")")
		case ev.state == eventlog.FaultEnd && !started[name]:
			what = append(what, "the end of "+name+" ("+since(ev.t)+")")
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
