package sim

// Quiet votes. At 1,000 validators a node gets ~1,000 votes a phase, and
// most come while its consensus routine is busy with the one before: each
// then waited in the node's queue and came back through the event queue
// when the node was free, the bulk of the model's work. Most of them are
// quiet: adding them to the node's vote set crosses no threshold, so the
// node does nothing but count the vote and spend vote_cost. Such a vote is
// handled at once, at the time the node is free, instead of going round
// the queue. That is exact, the same events byte for byte
// (testdata/events.golden pins runs where it happens), when:
//
//   - it is the next event the node would handle: nothing of the node's
//     waits before it, and nothing can still come before it (every event
//     queued from now on is due now or later, and a waiting event came
//     before now, or it is the one being dispatched now);
//   - handling it changes only what no one else reads before the node's
//     next event: its vote sets and its own clock. Another node reads a
//     node's vote sets of its height only to gossip on a sparse topology
//     (gossip.go's votesOf) and to resync after a fault (resync); its LastCommit
//     when it sends it to a node one height behind (catchUpOnly), which
//     asks lastCommitHas: a precommit counted ahead of its time is not
//     there yet. Vote events are recorded only up to VoteEventsMax
//     validators; shared cores are a queue of all nodes' work. So bursts
//     run in a full mesh, without faults, vote events or shared cores
//     (world.burst).
//
// handleQuiet checks that the vote was quiet: a vote judged quiet that
// queued anything or moved the node's step is a bug in quietVote, and
// panics rather than give a run that is not the model's.

// quietBursts switches bursts on (a test compares runs without them).
var quietBursts = true

// quietVote reports whether vote e, handled by n in its current state,
// would only be counted (or ignored). It follows addVote branch by
// branch: a branch that would act must be one whose enter* function
// returns at once for the step n is in.
func (w *world) quietVote(n *node, e *event) bool {
	if e.kind != evMsg || e.proxy || e.mk != mPrevote && e.mk != mPrecommit {
		return false
	}
	precommit := e.mk == mPrecommit
	switch {
	case e.height > n.h:
		return false // held for its height
	case e.height+1 == n.h && precommit:
		return true // a LastCommit precommit: counted (see lastCommitHas) or ignored
	case e.height != n.h:
		return true // ignored
	}
	vs := n.votes.set(e.round, precommit)
	if vs.has(e.from) {
		return true // a duplicate
	}
	p := w.power[e.from]
	anyAfter := (vs.sum+p)*3 > w.total*2
	if precommit {
		return !anyAfter // every precommit branch of addVote needs +2/3 of any
	}
	// the prevote's set once it is counted: a majority for mb?
	mb, major := vs.majority(w.total)
	if !major && (vs.powerFor(e.block)+p)*3 > w.total*2 {
		mb, major = e.block, true
	}
	if major && mb != noBlock && n.validRound < e.round && e.round == n.r {
		return false // a new valid block
	}
	switch {
	case n.r < e.round && anyAfter:
		return false // enterNewRound
	case n.r == e.round && n.step >= stepPrevote:
		if major && (mb == noBlock || w.proposalCompleteWith(n, e.round, major)) {
			return n.step >= stepPrecommit // enterPrecommit
		}
		return !anyAfter || n.step >= stepPrevoteWait // enterPrevoteWait
	case n.proposal != noBlock && n.polRound >= 0 && n.polRound == e.round:
		return !w.proposalCompleteWith(n, e.round, major) || n.step >= stepPrevote // enterPrevote
	}
	return true
}

// proposalCompleteWith is proposalComplete once a prevote of round r is
// counted, which makes round r's prevotes a majority or not (major).
func (w *world) proposalCompleteWith(n *node, r int32, major bool) bool {
	if n.polRound != r || n.proposal == noBlock || n.propBlock != n.proposal {
		return w.proposalComplete(n)
	}
	return major
}

// quietState is what a quiet vote must leave as it was: what addVote's
// branches change.
type quietState struct {
	seq                      uint64
	h                        int64
	r, propBlock, validRound int32
	step                     uint8
	triggeredPC              bool
}

func (w *world) quietState(n *node) quietState {
	return quietState{w.q.seq, n.h, n.r, n.propBlock, n.validRound, n.step, n.triggeredPC}
}

// handleQuiet handles quiet vote e at time at, when n is free.
func (w *world) handleQuiet(n *node, e *event, at int64) {
	before := w.quietState(n)
	lc, lcCount := n.lastCommit, 0
	if lc != nil {
		lcCount = lc.count
	}
	n.t, n.lastAt = at, at
	w.handleMsg(n, e)
	n.busy = n.t
	w.quietHandled++
	if w.quietState(n) != before {
		panic("sim: a vote judged quiet did more than count")
	}
	if lc != nil && lc.count != lcCount {
		// counted into the LastCommit before its time: hidden from
		// peers until then
		if n.lcAheadOf != lc {
			n.lcAhead, n.lcAheadOf = n.lcAhead[:0], lc
		}
		// they come in key order: those handled by now are a prefix
		i := 0
		for i < len(n.lcAhead) && !w.notYet(n.lcAhead[i]) {
			i++
		}
		if i > 0 {
			n.lcAhead = n.lcAhead[:copy(n.lcAhead, n.lcAhead[i:])]
		}
		n.lcAhead = append(n.lcAhead, quietKey{v: e.from, at: at, due: e.due, seq: e.seq})
	}
}

// quietKey is a quiet vote's place in the queue had it gone through it:
// validator v's vote, handled at at (due, seq).
type quietKey struct {
	v       int32
	at, due int64
	seq     uint64
}

// notYet: the vote would not have been handled yet; the event handled
// now has key (now, curDue, curSeq).
func (w *world) notYet(k quietKey) bool {
	if k.at != w.now {
		return k.at > w.now
	}
	if k.due != w.curDue {
		return k.due > w.curDue
	}
	return k.seq > w.curSeq
}

// lastCommitHas is p.lastCommit.has(v) as it is now: without precommits
// counted ahead of their time.
func (w *world) lastCommitHas(p *node, v int32) bool {
	if !p.lastCommit.has(v) {
		return false
	}
	if p.lcAheadOf == p.lastCommit {
		for _, a := range p.lcAhead {
			if a.v == v && w.notYet(a) {
				return false
			}
		}
	}
	return true
}
