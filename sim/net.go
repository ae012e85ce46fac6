package sim

import (
	"math/rand/v2"

	"github.com/valnet/valnet/internal/links"
	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/network"
	"github.com/valnet/valnet/scenarios"
)

// The network in virtual time. A message from i to j leaves when i's
// gossip routine for j next looks (the routine sleeps
// peer_gossip_sleep_duration whenever it found nothing to send: reactor.go
// gossipVotesRoutine, gossipDataRoutine), is serialised at the link's
// bandwidth (at most p2p send_rate), waits for the connection's throttled
// flush (flush_throttle_timeout), and arrives after the link's delay,
// drawn from the same model the fabric uses. A connection keeps order.

// Channels: each peer has a vote routine and a data routine.
const (
	chVotes = 0
	chData  = 1
)

// Wire sizes of consensus messages, close to their protobuf encodings.
const (
	voteBytes     = 180
	proposalBytes = 220
	partProof     = 300 // a part's Merkle proof and framing
)

// partSize is the wire size of part k of a block: 64 KiB, the last one
// what is left (a block the model no longer has: a full part).
func partSize(b *blockInfo, k int32) int {
	if b == nil || k < b.parts-1 {
		return blockPartBytes + partProof
	}
	return b.bytes - int(b.parts-1)*blockPartBytes + partProof
}

type link struct {
	delay   latency.Model // nil: 0
	rate    float64       // bytes per second: the link's bandwidth, capped at send_rate
	blocked bool
	// per channel (vote, data): the routine's wake-up grid i->j, the
	// serialiser, the pending flush and the last arrival (order). An
	// MConnection sends its channels' packets interleaved by priority
	// (p2p/conn/connection.go sendSomePacketMsgs: the channel with the
	// least recently sent per priority goes next, 1 KiB packets), so a
	// vote does not wait behind a block's parts: each channel has its
	// own queue and order here.
	nextCheck [2]int64
	free      [2]int64
	flushAt   [2]int64
	last      [2]int64
	// typical is the link's median delay (latency.Typical): how late
	// the sender's state (its NewRoundStep, HasVote) reaches the other
	// end, for the gossip routines' view of their peer (gossip.go).
	typical int64
	// mempool: bytes per second the mempool channel sends over this
	// connection (the load's transactions, loadModel.gossipBytes)
	mempool float64
}

// Channel priorities (internal/consensus/reactor.go GetChannels 160-184:
// data 10, votes 7; mempool/reactor.go 85: mempool 5). An MConnection
// sends next from the channel with the least recently-sent bytes over
// its priority (p2p/conn/connection.go sendPacketMsg 552-566), so a
// consensus channel that has data to send while the mempool channel also
// has gets at least its priority's share against the mempool's.
var mempoolShareAgainst = [2]float64{chVotes: 5.0 / (5 + 7), chData: 5.0 / (5 + 10)}

type netModel struct {
	n     int
	mesh  bool
	peers [][]int32 // sparse topologies: whom each node gossips with
	links []link    // n*n, at at(from, to)
	// slot: where the link from -> to sits in links (and fast), nil in a
	// full mesh (from*n + to). On a sparse topology the links between
	// peers come first, so the few thousand a run sends over sit
	// together and not spread over n*n entries (1,000 nodes' links are
	// ~100 MB: a send's link missed the cache, 15 % of a 1,000-node
	// run); the others follow, for faults and catch-up.
	slot  []int32
	sleep int64
	flush int64
	cap   float64
	rng   *rand.Rand // flush timer phases (the event loop's own: no lock)
	// fast: the links' normal delays drawn in place (fastdraw.go), n*n
	// at the same slots as links, beside them rather than in them (a mesh of plain
	// links has none, and a larger link entry slowed its sends); nil:
	// none. A link drawing in place has delay &fast[at(from, to)].
	fast []fastNormal
	// blocked counts the links a partition or isolation has cut: while
	// none is, a message's arrival does not look its link up (1,000
	// nodes' links are ~100 MB; a lookup per message cost 2.5x the run).
	blocked int
}

func (nm *netModel) link(from, to int32) *link { return &nm.links[nm.at(from, to)] }

// at is the slot of the link from -> to in links and fast.
func (nm *netModel) at(from, to int32) int {
	k := int(from)*nm.n + int(to)
	if nm.slot != nil {
		return int(nm.slot[k])
	}
	return k
}

// placeLinks puts the links between peers first (netModel.slot).
func (nm *netModel) placeLinks() {
	n := nm.n
	nm.slot = make([]int32, n*n)
	for k := range nm.slot {
		nm.slot[k] = -1
	}
	next := int32(0)
	for i, ps := range nm.peers {
		for _, j := range ps {
			if k := i*n + int(j); nm.slot[k] < 0 {
				nm.slot[k] = next
				next++
			}
		}
	}
	for k := range nm.slot {
		if nm.slot[k] < 0 {
			nm.slot[k] = next
			next++
		}
	}
}

// setBlocked cuts or heals the link from → to, keeping the count of cut
// links beside the flags it counts.
func (nm *netModel) setBlocked(from, to int32, blocked bool) {
	lk := nm.link(from, to)
	if lk.blocked == blocked {
		return
	}
	lk.blocked = blocked
	if blocked {
		nm.blocked++
	} else {
		nm.blocked--
	}
}

func newNet(p Params, nw scenarios.NetworkPlan, names []string, all map[links.Pair]network.Link, peers map[string][]string, mesh bool, seed int64) *netModel {
	n := len(names)
	nm := &netModel{n: n, mesh: mesh, links: make([]link, n*n), sleep: p.GossipSleep.Nanoseconds(),
		flush: p.FlushThrottle.Nanoseconds(), cap: p.SendRate}
	// Each routine started when its peer connected: its wake-ups are at
	// its own phase of the sleep, drawn from the run seed.
	if !mesh {
		idx := map[string]int32{}
		for i, name := range names {
			idx[name] = int32(i)
		}
		nm.peers = make([][]int32, n)
		for i, name := range names {
			for _, p := range peers[name] {
				nm.peers[i] = append(nm.peers[i], idx[p])
			}
		}
		nm.placeLinks()
	}
	phases := latency.NewRand(seed, "sim/gossip-phase")
	nm.rng = latency.NewStream(seed, "sim/flush")
	for i, from := range names {
		for j, to := range names {
			if i == j {
				continue
			}
			nm.setLink(int32(i), int32(j), all[links.Pair{from, to}])
			lk := nm.link(int32(i), int32(j))
			for ch := range lk.nextCheck {
				lk.nextCheck[ch] = int64(phases.Float64() * float64(nm.sleep))
			}
		}
	}
	nm.drawInPlace(nw, names, seed)
	return nm
}

// drawInPlace makes every link whose delay is a plain normal draw it in
// place (fastdraw.go), when a sample of them (the first links and every
// overridden one) draws as a fresh resolve's models do.
func (nm *netModel) drawInPlace(nw scenarios.NetworkPlan, names []string, seed int64) {
	var sample [][2]string
	for _, o := range nw.Links {
		sample = append(sample, [2]string{o.From, o.To})
	}
	for i := 0; i < len(names) && len(sample) < len(nw.Links)+8; i++ {
		for j := 0; j < len(names) && len(sample) < len(nw.Links)+8; j++ {
			if i != j {
				if _, _, ok := fastNormalOf(nm.link(int32(i), int32(j)).delay); ok {
					sample = append(sample, [2]string{names[i], names[j]})
				}
			}
		}
	}
	resolve := func(from, to string) latency.Model {
		all, err := links.Resolve(nw, []string{from, to}, seed)
		if err != nil {
			return nil
		}
		return all[links.Pair{from, to}].Latency
	}
	if len(sample) == len(nw.Links) || !fastDrawsMatch(sample, seed, resolve) {
		return // none to draw in place, or they would not draw the same
	}
	nm.fast = make([]fastNormal, len(nm.links))
	for i, from := range names {
		for j, to := range names {
			lk := nm.link(int32(i), int32(j))
			if mean, sd, ok := fastNormalOf(lk.delay); i != j && ok {
				f := &nm.fast[nm.at(int32(i), int32(j))]
				f.init(mean, sd, seed, from, to)
				lk.delay = f
			}
		}
	}
}

// setLink gives the directed link its setting (latency and bandwidth).
func (nm *netModel) setLink(from, to int32, l network.Link) {
	lk := nm.link(from, to)
	lk.delay = l.Latency
	lk.typical = 0
	if lk.delay != nil {
		lk.typical = latency.Typical(lk.delay).Nanoseconds()
	}
	latency.MakeSerial(lk.delay) // built for the sim alone, drawn by its loop alone
	lk.rate = nm.cap
	if l.Bandwidth > 0 && l.Bandwidth < lk.rate {
		lk.rate = l.Bandwidth
	}
}

// wake is when from's routine for to on channel ch next looks for
// something to send at or after t (no state changes).
func (nm *netModel) wake(from, to int32, t int64, ch int) int64 {
	return nm.wakeOn(nm.link(from, to), t, ch)
}

// wakeOn is wake for the link lk.
func (nm *netModel) wakeOn(lk *link, t int64, ch int) int64 {
	s := lk.nextCheck[ch]
	if t > s {
		s += (t - s + nm.sleep - 1) / nm.sleep * nm.sleep
	}
	return s
}

// send is when a message of size bytes, ready at t on channel ch, reaches
// to over from's link; false when the link is blocked.
func (nm *netModel) send(from, to int32, t int64, size int, ch int) (int64, bool) {
	return nm.sendOn(nm.link(from, to), t, size, ch)
}

// sendOn is send over the link lk.
func (nm *netModel) sendOn(lk *link, t int64, size int, ch int) (int64, bool) {
	if lk.blocked {
		return 0, false
	}
	s := lk.nextCheck[ch]
	if t > s {
		// asleep since s: it looks again every sleep
		s += (t - s + nm.sleep - 1) / nm.sleep * nm.sleep
	}
	lk.nextCheck[ch] = s
	start := max(s, lk.free[ch])
	rate := lk.rate
	if lk.mempool > 0 {
		// the mempool channel takes what it sends, up to its share
		rate -= min(lk.mempool, lk.rate*mempoolShareAgainst[ch])
	}
	lk.free[ch] = start + int64(float64(size)/rate*1e9)
	if lk.flushAt[ch] < lk.free[ch] {
		// The connection's flush timer is set by every write, consensus
		// chatter (HasVote, NewRoundStep) included, which the model does
		// not send: it fires somewhere within flush_throttle.
		lk.flushAt[ch] = lk.free[ch] + int64(nm.rng.Float64()*float64(nm.flush))
	}
	arrive := lk.flushAt[ch]
	if lk.delay != nil {
		arrive += lk.delay.Draw().Nanoseconds()
	}
	arrive = max(arrive, lk.last[ch])
	lk.last[ch] = arrive
	return arrive, true
}

// neighbours are whom node i sends to: everyone in a mesh, its peers
// otherwise.
func (w *world) neighbours(i int32, f func(j int32)) {
	if w.net.mesh {
		for j := int32(0); j < int32(len(w.nodes)); j++ {
			if j != i {
				f(j)
			}
		}
		return
	}
	for _, j := range w.net.peers[i] {
		f(j)
	}
}

// deliver sends a message from n to j if both are up and the link is
// open.
func (w *world) deliver(from *node, j int32, e *event, size int, ch int) {
	to := w.nodes[j]
	if !from.up || !to.up {
		return
	}
	if to.h < e.height || to.h == e.height && e.round > to.r && (e.mk == mProposal || e.mk == mPart) {
		// A peer sends a node only what its peer state says it can use
		// (its height; for a proposal, its round): it gets this from the
		// first peer to see it arrive there (releaseHeld).
		e.kind, e.node = evMsg, j
		to.held = append(to.held, *e)
		return
	}
	at, ok := w.net.send(from.i, j, from.t, size, ch)
	if !ok {
		return
	}
	e.at, e.kind, e.node, e.via = at, evMsg, j, from.i
	if w.broadcasting >= 0 {
		w.q.pushMsg(w.broadcasting, at, j, from.i)
		return
	}
	w.q.pushNew(e)
}

// broadcastVote sends n's own vote to every neighbour of a full mesh; on
// a sparse topology the vote routines send it once n's receive routine
// has counted it (addVote, relayVote), as any vote.
func (w *world) broadcastVote(n *node, mk msgKind, h int64, r int32, block int32) {
	if w.g != nil {
		return
	}
	e := event{mk: mk, from: n.i, via: n.i, height: h, round: r, block: block}
	w.broadcasting = w.q.openHeader(&e)
	w.neighbours(n.i, func(j int32) { w.deliver(n, j, &e, voteBytes, chVotes) })
	w.q.closeHeader(w.broadcasting)
	w.broadcasting = -1
}

// relayVote: n counted vote e (with lastCommit, into its LastCommit). In
// a full mesh every peer has it from its voter; on a sparse topology n's
// vote routines send it to the peers that lack it (gossip.go).
func (w *world) relayVote(n *node, _ *event, _ bool) {
	if w.g != nil {
		w.armOut(n, chVotes, n.t)
	}
}

// broadcastProposal sends the proposal, then its parts, to every
// neighbour: the data routine sends them one after the other.
func (w *world) broadcastProposal(n *node, h int64, r int32, block, pol int32) {
	if w.g != nil {
		return // its data routines send it once n has it (addProposal)
	}
	b := w.block(h, block)
	if b == nil {
		return // a lagging proposer's block of a settled height: nobody needs it
	}
	w.neighbours(n.i, func(j int32) {
		w.deliver(n, j, &event{mk: mProposal, from: n.i, height: h, round: r, block: block, arg: pol}, proposalBytes, chData)
		for k := int32(0); k < b.parts; k++ {
			w.deliver(n, j, &event{mk: mPart, from: n.i, height: h, round: r, block: block, arg: k}, partSize(b, k), chData)
		}
	})
}

// relayProposal and relayPart gossip what a node got to peers that lack
// it (sparse topologies).
func (w *world) relayProposal(n *node, _ event) {
	if w.g != nil {
		w.armOut(n, chData, n.t)
	}
}

func (w *world) relayPart(n *node, _ event) {
	if w.g != nil {
		w.armOut(n, chData, n.t)
	}
}

// resync is what a peer's gossip sends a node that was out of reach (a
// healed link, a node back up): i's votes of j's height, and i's proposal
// and parts of j's round, when j lacks them.
func (w *world) resync(i, j int32) {
	src, dst := w.nodes[i], w.nodes[j]
	if w.g != nil {
		if src.up && dst.up {
			if c := w.g.connTo(i, j); c >= 0 {
				w.arm(c, chVotes, w.now)
				w.arm(c, chData, w.now)
			}
		}
		return
	}
	if !src.up || !dst.up || src.h != dst.h {
		return
	}
	src.t = max(src.t, w.now)
	for r := range src.votes.rounds {
		for _, precommit := range []bool{false, true} {
			vs := src.votes.set(int32(r), precommit)
			mk := mPrevote
			if precommit {
				mk = mPrecommit
			}
			for v := int32(0); v < int32(w.n); v++ {
				if !vs.has(v) || dst.votes.set(int32(r), precommit).has(v) {
					continue
				}
				w.deliver(src, j, &event{mk: mk, from: v, height: src.h, round: int32(r), block: vs.of(v)}, voteBytes, chVotes)
			}
		}
	}
	if src.r == dst.r && src.proposal != noBlock && dst.propBlock == noBlock {
		w.deliver(src, j, &event{mk: mProposal, from: src.i, height: src.h, round: src.r, block: src.proposal, arg: src.polRound}, proposalBytes, chData)
		if src.propBlock == src.proposal {
			b := w.block(src.h, src.proposal)
			for k := int32(0); b != nil && k < b.parts; k++ {
				w.deliver(src, j, &event{mk: mPart, from: src.i, height: src.h, round: src.r, block: src.proposal, arg: k}, partSize(b, k), chData)
			}
		}
	}
}
