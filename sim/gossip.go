package sim

import (
	"math/bits"
	"math/rand/v2"

	"github.com/valnet/valnet/latency"
)

// Gossip on a sparse topology (random, ring, explicit, sentries, seeds),
// as CometBFT's consensus reactor does it: each connection has a vote
// routine and a data routine (internal/consensus/reactor.go
// gossipVotesRoutine 646-704, gossipDataRoutine 590-644). A routine
// wakes, sends in one burst everything its peer lacks by what it knows of
// the peer (pickVoteToSend 887-937 and pickVoteCurrentHeight 939-1000 for
// votes; pickPartToSend 808-855, pickPartForCatchup 857-885 and the
// proposal for data), then sleeps peer_gossip_sleep_duration once it
// finds nothing (the calibration's gossip_sleep). The model wakes a
// routine only when it may find something (its node got a vote, a
// proposal or a part; its peer moved to a new height or round, or
// collects another block's parts; a link opened again): a routine
// asleep with nothing to send changes nothing.
//
// What a routine knows of its peer (PeerState):
//   - the peer's height, round and step as of one link delay ago (its
//     NewRoundStep messages): node.seen keeps each node's recent states
//     with the time it entered them;
//   - the votes it sent the peer, and the peer's votes as they are (its
//     HasVote messages, taken as instant: a vote is 180 bytes, and a
//     copy the peer has already is dropped unverified by
//     VoteSet.addVote);
//   - the parts it sent the peer, and the parts the peer had one link
//     delay ago (HasProposalBlockPart, reactor.go 525-536): a 64 KiB
//     part sent twice costs the link ~13 ms, so the lag is kept.
//
// A burst of votes is one message on the wire (serialised, flushed and
// delayed once: the MConnection writes them back to back); its votes
// are handled one after the other. Parts go one message each, serialised
// at the connection's rate, in an order drawn per burst (PickRandom).
//
// In a full mesh every node hears each vote from its voter and the model
// sends it there only (net.go deliver, broadcastVote): the Notes say so.

// conn is node i's connection to one peer: its two routines' state and
// what it has sent the peer.
type conn struct {
	lk *link // the link from -> to
	// rtyp: the median delay of the link to -> from (its typical), how
	// late from learns to's state; a copy, so that a wake-up does not
	// read that link's entry (linked keeps it)
	rtyp     int64
	from, to int32
	rev      int32 // the connection to -> from
	sentNext uint8 // the sent set to reuse next
	// sent: what the sent sets hold (sentKeyOf; 0: nothing), slot k's
	// bitset at gossip.sentSlot. Here, in the line a wake-up reads
	// anyway: the first 64 bytes of a conn are all a wake-up of the
	// vote routine reads of it.
	sent [sentSlots]uint64
	// the proposal sent for (propH, propR), and the parts sent of block
	// partsB of height partsH (bitset)
	propH     int64
	propR     int32
	partsB    int32
	partsH    int64
	sentParts []uint64
	_         [16]byte // to 128 bytes: a conn's first 64 in one line
}

// sentKeyOf packs a sent set's height, round and type into a word, with
// its lowest bit set (a used slot): heights below 2^32 and rounds below
// 2^30, which no run reaches (2^32 heights of 1 s are 136 years of
// virtual time).
func sentKeyOf(h int64, r int32, pc bool) uint64 {
	k := uint64(h)<<32 | uint64(uint32(r))<<2 | 1
	if pc {
		k |= 2
	}
	return k
}

// sentSlots is the number of sent sets a connection keeps.
const sentSlots = 4

// connBack is a connection's reverse connection and the median delay of
// its own link.
type connBack struct {
	rev int32
	typ int64
}

// A burst is the votes a routine sent in one wake-up, as bitsets: the
// receiver skips the ones it has with a word operation, as CometBFT's
// VoteSet.addVote drops a known vote before verifying it. It is one
// slice of words, segment after segment: a segment is the votes of one
// height, round, type and block (a LastCommit precommit is of the height
// before the peer's), two words of header (segHeader) and then the
// voters' bitset, g.words words. One slice, not a slice of headers and
// one of bits: the receiver reads it ~100 ms of virtual time after it
// was written, long out of cache, and one line was two misses.
type burst struct {
	words []uint64
	votes int // voters in all its bitsets
}

// segHeader packs a segment's height, round, block and type into two
// words; readSegHeader unpacks them.
func segHeader(h int64, round, block int32, pc bool) (uint64, uint64) {
	w1 := uint64(uint32(round)) | uint64(uint32(block))<<32
	if pc {
		w1 |= 1 << 31 // rounds stay far below 2^31
	}
	return uint64(h), w1
}

func readSegHeader(w0, w1 uint64) (h int64, round, block int32, pc bool) {
	return int64(w0), int32(uint32(w1) &^ (1 << 31)), int32(uint32(w1 >> 32)), w1&(1<<31) != 0
}

// roundState is a node's height, round and step, and when it got there.
type roundState struct {
	at   int64
	h    int64
	r    int32
	step uint8
}

const seenLen = 4

type gossip struct {
	conns []conn
	// first[i]: node i's connections are conns[first[i]:first[i+1]],
	// as net.peers[i] orders its peers (connsOf)
	first []int32
	// asleep[ch][i]: node i's routines on ch with no wake-up queued
	asleep [2][]int32
	// bursts in flight (an evMsg mVotes names one by arg), and free
	// slots
	bursts    []burst
	freeBurst []int32
	words     int // bitset words of a vote set
	// wake[ch][c]: connection c's routine's queued wake-up on ch; -1:
	// asleep. Dense, not in conn: armOut reads the wake-ups of all a
	// node's connections (consecutive indexes) at every vote the node
	// takes, and most calls end there; in conn each was a line of its
	// own, a fifth of a run's cache misses.
	wake [2][]int64
	// sentBits: the bitsets of the connections' sent sets (conn.sent),
	// g.words each, slot k of c at (c*sentSlots+k)*words
	sentBits []uint64
	// back[c]: connection c's reverse and its link's median delay, for
	// armIn, which reads them for all a node's connections; dense for
	// the same reason (linked keeps them)
	back []connBack
	// wakeHdr[ch]: the lane header of the routines' wake-ups on ch. A
	// wake-up is a lane message (32 bytes, written in order into ~2 ms
	// buckets) whose via names the connection: there are ~35,000 of
	// them a height at 175 validators, most of the run's events.
	wakeHdr [2]int32
	// burstHdr: the lane header of the bursts of votes; a burst's
	// message names its sender (via) and its slot (arg)
	burstHdr int32
	order    *rand.Rand
	perm     []int32
	warmSum  int64 // what warmBucket read, kept so that its reads are made
}

func newGossip(w *world) *gossip {
	g := &gossip{words: (w.n + 63) / 64, order: latency.NewStream(w.seed, "sim/part-order")}
	for ch := range g.wakeHdr {
		g.wakeHdr[ch] = w.q.standingHeader(event{kind: evGossip, step: uint8(ch)})
	}
	g.burstHdr = w.q.standingHeader(event{kind: evMsg, mk: mVotes})
	nn := len(w.nodes)
	g.first = make([]int32, nn+1)
	g.asleep[0], g.asleep[1] = make([]int32, nn), make([]int32, nn)
	for i := range nn {
		for _, j := range w.net.peers[i] {
			g.conns = append(g.conns, conn{from: int32(i), to: j, propH: -1, partsH: -1})
		}
		g.first[i+1] = int32(len(g.conns))
		g.asleep[0][i], g.asleep[1][i] = g.first[i+1]-g.first[i], g.first[i+1]-g.first[i]
	}
	for ch := range g.wake {
		g.wake[ch] = make([]int64, len(g.conns))
		for k := range g.wake[ch] {
			g.wake[ch][k] = -1
		}
	}
	g.sentBits = make([]uint64, len(g.conns)*sentSlots*g.words)
	g.back = make([]connBack, len(g.conns))
	for k := range g.conns {
		c := &g.conns[k]
		c.rev = g.connTo(c.to, c.from)
		c.lk = w.net.link(c.from, c.to)
	}
	for k := range g.conns {
		g.linked(int32(k))
	}
	w.q.lane.warm = w.warmBucket
	return g
}

// warmBucket reads, for each message of a lane bucket about to be
// handled, the first of what handling it reads: a wake-up's connection,
// link and two nodes, a burst's words and its receiver. The data of the
// ~100 messages of a bucket is out of the core's caches by the time they
// are handled (the lane and the bursts stream ~3 MB a height through
// them), and handled one after the other each miss was waited for
// alone; these reads are independent of one another, so the core has
// many of them in flight at once (docs/bench.md).
func (w *world) warmBucket(ms []laneMsg) {
	g := w.g
	var sum int64
	for k := range ms {
		m := &ms[k]
		switch m.hdr {
		case g.burstHdr:
			if ws := g.bursts[m.arg].words; len(ws) > 0 {
				sum += int64(ws[0]) + w.nodes[m.node].h
			}
		case g.wakeHdr[chVotes], g.wakeHdr[chData]:
			c := &g.conns[m.via]
			sum += c.lk.nextCheck[0] + c.lk.last[1] + w.nodes[c.from].h + w.nodes[c.to].seen[0].at
			if m.hdr == g.wakeHdr[chVotes] {
				sum += int64(g.sentBits[int(m.via)*sentSlots*g.words]) // pickFrom's sent sets
			}
		}
	}
	g.warmSum += sum
}

// linked copies connection c's link's median delay where the wake-ups
// read it: c's back entry and its reverse's rtyp. Run again when the
// link's setting changes (a latency fault).
func (g *gossip) linked(c int32) {
	typ := g.conns[c].lk.typical
	rev := g.conns[c].rev
	g.back[c] = connBack{rev: rev, typ: typ}
	g.conns[rev].rtyp = typ
}

// relinked: the link from -> to has a new setting.
func (g *gossip) relinked(from, to int32) {
	if c := g.connTo(from, to); c >= 0 {
		g.linked(c)
	}
}

// connsOf is the range of node i's connections in conns.
func (g *gossip) connsOf(i int32) (lo, hi int32) { return g.first[i], g.first[i+1] }

// connTo is node from's connection to peer to; -1: none.
func (g *gossip) connTo(from, to int32) int32 {
	lo, hi := g.connsOf(from)
	for c := lo; c < hi; c++ {
		if g.conns[c].to == to {
			return c
		}
	}
	return -1
}

// noteState records n's round state as it is now (its NewRoundStep).
func (n *node) noteState() {
	last := &n.seen[0]
	if last.h == n.h && last.r == n.r && last.step == n.step {
		return
	}
	copy(n.seen[1:], n.seen[:seenLen-1])
	n.seen[0] = roundState{at: n.t, h: n.h, r: n.r, step: n.step}
}

// stateAt is n's round state as a peer knows it at t: the last one it
// entered by t (the oldest kept, if none).
func (n *node) stateAt(t int64) roundState {
	for k := range seenLen - 1 {
		if n.seen[k].at <= t && n.seen[k].h != 0 {
			return n.seen[k]
		}
	}
	if n.seen[seenLen-1].h == 0 {
		return n.seen[0]
	}
	return n.seen[seenLen-1]
}

// armOut wakes n's routines on ch that sleep: n has something new (a
// vote, the proposal, a part) or moved on. Each wakes at its next
// look, at or after t.
func (w *world) armOut(n *node, ch int, t int64) {
	g := w.g
	if g.asleep[ch][n.i] == 0 {
		return
	}
	t = max(t, w.now)
	limit := t + w.net.sleep
	lo, hi := g.connsOf(n.i)
	for k, wk := range g.wake[ch][lo:hi] {
		if wk >= 0 && wk < limit {
			continue // arm's first test, done here: most connections end at it
		}
		w.arm(lo+int32(k), ch, t)
	}
}

// armIn wakes the routines of n's peers towards n on ch when n's new
// round state (or part set) reaches them, a link delay after now.
func (w *world) armIn(n *node, ch int) {
	g := w.g
	lo, hi := g.connsOf(n.i)
	for _, b := range g.back[lo:hi] {
		w.arm(b.rev, ch, n.t+b.typ)
	}
}

// arm queues the wake-up of connection c's routine on ch at its first
// look at or after t, unless one is queued by then.
func (w *world) arm(ci int32, ch int, t int64) {
	g := w.g
	wake := &g.wake[ch][ci]
	t = max(t, w.now)
	if *wake >= 0 && *wake < t+w.net.sleep {
		// The queued wake-up is a look on the link's grid at or after
		// its last look (wakeOn); one before t+sleep is no later than
		// the first look at or after t. Most calls end here, without
		// wakeOn's division.
		return
	}
	c := &g.conns[ci]
	at := w.net.wakeOn(c.lk, t, ch)
	if *wake >= 0 && *wake <= at {
		return
	}
	if *wake < 0 {
		g.asleep[ch][c.from]--
	}
	*wake = at
	w.q.pushMsg(g.wakeHdr[ch], at, c.from, ci)
}

// gossipWake runs a routine's wake-up: it sends its peer what the peer
// lacks, as far as it knows.
func (w *world) gossipWake(e *event) {
	g := w.g
	c := &g.conns[e.via] // the lane's sender field names the connection
	ch := int(e.step)
	if wake := &g.wake[ch][e.via]; *wake == e.at {
		*wake = -1
		g.asleep[ch][c.from]++
	}
	i, j := w.nodes[c.from], w.nodes[c.to]
	if !i.up || !j.up || w.net.blocked > 0 && c.lk.blocked {
		return // a reconnect wakes it again (resync)
	}
	view := j.stateAt(e.at - c.rtyp)
	if ch == chVotes {
		w.sendVotes(i, j, c, int(e.via), e.at, view)
		return
	}
	w.sendData(i, j, c, e.at, view)
}

// sendVotes sends j, in one burst, the votes i has that j lacks, of the
// sets pickVoteToSend looks at for j's round state view: its LastCommit
// (j in new_height, or one height behind), the prevotes of j's POL round
// and round and the precommits of its round (same height), the seen
// commit of j's height (further behind).
func (w *world) sendVotes(i, j *node, c *conn, ci int, at int64, view roundState) {
	g := w.g
	bi := g.newBurst()
	b := &g.bursts[bi]
	switch {
	case view.h == i.h:
		if view.step == stepNewHeight && i.lastCommit != nil {
			w.pickFrom(b, c, ci, j, i.lastCommit, i.h-1, i.lastCommitRound, true)
		}
		if view.r <= i.r {
			pol := int32(-1)
			if j.h == i.h && j.proposal != noBlock {
				pol = j.polRound
			}
			if pol >= 0 && view.step <= stepPropose && int(pol) < len(i.votes.rounds) {
				w.pickFrom(b, c, ci, j, i.votes.set(pol, false), i.h, pol, false)
			}
			if int(view.r) < len(i.votes.rounds) {
				pv, pc := i.votes.set(view.r, false), i.votes.set(view.r, true)
				if view.step <= stepPrevoteWait {
					w.pickFrom(b, c, ci, j, pv, i.h, view.r, false)
					w.pickFrom(b, c, ci, j, pc, i.h, view.r, true)
				} else {
					w.pickFrom(b, c, ci, j, pc, i.h, view.r, true)
					w.pickFrom(b, c, ci, j, pv, i.h, view.r, false)
				}
			}
		}
	case view.h == i.h-1:
		if i.lastCommit != nil {
			w.pickFrom(b, c, ci, j, i.lastCommit, view.h, i.lastCommitRound, true)
		}
	case view.h < i.h-1:
		if sc, ok := w.commits[view.h]; ok {
			w.pickFrom(b, c, ci, j, sc.votes, view.h, sc.round, true)
		}
	}
	if len(b.words) == 0 {
		g.release(bi)
		return
	}
	arrive, ok := w.net.sendOn(c.lk, at, b.votes*voteBytes, chVotes)
	if !ok {
		g.release(bi)
		return
	}
	w.q.pushMsgArg(g.burstHdr, arrive, j.i, i.i, bi)
}

// pickFrom adds to burst b the votes of src (i's votes of height h,
// round r, type pc) that j lacks and c has not sent it, one segment per
// block, and marks them sent.
func (w *world) pickFrom(b *burst, c *conn, ci int, j *node, src *voteSet, h int64, r int32, pc bool) {
	if src == nil || src.count == 0 {
		return
	}
	has, all := w.votesOf(j, h, r, pc)
	if all {
		return
	}
	g := w.g
	sent := g.sentSet(c, ci, h, r, pc)
	for _, bp := range src.byBlock {
		w0, w1 := segHeader(h, r, bp.block, pc)
		head := len(b.words)
		b.words = append(b.words, w0, w1)
		votes := 0
		for k, word := range bp.voters {
			m := word &^ sent[k]
			if has != nil {
				m &^= has[k]
			}
			b.words = append(b.words, m)
			votes += bits.OnesCount64(m)
		}
		if votes == 0 {
			b.words = b.words[:head]
			continue
		}
		for k := range bp.voters {
			sent[k] |= b.words[head+2+k]
		}
		b.votes += votes
	}
}

// votesOf is who of height h, round r, type pc node j has (nil: none),
// or all when j can use none of them any more (it has moved past them).
func (w *world) votesOf(j *node, h int64, r int32, pc bool) (has []uint64, all bool) {
	switch {
	case j.h == h:
		if int(r) >= len(j.votes.rounds) {
			return nil, false
		}
		return j.votes.set(r, pc).have, false
	case j.h == h+1 && pc && j.step == stepNewHeight && j.lastCommit != nil && j.lastCommitRound == r:
		return j.lastCommit.have, false // addVote takes it into the LastCommit
	case j.h < h:
		return nil, false
	}
	return nil, true
}

// sentSet is the bitset of the votes of h, r, pc that c has sent; a new
// key takes the oldest slot.
func (g *gossip) sentSet(c *conn, ci int, h int64, r int32, pc bool) []uint64 {
	key := sentKeyOf(h, r, pc)
	for k, s := range c.sent {
		if s == key {
			return g.sentSlot(ci, k)
		}
	}
	k := int(c.sentNext)
	c.sentNext = (c.sentNext + 1) % sentSlots
	c.sent[k] = key
	bits := g.sentSlot(ci, k)
	clear(bits)
	return bits
}

// sentSlot is the bitset of connection ci's sent set k.
func (g *gossip) sentSlot(ci, k int) []uint64 {
	at := (ci*sentSlots + k) * g.words
	return g.sentBits[at : at+g.words : at+g.words]
}

// sendData sends j the proposal of its round if it lacks it, then the
// parts of the block j collects that i has and j lacks (pickPartToSend),
// or, j being behind, the parts of the block j's height committed
// (pickPartForCatchup).
func (w *world) sendData(i, j *node, c *conn, at int64, view roundState) {
	switch {
	case view.h == i.h:
		block := j.partsFor
		if view.r == i.r && i.proposal != noBlock && i.r == j.r && j.h == i.h && j.proposal == noBlock &&
			(c.propH != i.h || c.propR != i.r) {
			// the proposal first; the peer then has its part-set header
			c.propH, c.propR = i.h, i.r
			arrive, ok := w.net.sendOn(c.lk, at, proposalBytes, chData)
			if !ok {
				return
			}
			w.q.push(event{at: arrive, kind: evMsg, mk: mProposal, node: j.i, via: i.i, from: i.i,
				height: i.h, round: i.r, block: i.proposal, arg: i.polRound})
			block = i.proposal
		}
		if block == noBlock || block != i.partsFor || j.h != i.h || j.propBlock == block {
			return
		}
		w.sendParts(i, j, c, at, i.h, block, func(k int32) bool {
			return i.propBlock == block || int(k/64) < len(i.partsSeen) && i.partsSeen[k/64]&(1<<(k%64)) != 0
		})
	case view.h < i.h:
		sc, ok := w.commits[view.h]
		if !ok || j.h != view.h || j.partsFor != sc.block || j.propBlock == sc.block {
			return
		}
		w.sendParts(i, j, c, at, view.h, sc.block, func(int32) bool { return true })
	}
}

// sendParts sends j the parts of block (of height h) that i has and j
// lacks as far as c knows: not sent by c, and not announced by j a link
// delay ago. They go in an order drawn for the burst, serialised one
// after the other on the data channel.
func (w *world) sendParts(i, j *node, c *conn, at, h int64, block int32, iHas func(int32) bool) {
	b := w.block(h, block)
	if b == nil {
		return // settled long ago: a node that far behind fetches whole blocks (catchUp)
	}
	if c.partsH != h || c.partsB != block {
		c.partsH, c.partsB = h, block
		clear(c.sentParts)
	}
	if need := int(b.parts+63) / 64; len(c.sentParts) < need {
		c.sentParts = append(c.sentParts, make([]uint64, need-len(c.sentParts))...)
	}
	known := at - c.rtyp
	g := w.g
	g.perm = g.perm[:0]
	for k := int32(0); k < b.parts; k++ {
		bit := uint64(1) << (k % 64)
		if c.sentParts[k/64]&bit != 0 || !iHas(k) {
			continue
		}
		if k < int32(len(j.partAt)) && j.partAt[k] != 0 && j.partAt[k] <= known {
			continue
		}
		g.perm = append(g.perm, k)
	}
	if len(g.perm) == 0 {
		return
	}
	g.order.Shuffle(len(g.perm), func(x, y int) { g.perm[x], g.perm[y] = g.perm[y], g.perm[x] })
	for _, k := range g.perm {
		arrive, ok := w.net.sendOn(c.lk, at, partSize(b, k), chData)
		if !ok {
			return
		}
		c.sentParts[k/64] |= 1 << (k % 64)
		w.q.push(event{at: arrive, kind: evMsg, mk: mPart, node: j.i, via: i.i, from: i.i,
			height: h, round: b.round, block: block, arg: k})
	}
}

func (g *gossip) newBurst() int32 {
	if k := len(g.freeBurst); k > 0 {
		bi := g.freeBurst[k-1]
		g.freeBurst = g.freeBurst[:k-1]
		b := &g.bursts[bi]
		b.words, b.votes = b.words[:0], 0
		return bi
	}
	g.bursts = append(g.bursts, burst{})
	return int32(len(g.bursts) - 1)
}

func (g *gossip) release(bi int32) { g.freeBurst = append(g.freeBurst, bi) }

// handleBurst hands the votes of a burst to addVote one after the other,
// as the node's receive routine takes them off its queue; a vote n has
// already costs nothing (a word operation skips it).
func (w *world) handleBurst(n *node, e *event) {
	g := w.g
	b := &g.bursts[e.arg]
	ev := event{at: e.at, kind: evMsg, node: n.i, via: e.via}
	for at := 0; at < len(b.words); at += 2 + g.words {
		h, round, block, pc := readSegHeader(b.words[at], b.words[at+1])
		ev.mk, ev.height, ev.round, ev.block = mPrevote, h, round, block
		if pc {
			ev.mk = mPrecommit
		}
		voters := b.words[at+2 : at+2+g.words]
		// which of these n has: the same set until a vote moves n to
		// another height or step (its votes of this height are then
		// another set, or of no use)
		has, all := w.votesOf(n, h, round, pc)
		nh, nstep := n.h, n.step
		for k, m := range voters {
			if m == 0 {
				continue
			}
			if n.h != nh || n.step != nstep {
				has, all = w.votesOf(n, h, round, pc)
				nh, nstep = n.h, n.step
			}
			if all {
				break
			} else if has != nil {
				m &^= has[k]
			}
			for m != 0 {
				ev.from = int32(k*64 + bits.TrailingZeros64(m))
				m &= m - 1
				w.addVote(n, &ev)
			}
		}
	}
	g.release(e.arg)
}

// dropped: event e is not handled (its node is down, its link cut): a
// burst's slot is free again.
func (w *world) dropped(e *event) {
	if e.kind == evMsg && e.mk == mVotes {
		w.g.release(e.arg)
	}
}
