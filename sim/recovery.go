package sim

// Nodes that were out of reach come back: a restarted node replays its
// home and then fetches the blocks it lacks from a peer (blocksync /
// consensus catch-up), one block per round trip plus catchup_cost, and
// joins consensus at the height the others are at; two nodes whose link
// opens again send each other what the other lacks.

// restarted: node n runs again (after node-start, node-resume, the end of
// a stop, kill or pause, or a node-restart). A node-restart's node job
// waits for it (e.report()): its end event says the node runs again.
func (w *world) restarted(n *node, e event) {
	n.up = true
	n.t = max(n.t, w.now)
	w.timeline.report(e.report())
	// The WAL restores the round state of its height: the node starts its
	// height over, its own votes kept by the signer's high-water mark.
	h := n.h
	if n.step == stepCommit {
		// it had decided but not applied: apply now
		w.finalizeCommit(n)
	} else {
		w.newHeight(n, h, n.t)
		w.scheduleTimeout(n, n.startTime-n.t, n.h, 0, stepNewHeight)
	}
	w.neighbours(n.i, func(j int32) { w.reconnect(j, n.i) })
	w.scheduleCatchUp(n)
}

// reconnect: the link a -> b is open again (both ways are opened by the
// caller as the fault says); a sends b what b lacks of b's height, and b
// catches up if a is ahead.
func (w *world) reconnect(a, b int32) {
	src, dst := w.nodes[a], w.nodes[b]
	if !src.up || !dst.up {
		return
	}
	if src.h > dst.h {
		w.scheduleCatchUp(dst)
		return
	}
	w.resync(a, b)
}

// scheduleCatchUp queues the fetch of n's next block from the first
// reachable peer that has committed it (one fetch at a time).
func (w *world) scheduleCatchUp(n *node) {
	if n.catchUpPending {
		return
	}
	var best int32 = -1
	w.neighbours(n.i, func(j int32) {
		p := w.nodes[j]
		if best < 0 && p.up && p.h > n.h && !w.net.link(j, n.i).blocked && !w.net.link(n.i, j).blocked {
			best = j
		}
	})
	if best < 0 {
		return
	}
	at := max(n.t, w.now)
	rtt := int64(0)
	if d := w.net.link(n.i, best).delay; d != nil {
		rtt += d.Draw().Nanoseconds()
	}
	if d := w.net.link(best, n.i).delay; d != nil {
		rtt += d.Draw().Nanoseconds()
	}
	n.catchUpPending = true
	w.q.push(event{at: at + rtt + w.p.CatchUpCost.Nanoseconds(), kind: evCatchUp, node: n.i, from: best, height: n.h})
}

// catchUp applies the fetched block of n's height and moves on; once no
// peer is ahead the node is in consensus with the others, and they send
// it what they have of its new height.
func (w *world) catchUp(n *node, e event) {
	n.catchUpPending = false
	if e.height != n.h {
		w.scheduleCatchUp(n) // it moved on by itself; more may be missing
		return
	}
	src := w.nodes[e.from]
	if src.h <= n.h {
		w.scheduleCatchUp(n)
		return
	}
	h := n.h
	n.t = max(n.t, w.now)
	w.committedBy(n, h, -1, noBlock)
	// The fetched block comes with its commit, the next proposer's
	// LastCommit if this node proposes next.
	n.lastCommit, n.lastCommitRound = nil, -1
	if c, ok := w.commits[h]; ok {
		n.lastCommit, n.lastCommitRound, n.lastCommitBlock = c.votes.clone(), c.round, c.block
	}
	w.newHeight(n, h+1, n.t)
	w.scheduleTimeout(n, n.startTime-n.t, n.h, 0, stepNewHeight)
	w.releaseHeld(n)
	w.scheduleCatchUp(n)
	w.neighbours(n.i, func(j int32) { w.resync(j, n.i) })
}
