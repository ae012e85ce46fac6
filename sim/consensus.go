package sim

import (
	"time"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/results/eventlog"
)

// The consensus rules of one node, after CometBFT v1.0.1's
// internal/consensus/state.go. Each function names the function of
// state.go it follows; docs/sim.md lists them with what is simplified.
// Every transition runs at the node's own clock n.t: the consensus
// routine handles one message at a time, and a signature holds it
// (signAddVote and decideProposal sign synchronously).

// Round steps, as cstypes.RoundStepType orders them.
const (
	stepNewHeight uint8 = iota + 1
	stepNewRound
	stepPropose
	stepPrevote
	stepPrevoteWait
	stepPrecommit
	stepPrecommitWait
	stepCommit
)

var stepNames = [...]string{"", "new_height", "new_round", "propose", "prevote", "prevote_wait", "precommit", "precommit_wait", "commit"}

const noBlock int32 = -1

// node is one validator's consensus state. The fields every handled
// message reads come first, in the first two cache lines: a large
// network's node is rarely still in cache when its next message comes.
type node struct {
	// up: the node runs (not stopped, killed or paused).
	up          bool
	step        uint8
	triggeredPC bool
	proxyOn     bool // see waiting

	r               int32
	proposal        int32 // block of this round's proposal; noBlock: none
	polRound        int32
	propBlock       int32 // block whose parts are complete; noBlock: none
	validRound      int32
	lastCommitRound int32

	h int64
	// t is the node's clock while it handles an event; busy is when its
	// consensus routine is free again.
	t, busy int64
	lastAt  int64 // when the node last handled an event

	votes heightVotes
	// seen: the node's last round states, newest first, with when it
	// entered each. Its peers' gossip routines read it at every wake-up
	// (gossip.go stateAt), newest first: here, after the votes they
	// also read, rather than among the node's cold fields.
	seen [seenLen]roundState
	// lastCommit: the precommits of h-1 in its commit round, which the
	// next proposer puts in its block; open while step is new_height.
	lastCommit *voteSet

	// waiting are the events that came while the consensus routine was
	// busy, in the order it takes them; the queue holds one proxy of the
	// first (proxySeq, proxyAt), due when the routine is free
	// (world.dispatch).
	waiting  waitQueue
	proxySeq uint64
	proxyAt  int64

	i    int32
	name string
	// startTime: when round 0 of h starts (commit time + timeout_commit).
	startTime int64

	lastCommitBlock int32
	// lcAhead: LastCommit precommits handled as quiet votes ahead of the
	// queue (quiet.go), with the key each would have had there, for the
	// lastCommit they went into (lcAheadOf).
	lcAhead   []quietKey
	lcAheadOf *voteSet

	partsFor    int32 // block whose parts are being collected; noBlock: none
	partsGot    int32
	partsSeen   []uint64 // bitset of the parts of partsFor it has
	locked      int32
	lockedRound int32
	valid       int32
	commitRound int32
	commitBlock int32

	catchUpPending bool // a block fetch is queued (catchUp)
	// partAt: when it added each part of partsFor (0: not yet). Its
	// peers' gossip routines know it a link delay late (gossip.go).
	partAt []int64

	// held are messages for a later round or height, handed in when the
	// node gets there (a peer's gossip sends them once the peer state
	// says so).
	held []event
}

// enterNewRound follows State.enterNewRound.
func (w *world) enterNewRound(n *node, h int64, r int32) {
	if n.h != h || r < n.r || (n.r == r && n.step != stepNewHeight) {
		return
	}
	n.r, n.step = r, stepNewRound
	if r != 0 {
		n.proposal, n.polRound, n.propBlock = noBlock, -1, noBlock
		n.wantParts(noBlock)
	}
	n.triggeredPC = false
	if w.recordNode(n) {
		w.emit(eventlog.Event{Time: w.at(n.t), Kind: eventlog.KindNewRound, Node: n.name, Height: h, Round: r,
			Proposer: w.names[w.proposer(h, r)]})
	}
	w.releaseHeld(n)
	if r > 0 {
		w.moved(n)
	}
	w.enterPropose(n, h, r)
}

// enterPropose follows State.enterPropose and defaultDecideProposal.
func (w *world) enterPropose(n *node, h int64, r int32) {
	if n.h != h || r < n.r || (n.r == r && n.step >= stepPropose) {
		return
	}
	w.scheduleTimeout(n, w.timeouts.propose(r), h, r, stepPropose)
	if w.proposer(h, r) == n.i {
		w.decideProposal(n, h, r)
	}
	n.r, n.step = r, stepPropose
	w.stepEvent(n)
	if w.proposalComplete(n) {
		w.enterPrevote(n, h, r)
	}
}

// decideProposal follows defaultDecideProposal: the valid block if there
// is one, else a new block with the LastCommit the node holds now; the
// proposal is signed (the routine waits), then it and the parts go out.
func (w *world) decideProposal(n *node, h int64, r int32) {
	block, pol := n.valid, n.validRound
	if block == noBlock {
		w.work(n, w.p.ProposeCost)
		block, pol = w.createBlock(n, h, r), -1
	}
	if !w.sign(n, phase.Proposal, h, r, block) {
		return
	}
	w.q.push(event{at: n.t, kind: evInternal, mk: mProposal, node: n.i, from: n.i, height: h, round: r, block: block, arg: pol})
	w.broadcastProposal(n, h, r, block, pol)
}

// proposalComplete follows isProposalComplete.
func (w *world) proposalComplete(n *node) bool {
	if n.proposal == noBlock || n.propBlock != n.proposal {
		return false
	}
	if n.polRound < 0 {
		return true
	}
	_, ok := n.votes.set(n.polRound, false).majority(w.total)
	return ok
}

// enterPrevote follows State.enterPrevote and defaultDoPrevote (PBTS off,
// as valnet's genesis leaves it, and every block valid).
func (w *world) enterPrevote(n *node, h int64, r int32) {
	if n.h != h || r < n.r || (n.r == r && n.step >= stepPrevote) {
		return
	}
	vote := noBlock
	switch {
	case n.proposal == noBlock || n.propBlock != n.proposal:
		// no proposal, or its block is incomplete: nil
	case n.polRound == -1:
		if n.lockedRound == -1 || n.locked == n.propBlock {
			vote = n.propBlock
		}
	default:
		b, ok := n.votes.set(n.polRound, false).majority(w.total)
		if ok && b != noBlock && b == n.propBlock && n.polRound < r &&
			(n.lockedRound <= n.polRound || n.locked == n.propBlock) {
			vote = n.propBlock
		}
	}
	w.signVote(n, h, r, false, vote)
	n.r, n.step = r, stepPrevote
	w.stepEvent(n)
}

// enterPrevoteWait follows State.enterPrevoteWait: the prevote timeout
// starts on +2/3 of any prevotes.
func (w *world) enterPrevoteWait(n *node, h int64, r int32) {
	if n.h != h || r < n.r || (n.r == r && n.step >= stepPrevoteWait) {
		return
	}
	w.scheduleTimeout(n, w.timeouts.prevote(r), h, r, stepPrevoteWait)
	n.r, n.step = r, stepPrevoteWait
	w.stepEvent(n)
}

// enterPrecommit follows State.enterPrecommit.
func (w *world) enterPrecommit(n *node, h int64, r int32) {
	if n.h != h || r < n.r || (n.r == r && n.step >= stepPrecommit) {
		return
	}
	vote := noBlock
	if b, ok := n.votes.set(r, false).majority(w.total); ok && b != noBlock {
		switch {
		case n.locked == b:
			n.lockedRound = r
			vote = b
		case n.propBlock == b:
			n.locked, n.lockedRound = b, r
			vote = b
		default:
			// a polka for a block we do not have: fetch it, precommit nil
			if n.partsFor != b {
				w.collect(n, b)
				n.propBlock = noBlock
			}
		}
	}
	w.signVote(n, h, r, true, vote)
	n.r, n.step = r, stepPrecommit
	w.stepEvent(n)
}

// enterPrecommitWait follows State.enterPrecommitWait: the precommit
// timeout starts on +2/3 of any precommits; the step is unchanged.
func (w *world) enterPrecommitWait(n *node, h int64, r int32) {
	if n.h != h || r < n.r || (n.r == r && n.triggeredPC) {
		return
	}
	w.scheduleTimeout(n, w.timeouts.precommit(r), h, r, stepPrecommitWait)
	n.triggeredPC = true
	w.stepEvent(n)
}

// enterCommit follows State.enterCommit and tryFinalizeCommit.
func (w *world) enterCommit(n *node, h int64, r int32, block int32) {
	if n.h != h || n.step >= stepCommit {
		return
	}
	if n.locked == block {
		n.propBlock = block
	}
	n.step, n.commitRound, n.commitBlock = stepCommit, r, block
	w.stepEvent(n)
	if n.propBlock != block {
		// enterCommit: without the block, set up its part set and fire
		// EventValidBlock, whose NewValidBlockMessage tells the peers
		// which parts the node lacks; they send them (gossipDataRoutine,
		// gossipDataForCatchup for a peer already past h).
		w.collect(n, block)
		w.fetchParts(n, h, block)
	}
	w.tryFinalize(n)
}

func (w *world) tryFinalize(n *node) {
	if n.step != stepCommit || n.propBlock != n.commitBlock {
		return
	}
	w.finalizeCommit(n)
}

// finalizeCommit follows State.finalizeCommit and updateToState: execute
// the block, move to the next height, whose round 0 starts timeout_commit
// after now (scheduleRound0).
func (w *world) finalizeCommit(n *node) {
	h := n.h
	w.work(n, w.p.CommitCost)
	w.committedBy(n, h, n.commitRound, n.commitBlock)
	lc := n.votes.set(n.commitRound, true)
	n.lastCommit, n.lastCommitRound, n.lastCommitBlock = lc, n.commitRound, n.commitBlock
	w.newHeight(n, h+1, n.t)
	w.scheduleTimeout(n, n.startTime-n.t, n.h, 0, stepNewHeight)
}

// newHeight resets the round state for height h (updateToState).
func (w *world) newHeight(n *node, h int64, commitTime int64) {
	w.newHeightQuiet(n, h, commitTime)
	w.stepEvent(n)
	w.moved(n)
	// Votes of the new height are taken at once, in new_height too
	// (addVote: vote.Height == cs.Height).
	w.releaseHeld(n)
}

// handleTimeout follows State.handleTimeout.
func (w *world) handleTimeout(n *node, e event) {
	if e.height != n.h || e.round < n.r || (e.round == n.r && e.step < n.step) {
		return
	}
	switch e.step {
	case stepNewHeight:
		w.enterNewRound(n, e.height, 0)
	case stepPropose:
		w.enterPrevote(n, e.height, e.round)
	case stepPrevoteWait:
		w.enterPrecommit(n, e.height, e.round)
	case stepPrecommitWait:
		w.enterPrecommit(n, e.height, e.round)
		w.enterNewRound(n, e.height, e.round+1)
	}
}

// addProposal follows defaultSetProposal: one proposal per round, for
// the node's height and round.
func (w *world) addProposal(n *node, e event) {
	if e.height != n.h || e.round != n.r || n.proposal != noBlock {
		return
	}
	w.work(n, w.p.ProposalCost)
	n.proposal, n.polRound = e.block, e.polRound()
	w.collect(n, e.block)
	w.relayProposal(n, e)
}

// addPart follows addProposalBlockPart and handleCompleteProposal; all
// set: all of the block's parts at once (the proposer's own).
func (w *world) addPart(n *node, e event, all bool) {
	if e.height != n.h || e.block != n.partsFor || n.propBlock == e.block {
		return
	}
	b := w.block(e.height, e.block)
	if b == nil {
		// so far behind that the model no longer has the block: it is
		// fetched whole, as blocksync would (catchUp)
		w.scheduleCatchUp(n)
		return
	}
	if all {
		n.partsGot = b.parts
		if w.g != nil {
			for k := range b.parts {
				n.setPartAt(k)
			}
			w.armOut(n, chData, n.t)
		}
	} else {
		if !n.gotPart(e.partIndex()) {
			return // PartSet.AddPart: a part it has is dropped
		}
		w.work(n, w.p.PartCost)
		n.partsGot++
		if w.g != nil {
			n.setPartAt(e.partIndex())
		}
		w.relayPart(n, e)
	}
	if n.partsGot < b.parts {
		return
	}
	n.propBlock = e.block
	if w.recordNode(n) {
		w.emit(eventlog.Event{Time: w.at(n.t), Kind: eventlog.KindProposal, Node: n.name, Height: n.h, Round: n.r, BlockID: b.hash})
	}
	// handleCompleteProposal
	pv := n.votes.set(n.r, false)
	maj, two := pv.majority(w.total)
	if two && maj != noBlock && n.validRound < n.r && maj == n.propBlock {
		n.valid, n.validRound = n.propBlock, n.r
	}
	switch {
	case n.step <= stepPropose && w.proposalComplete(n):
		w.enterPrevote(n, n.h, n.r)
		if two {
			w.enterPrecommit(n, n.h, n.r)
		}
	case n.step == stepCommit:
		w.tryFinalize(n)
	}
}

// addVote follows State.addVote.
func (w *world) addVote(n *node, e *event) {
	precommit := e.mk == mPrecommit
	if e.height+1 == n.h && precommit {
		// a precommit of the previous height, while waiting timeout_commit
		if n.step != stepNewHeight || n.lastCommit == nil || e.round != n.lastCommitRound {
			return
		}
		if n.lastCommit.add(e.from, w.power[e.from], e.block) {
			w.work(n, w.voteCost(e))
			w.voteEvent(n, e)
			w.relayVote(n, e, true)
		}
		return
	}
	if e.height != n.h {
		return
	}
	vs := n.votes.set(e.round, precommit)
	if !vs.add(e.from, w.power[e.from], e.block) {
		return
	}
	w.work(n, w.voteCost(e))
	w.voteEvent(n, e)
	w.relayVote(n, e, false)
	h := n.h
	if !precommit {
		if b, ok := vs.majority(w.total); ok && b != noBlock && n.validRound < e.round && e.round == n.r {
			if n.propBlock == b {
				n.valid, n.validRound = b, e.round
			} else {
				n.propBlock = noBlock
			}
			w.collect(n, b)
		}
		switch {
		case n.r < e.round && vs.anyTwoThirds(w.total):
			w.enterNewRound(n, h, e.round)
		case n.r == e.round && n.step >= stepPrevote:
			if b, ok := vs.majority(w.total); ok && (w.proposalComplete(n) || b == noBlock) {
				w.enterPrecommit(n, h, e.round)
			} else if vs.anyTwoThirds(w.total) {
				w.enterPrevoteWait(n, h, e.round)
			}
		case n.proposal != noBlock && n.polRound >= 0 && n.polRound == e.round:
			if w.proposalComplete(n) {
				w.enterPrevote(n, h, n.r)
			}
		}
		return
	}
	if b, ok := vs.majority(w.total); ok {
		w.enterNewRound(n, h, e.round)
		w.enterPrecommit(n, h, e.round)
		if b != noBlock {
			w.enterCommit(n, h, e.round, b)
		} else {
			w.enterPrecommitWait(n, h, e.round)
		}
	} else if n.r <= e.round && vs.anyTwoThirds(w.total) {
		w.enterNewRound(n, h, e.round)
		w.enterPrecommitWait(n, h, e.round)
	}
}

// voteCost is the consensus routine's work to verify and add vote e.
// With vote extensions a non-nil precommit carries two signatures, and
// the vote set verifies both (types/vote_set.go 218-219,
// VerifyVoteAndExtension): the calibration's vote_cost, fitted without
// extensions, is mostly one verification, so such a vote costs it
// twice. (The app's VerifyVoteExtension, state.go 2374, is the kvstore's
// no-op here.)
func (w *world) voteCost(e *event) time.Duration {
	if e.mk == mPrecommit && e.block != noBlock && w.extHeight > 0 && e.height >= w.extHeight {
		return 2 * w.p.VoteCost
	}
	return w.p.VoteCost
}

// signVote follows signAddVote: sign (the routine waits), then the vote
// reaches the node's own receive routine and its peers.
func (w *world) signVote(n *node, h int64, r int32, precommit bool, block int32) {
	if n.i >= int32(w.n) {
		return // not a validator: "If the node not in the validator set, do nothing" (signAddVote)
	}
	ph, mk := phase.Prevote, mPrevote
	if precommit {
		ph, mk = phase.Precommit, mPrecommit
	}
	if !w.sign(n, ph, h, r, block) {
		return
	}
	w.q.push(event{at: n.t, kind: evInternal, mk: mk, node: n.i, from: n.i, height: h, round: r, block: block})
	w.broadcastVote(n, mk, h, r, block)
}

func (w *world) stepEvent(n *node) {
	n.noteState()
	if w.recordNode(n) {
		s := stepNames[n.step]
		w.emit(eventlog.Event{Time: w.at(n.t), Kind: eventlog.KindStep, Node: n.name, Height: n.h, Round: n.r, Step: s})
	}
}

func (w *world) voteEvent(n *node, e *event) {
	if !w.voteEvents {
		return
	}
	ph := phase.Prevote
	if e.mk == mPrecommit {
		ph = phase.Precommit
	}
	w.emit(eventlog.Event{Time: w.at(n.t), Kind: eventlog.KindVote, Node: n.name, Validator: w.names[e.from],
		Height: e.height, Round: e.round, Phase: ph, BlockID: w.hashOf(e.height, e.block)})
}

func (w *world) scheduleTimeout(n *node, d int64, h int64, r int32, step uint8) {
	w.q.push(event{at: n.t + max(d, 0), kind: evTimeout, node: n.i, height: h, round: r, step: step})
}

// wantParts starts collecting block's parts at n's height (its proposal,
// a polka or a commit for it), unless it is collecting them already.
func (n *node) wantParts(block int32) {
	if n.partsFor != block {
		n.partsFor, n.partsGot = block, 0
		clear(n.partsSeen)
		clear(n.partAt)
	}
}

// collect is wantParts; on a sparse topology a new part set is news to
// n's peers (its part-set header: the proposal, NewValidBlock), whose
// data routines then send the parts.
func (w *world) collect(n *node, block int32) {
	if n.partsFor == block {
		return
	}
	n.wantParts(block)
	if w.g != nil && block != noBlock {
		w.armIn(n, chData)
	}
}

// moved: n entered a new height or round. On a sparse topology its
// vote routines may have something for its peers now (its LastCommit for
// a peer still at the height it left), and its peers' routines for it
// once its NewRoundStep reaches them. Its data routines have nothing new
// by moving: a new height or round has no proposal yet, and the blocks
// it could send a peer catching up it had before (addPart woke them);
// not waking them cut a tenth of the wake-ups, and the events of the
// goldens and of TestShapeHashes' three shapes stayed the same.
func (w *world) moved(n *node) {
	if w.g == nil {
		return
	}
	w.armOut(n, chVotes, n.t)
	w.armIn(n, chVotes)
	w.armIn(n, chData)
}

// setPartAt records that part k of partsFor was added now (its
// HasProposalBlockPart).
func (n *node) setPartAt(k int32) {
	if int(k) >= len(n.partAt) {
		n.partAt = append(n.partAt, make([]int64, int(k)+1-len(n.partAt))...)
	}
	n.partAt[k] = max(n.t, 1)
}

// gotPart marks part k of partsFor as received; false when it was.
func (n *node) gotPart(k int32) bool {
	w, bit := int(k/64), uint64(1)<<(k%64)
	if w >= len(n.partsSeen) {
		n.partsSeen = append(n.partsSeen, make([]uint64, w+1-len(n.partsSeen))...)
	}
	if n.partsSeen[w]&bit != 0 {
		return false
	}
	n.partsSeen[w] |= bit
	return true
}
