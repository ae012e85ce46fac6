package sim

import "github.com/valnet/valnet/internal/action"

// Spent votes. Over a random topology a vote reaches a node from several
// peers (each relays it to the peers that lack it when it arrives,
// relayVote), and ~85 % of the vote messages a node gets are copies it
// has already counted. Such a copy changes nothing when handled: addVote
// drops it (VoteSet.AddVote: a duplicate is not added) before any work.
// Yet a copy that came while the node was busy waited in its queue and
// came back through the event queue once the node was free. A spent vote
// is dropped when it arrives instead. That is exact, the same events
// byte for byte (TestSpentVotesAreExact), because:
//
//   - a node's vote sets of its height only grow, and its height only
//     rises, so a vote spent on arrival is still spent when the node would
//     have taken it: unless the node starts its height over (a restart
//     resets its votes) or catches up (a fetched LastCommit replaces its
//     own), so not in runs with node faults, nor while a catch-up is
//     queued (one queued later is due after the copy: it waits behind);
//   - handling it would set only the node's clock and busy time to the
//     copy's time, which nothing reads before the node's next event but
//     as max(clock, now); and the time it last handled an event, which
//     only takeDown reads, a node fault.
//
// dropSpent switches it on (a test compares runs without it).
var dropSpent = true

// spendsVotes: the run may drop spent votes (no node is ever taken down
// or restarted).
func spendsVotes(faults []string) bool {
	if !dropSpent {
		return false
	}
	for _, a := range faults {
		switch a {
		case action.NodeStop, action.NodeStart, action.NodeKill, action.NodePause, action.NodeResume, action.NodeRestart:
			return false
		}
	}
	return true
}

// spentVote: vote message e can no longer change n (addVote would drop
// it): n has counted it, or it is of a height n has left and not a
// precommit n may still count into its LastCommit.
func (w *world) spentVote(n *node, e *event) bool {
	precommit := e.mk == mPrecommit
	switch {
	case e.mk != mPrevote && !precommit, e.height > n.h:
		return false
	case e.height == n.h:
		if int(e.round) >= len(n.votes.rounds) {
			return false // a round it has no votes of yet
		}
		rv := &n.votes.rounds[e.round]
		vs := rv.prevotes
		if precommit {
			vs = rv.precommits
		}
		return vs.has(e.from)
	case e.height+1 == n.h && precommit:
		// addVote's LastCommit branch: counted only in new_height, into
		// the LastCommit of its round, once
		return n.step != stepNewHeight || n.lastCommit == nil || e.round != n.lastCommitRound || n.lastCommit.has(e.from)
	}
	return true // a height n has left: ignored
}
