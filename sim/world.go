package sim

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"runtime"
	"sort"
	"time"

	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/internal/links"
	"github.com/valnet/valnet/network"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
)

// Epoch is where virtual time starts: every event of a sim run is stamped
// Epoch plus the virtual time since the network started, so the same
// scenario and seed give the same events.jsonl, byte for byte.
var Epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// VoteEventsMax is the largest network whose per-node vote receipts the
// sim records (n² events per height and phase); above it run_start says
// vote_events: false and the summary says what it cannot tell.
const VoteEventsMax = 32

type timeouts struct {
	proposeBase, proposeDelta, prevoteBase, prevoteDelta, precommitBase, precommitDelta, commit int64
}

func (t timeouts) propose(r int32) int64   { return t.proposeBase + t.proposeDelta*int64(r) }
func (t timeouts) prevote(r int32) int64   { return t.prevoteBase + t.prevoteDelta*int64(r) }
func (t timeouts) precommit(r int32) int64 { return t.precommitBase + t.precommitDelta*int64(r) }

// blockInfo is a block as its proposer made it.
type blockInfo struct {
	height     int64
	round      int32 // the round it was created in: its id within the height
	proposer   int32
	parts      int32
	bytes      int
	txs        []simTx
	hash       string
	createdAt  int64
	lcRound    int32
	lcAbsent   []string
	lcNil      []string
	lcIncluded bool
}

type world struct {
	p        Params
	plan     *scenarios.Plan
	timeouts timeouts
	chainID  string
	// extHeight is chain.vote_extensions_enable_height (0: off): from it
	// on a non-nil precommit is signed twice, the vote and its extension
	// (privval FilePV.signVote signs both; types.SignAndCheckVote).
	extHeight int64
	epoch     time.Time
	seed      int64

	n       int
	names   []string
	power   []int64
	total   int64
	nodes   []*node
	signers []*signer
	devices map[string]*deviceQueue
	// deviceNames: the devices, sorted (events name a device by index)
	deviceNames []string
	net         *netModel
	cores       *cores // nil: every node has its own CPU

	q queue
	// broadcasting: the lane header of the broadcast being sent (-1:
	// none); deliver puts its messages into the queue's lane
	broadcasting int32
	now          int64
	// the due time and sequence of the event being handled
	curDue int64
	curSeq uint64

	// g: the connections' gossip routines of a sparse topology
	// (gossip.go); nil in a full mesh.
	g          *gossip
	sink       func(eventlog.Event)
	voteEvents bool
	// burst: quiet votes may be handled ahead of the queue (quiet.go);
	// quietHandled counts them.
	burst        bool
	quietHandled int64

	// the chain as the first node to commit each height saw it
	committed int64
	blocks    map[int64][]*blockInfo
	vsets     map[int64]*types.ValidatorSet
	proposers map[[2]int64]int32
	addrIdx   map[string]int32
	valOrder  []int32 // validator indexes in validator-set order (LastCommit order)

	// commits are the seen commits of recent heights (the precommits the
	// first node to commit had), which a node catching up gets with the
	// block, as blocksync gives it the next block's LastCommit.
	commits map[int64]seenCommit

	signLens map[signLenKey]int
	timeline *timeline
	load     *loadModel
	stop     string
}

// newWorld builds the model of plan's network. keys are the validators'
// public keys, in plan order.
func newWorld(plan *scenarios.Plan, p Params, seed int64, keys []crypto.PubKey, sharedCores int, sink func(eventlog.Event)) (*world, error) {
	t := plan.Timeouts
	w := &world{p: p, plan: plan, chainID: plan.ChainID, extHeight: plan.VoteExtensionsEnableHeight, epoch: Epoch, seed: seed, n: len(plan.Validators), sink: sink,
		timeouts: timeouts{t.Propose.Nanoseconds(), t.ProposeDelta.Nanoseconds(), t.Prevote.Nanoseconds(), t.PrevoteDelta.Nanoseconds(),
			t.Precommit.Nanoseconds(), t.PrecommitDelta.Nanoseconds(), t.Commit.Nanoseconds()},
		blocks: map[int64][]*blockInfo{}, vsets: map[int64]*types.ValidatorSet{}, proposers: map[[2]int64]int32{},
		addrIdx: map[string]int32{}, signLens: map[signLenKey]int{}, devices: map[string]*deviceQueue{}, commits: map[int64]seenCommit{}}
	w.voteEvents = w.n <= VoteEventsMax
	w.broadcasting = -1
	if sharedCores > 0 {
		w.cores = newCores(sharedCores)
	}
	for name, d := range plan.Devices {
		w.devices[name] = &deviceQueue{name: name, profile: d.Profile}
	}
	w.deviceNames = sortedKeys(w.devices)
	vals := make([]*types.Validator, w.n)
	for i, v := range plan.Validators {
		w.names = append(w.names, v.Name)
		w.power = append(w.power, v.Power)
		w.total += v.Power
		vals[i] = types.NewValidator(keys[i], v.Power)
		w.addrIdx[string(keys[i].Address())] = int32(i)
		s, err := newSigner(plan, p, v, seed, w.devices)
		if err != nil {
			return nil, err
		}
		w.signers = append(w.signers, s)
		w.nodes = append(w.nodes, &node{i: int32(i), name: v.Name, up: true})
	}
	// The nodes that are not validators (full nodes, seeds, sentries)
	// come after them: the same consensus state machine with no key, so
	// they vote and propose nothing (state.go signAddVote: "If the node
	// not in the validator set, do nothing"; isProposer) and relay and
	// commit as any node.
	for k, pn := range plan.Nodes {
		w.names = append(w.names, pn.Name)
		w.nodes = append(w.nodes, &node{i: int32(w.n + k), name: pn.Name, up: true})
	}
	// The genesis set as state.MakeGenesisState builds it: height 1 is
	// NewValidatorSet's (which increments once).
	vs := types.NewValidatorSet(vals)
	w.vsets[1] = vs
	for _, v := range vs.Validators {
		w.valOrder = append(w.valOrder, w.addrIdx[string(v.Address)])
	}
	all, err := links.Resolve(plan.Network, w.names, seed)
	if err != nil {
		return nil, err
	}
	topo := plan.Network.Topology
	mesh := (topo.Kind == "" || topo.Kind == scenarios.TopologyMesh) && len(plan.Nodes) == 0
	var peers map[string][]string // a mesh needs no list: everyone is a peer
	switch {
	case len(plan.Nodes) > 0:
		// Sentries, full nodes and seeds: whom each node dials is the
		// real backends' layout (Plan.Layout), one graph for both.
		dials, err := plan.Layout(seed)
		if err != nil {
			return nil, err
		}
		peers = undirected(dials)
	case !mesh:
		dials, err := network.Peers(w.names, network.Topology{Kind: topo.Kind, K: topo.K, Explicit: topo.Peers}, seed)
		if err != nil {
			return nil, err
		}
		peers = undirected(dials)
	}
	w.net = newNet(p, plan.Network, w.names, all, peers, mesh, seed)
	if w.timeline, err = newTimeline(w); err != nil {
		return nil, err
	}
	if plan.Load != nil {
		w.load = newLoad(w, *plan.Load)
	}
	if !mesh {
		w.g = newGossip(w)
	}
	w.burst = quietBursts && len(plan.Faults) == 0 && w.net.mesh && w.cores == nil && !w.voteEvents
	return w, nil
}

// undirected: a connection carries gossip both ways, whoever dialled.
func undirected(dials map[string][]string) map[string][]string {
	set := map[string]map[string]bool{}
	add := func(a, b string) {
		if set[a] == nil {
			set[a] = map[string]bool{}
		}
		set[a][b] = true
	}
	for a, bs := range dials {
		for _, b := range bs {
			add(a, b)
			add(b, a)
		}
	}
	out := map[string][]string{}
	for a, bs := range set {
		for b := range bs {
			out[a] = append(out[a], b)
		}
		sort.Strings(out[a])
	}
	return out
}

func (w *world) at(t int64) time.Time { return w.epoch.Add(time.Duration(t)) }

func (w *world) emit(e eventlog.Event) { w.sink(e) }

// recordNode: the node's own view (rounds, steps, proposals) is recorded
// for every node, as the real backends do.
func (w *world) recordNode(*node) bool { return true }

// valSet is the validator set of height h: state.go's Validators, which
// updateState derives from the last one with IncrementProposerPriority(1).
func (w *world) valSet(h int64) *types.ValidatorSet {
	if vs, ok := w.vsets[h]; ok {
		return vs
	}
	// From the nearest kept set below: every keepHeights-th is never
	// forgotten, so a lagging node's height can always be reached.
	from := h - 1
	for ; from > 1; from-- {
		if _, ok := w.vsets[from]; ok {
			break
		}
	}
	vs := w.vsets[from]
	for k := from + 1; k <= h; k++ {
		vs = vs.CopyIncrementProposerPriority(1)
		w.vsets[k] = vs
	}
	return vs
}

// proposer is whose turn it is at h, round r: enterNewRound's
// validators.IncrementProposerPriority(round) on a copy.
func (w *world) proposer(h int64, r int32) int32 {
	k := [2]int64{h, int64(r)}
	if p, ok := w.proposers[k]; ok {
		return p
	}
	vs := w.valSet(h)
	if r > 0 {
		vs = vs.Copy()
		vs.IncrementProposerPriority(r)
	}
	p := w.addrIdx[string(vs.GetProposer().Address)]
	w.proposers[k] = p
	return p
}

// blockHash is a block's id in events: a hash of chain, height and
// creation round (the model has no real blocks).
func (w *world) blockHash(h int64, block int32) string {
	if block == noBlock {
		return ""
	}
	var b [12]byte
	binary.BigEndian.PutUint64(b[:8], uint64(h))
	binary.BigEndian.PutUint32(b[8:], uint32(block))
	sum := sha256.Sum256(append([]byte(w.chainID+"/sim/"), b[:]...))
	return hex.EncodeToString(sum[:])
}

// hashOf is blockHash, taken from the block when the model still has it.
func (w *world) hashOf(h int64, block int32) string {
	if block != noBlock {
		if b := w.block(h, block); b != nil {
			return b.hash
		}
	}
	return w.blockHash(h, block)
}

func (w *world) block(h int64, c int32) *blockInfo {
	for _, b := range w.blocks[h] {
		if b.round == c {
			return b
		}
	}
	return nil
}

type seenCommit struct {
	votes *voteSet
	round int32
	block int32
}

// keepHeights is how many heights back the model keeps blocks and
// validator sets.
var keepHeights int64 = 64 // a var so a test can make it small

// Block size: header and commit overhead, as a real block's encoding
// grows with its LastCommit, plus the transactions.
const (
	blockHeaderBytes = 720
	commitSigBytes   = 110
	blockPartBytes   = 65536 // types.BlockPartSizeBytes
)

// createBlock follows createProposalBlock: the node's LastCommit and what
// its mempool holds go in.
func (w *world) createBlock(n *node, h int64, r int32) int32 {
	if b := w.block(h, r); b != nil {
		return r
	}
	b := &blockInfo{height: h, round: r, proposer: n.i, hash: w.blockHash(h, r), createdAt: n.t, lcRound: n.lastCommitRound}
	b.bytes = blockHeaderBytes
	if h > 1 && n.lastCommit != nil {
		b.lcIncluded = true
		for _, v := range w.valOrder {
			switch {
			case !n.lastCommit.has(v):
				b.lcAbsent = append(b.lcAbsent, w.names[v])
			case n.lastCommit.of(v) == noBlock:
				b.lcNil = append(b.lcNil, w.names[v])
			}
		}
		b.bytes += commitSigBytes * w.n
	}
	if w.load != nil {
		b.txs = w.load.reap(b.bytes)
		for _, tx := range b.txs {
			b.bytes += tx.size
		}
	}
	b.parts = int32((b.bytes + blockPartBytes - 1) / blockPartBytes)
	w.blocks[h] = append(w.blocks[h], b)
	return r
}

// committedBy: node n committed h with block; the first to do so reports
// the block.
func (w *world) committedBy(n *node, h int64, r int32, block int32) {
	if h <= w.committed {
		return
	}
	w.committed = h
	if r >= 0 {
		w.commits[h] = seenCommit{votes: n.votes.set(r, true).clone(), round: r, block: block}
	}
	b := w.block(h, block)
	bt := w.at(b.createdAt)
	e := eventlog.Event{Time: w.at(n.t), Kind: eventlog.KindBlock, Node: n.name, Height: h, BlockID: b.hash,
		Proposer: w.names[b.proposer], BlockTime: &bt, Txs: len(b.txs), BlockBytes: b.bytes}
	if b.lcIncluded {
		e.LastCommitRound, e.LastCommitAbsent, e.LastCommitNil = b.lcRound, b.lcAbsent, b.lcNil
	}
	for _, tx := range b.txs {
		e.TxHashes = append(e.TxHashes, tx.hash)
	}
	w.emit(e)
	if w.load != nil {
		w.load.committed(b.txs)
	}
	// Heights far behind are settled: forget them (memory stays flat). A
	// node lagging further catches up by blocksync, which needs none of it.
	if h%keepHeights == 0 {
		for old := range w.blocks {
			if old < h-keepHeights {
				delete(w.blocks, old)
			}
		}
		// Of the sets further back, every keepHeights-th (and the
		// genesis set) stays, from the last one at or below the lowest
		// height a node is at: valSet starts there for a lagging node.
		low := h
		for _, nd := range w.nodes {
			low = min(low, nd.h)
		}
		base := int64(1)
		for k := range w.vsets {
			if k <= low && k > base && k%keepHeights == 0 {
				base = k
			}
		}
		for old := range w.vsets {
			if old < h-keepHeights && old != base && (old < base || old%keepHeights != 0 && old != 1) {
				delete(w.vsets, old)
			}
		}
		for k := range w.proposers {
			if k[0] < h-keepHeights {
				delete(w.proposers, k)
			}
		}
		for old := range w.commits {
			if old < h-keepHeights {
				delete(w.commits, old)
			}
		}
	}
	if h > w.plan.Run.Heights {
		w.stop = eventlog.StopHeights
	}
	w.timeline.committed()
}

// work spends cost of CPU on node n: its own core, or one of the shared
// cores when the run says the nodes share k.
func (w *world) work(n *node, cost time.Duration) {
	if w.cores == nil {
		n.t += cost.Nanoseconds()
		return
	}
	n.t = w.cores.run(n.t, cost.Nanoseconds())
}

// run runs the model until the target height is committed, max_duration
// of virtual time has passed or ctx ends. It keeps one OS thread: the
// loop is one goroutine that works the whole run, and moved from thread
// to thread (each time it handed events on, or another goroutine woke)
// it lost the core's caches; locked, global175's model ran ~10-15 %
// faster (docs/bench.md).
func (w *world) run(ctx context.Context) (string, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, n := range w.nodes {
		w.emit(eventlog.Event{Time: w.epoch, Kind: eventlog.KindNodeUp, Node: n.name})
	}
	for _, n := range w.nodes {
		n.h, n.step = 1, stepNewHeight
		w.newHeightQuiet(n, 1, 0)
		w.scheduleTimeout(n, n.startTime, 1, 0, stepNewHeight)
	}
	w.timeline.begin()
	if err := w.startBackground(); err != nil {
		return "", err
	}
	if w.load != nil {
		w.load.begin()
	}
	maxDur := w.plan.Run.MaxDuration.Nanoseconds()
	for steps := 0; ; steps++ {
		if steps&0x3fff == 0 && ctx.Err() != nil {
			return eventlog.StopInterrupted, nil
		}
		e := w.q.pop()
		if e == nil {
			// Nothing timed is left and no message is on its way: the
			// chain is halted for good (e.g. less than 2/3 of the power
			// is up) and would sit so until max_duration, as a real one.
			w.now = maxDur
			return eventlog.StopMaxDuration, nil
		}
		if e.at > maxDur {
			w.now = maxDur
			return eventlog.StopMaxDuration, nil
		}
		w.now, w.curDue, w.curSeq = e.at, e.due, e.seq
		w.dispatch(e)
		if w.stop != "" {
			return w.stop, nil
		}
	}
}

func (w *world) dispatch(e *event) {
	switch e.kind {
	case evGossip:
		w.gossipWake(e)
		return
	case evWake:
		w.timeline.wake(*e)
		return
	case evLoad:
		w.load.next(*e)
		return
	case evDevice:
		w.serveBackground(*e)
		return
	}
	n := w.nodes[e.node]
	if e.kind == evRestart {
		w.restarted(n, *e)
		return
	}
	if e.kind == evMsg && w.net.blocked > 0 && !e.proxy && e.via != e.node && w.net.link(e.via, e.node).blocked {
		// A cut holds what was in flight on the link (network/pipe.go
		// keeps its bytes until the heal); the heal's resync then sends
		// what the node still lacks at its height.
		w.dropped(e)
		return
	}
	if e.proxy {
		if !n.proxyOn || e.seq != n.proxySeq || e.at != n.proxyAt {
			return // an earlier event took its place, or the node went down
		}
		n.waiting.pop() // e
		n.proxyOn, e.proxy = false, false
		defer w.nextWaiting(n, e.at)
	}
	if !n.up {
		w.dropped(e)
		return // a down node neither sends nor receives; its timers died with it
	}
	if n.busy > e.at {
		if w.burst && n.waiting.len() == 0 && w.quietVote(n, e) {
			w.handleQuiet(n, e, n.busy)
			return
		}
		w.wait(n, *e)
		return
	}
	n.t, n.lastAt = e.at, e.at
	switch e.kind {
	case evTimeout:
		w.handleTimeout(n, *e)
	case evMsg, evInternal:
		w.handleMsg(n, e)
	case evCatchUp:
		w.catchUp(n, *e)
	}
	n.busy = n.t
}

// An event for a node whose consensus routine is busy waits until it is
// free, keeping its due time and sequence, so the waiting events are
// handled in the order they came. As if each were put back into the
// queue at the node's busy time (and popped and put back again while the
// node stays busy), but without touching the queue for each: the node
// keeps them (waiting) and the queue holds a proxy of the first. The
// events pop in the same order either way.
func (w *world) wait(n *node, e event) {
	n.waiting.push(e)
	if n.proxyOn && n.waiting.first().seq != n.proxySeq {
		n.proxyOn = false // the queued proxy is stale: e comes first
	}
	w.nextWaiting(n, n.busy)
}

// nextWaiting queues the proxy of n's first waiting event, due when n is
// free (and not before at), unless one is queued.
func (w *world) nextWaiting(n *node, at int64) {
	if n.proxyOn {
		return
	}
	for w.burst && n.waiting.len() > 0 {
		// the first waiting event came before now: nothing of n's can
		// still come before it (see quiet.go)
		if f := n.waiting.first(); f.due >= w.now || !w.quietVote(n, f) {
			break
		}
		e := n.waiting.pop()
		w.handleQuiet(n, &e, max(n.busy, at))
	}
	if n.waiting.len() == 0 {
		return
	}
	p := *n.waiting.first()
	p.at, p.proxy = max(n.busy, at), true
	n.proxySeq, n.proxyAt, n.proxyOn = p.seq, p.at, true
	w.q.pushKept(&p)
}

// takeDown takes node n down now (a fault). Its waiting events go back
// into the queue with the time each would have there had it been put
// back into the queue one by one: those not yet looked at since n last
// handled an event, now, the others when n would be free. Each is then
// dropped (n down) or handled after a restart at the same point as it
// would have been.
func (w *world) takeDown(n *node) {
	n.up = false
	for _, e := range n.waiting.all() {
		e.at = n.busy
		if n.lastAt == w.now && (e.due > w.curDue || e.due == w.curDue && e.seq > w.curSeq) {
			e.at = w.now
		}
		w.q.pushKept(&e)
	}
	n.waiting.clear()
	n.proxyOn = false
}

// handleMsg follows State.handleMsg: proposal, block part, vote. A message
// for a later height, or a proposal for a later round, waits until the
// node gets there.
func (w *world) handleMsg(n *node, e *event) {
	if e.mk == mVotes {
		w.handleBurst(n, e)
		return
	}
	// (On a sparse topology a routine sends only what its peer's round
	// state lets it use: nothing is held.)
	if w.g == nil && (e.height > n.h || e.height == n.h && e.round > n.r && (e.mk == mProposal || e.mk == mPart)) {
		n.held = append(n.held, *e)
		return
	}
	switch e.mk {
	case mProposal:
		w.addProposal(n, *e)
		if e.kind == evInternal {
			w.addPart(n, event{height: e.height, round: e.round, block: e.block}, true)
		}
	case mPart:
		w.addPart(n, *e, false)
	default:
		w.addVote(n, e)
	}
}

// releaseHeld hands in the messages that waited for the node's new round
// or height; their senders' gossip sends them once it knows, a link delay
// later.
func (w *world) releaseHeld(n *node) {
	if len(n.held) == 0 {
		return
	}
	keep := n.held[:0]
	var due []event
	for _, e := range n.held {
		if e.height > n.h || e.height == n.h && e.round > n.r && (e.mk == mProposal || e.mk == mPart) {
			keep = append(keep, e)
			continue
		}
		due = append(due, e)
	}
	n.held = keep
	// Every peer learns where n is (its NewRoundStep, a link delay away)
	// and gossips it what it lacks: the first peer whose vote routine
	// wakes sends all the votes, the first whose data routine wakes the
	// proposal and parts (reactor.go gossipVotesForHeight, pickPartToSend:
	// a peer sends any vote or part it has, not only its own). So a node
	// catching up gets +2/3 votes from its fastest peer, and which of
	// votes and proposal comes first is up to the routines.
	var votes, data []event
	for _, e := range due {
		switch {
		case e.from == n.i:
			e.at, e.due, e.via = n.t, 0, n.i
			w.q.push(e)
		case e.mk == mProposal || e.mk == mPart:
			data = append(data, e)
		default:
			votes = append(votes, e)
		}
	}
	w.resend(n, votes, chVotes)
	w.resend(n, data, chData)
}

// fetchParts: n needs block of height h for its commit and lacks parts of
// it; the first peer that has the block and whose data routine wakes
// sends the parts n lacks.
func (w *world) fetchParts(n *node, h int64, block int32) {
	b := w.block(h, block)
	if b == nil {
		w.scheduleCatchUp(n) // the model no longer has it: fetched whole, as blocksync would
		return
	}
	if w.g != nil {
		w.armIn(n, chData) // its NewValidBlock: the peers' data routines send the parts
		return
	}
	var parts []event
	for k := int32(0); k < b.parts; k++ {
		if i, bit := int(k/64), uint64(1)<<(k%64); i < len(n.partsSeen) && n.partsSeen[i]&bit != 0 {
			continue
		}
		parts = append(parts, event{kind: evMsg, node: n.i, mk: mPart, from: b.proposer, height: h, round: b.round, block: block, arg: k})
	}
	w.resend(n, parts, chData)
}

// resend sends held messages to n from the peer (that has reached their
// height) whose routine on ch wakes first once it learns where n is.
func (w *world) resend(n *node, msgs []event, ch int) {
	if len(msgs) == 0 {
		return
	}
	h := msgs[0].height
	var best int32 = -1
	var bestWake, bestLearn int64
	w.neighbours(n.i, func(j int32) {
		p := w.nodes[j]
		if !p.up || p.h < h || w.net.link(j, n.i).blocked {
			return
		}
		if p.h == h && msgs[0].mk == mPart && p.propBlock != msgs[0].block {
			return // a peer at h sends parts of a block it has
		}
		learn := n.t
		if lk := w.net.link(n.i, j); lk.delay != nil {
			learn += lk.delay.Draw().Nanoseconds()
		}
		if wk := w.net.wake(j, n.i, learn, ch); best < 0 || wk < bestWake {
			best, bestWake, bestLearn = j, wk, learn
		}
	})
	if best < 0 {
		n.held = append(n.held, msgs...) // nobody can send them yet
		return
	}
	if p := w.nodes[best]; p.h > h {
		msgs = w.catchUpOnly(p, h, msgs)
	}
	for _, e := range msgs {
		size := voteBytes
		switch e.mk {
		case mProposal:
			size = proposalBytes
		case mPart:
			size = partSize(w.block(e.height, e.block), e.partIndex())
		}
		at, ok := w.net.send(best, n.i, bestLearn, size, ch)
		if !ok {
			continue
		}
		e.at, e.due, e.via = at, 0, best
		w.q.push(e)
	}
}

// catchUpOnly keeps of msgs (all of height h) what peer p, which has
// committed h and moved on, sends a node still at h: the precommits of
// the commit (reactor.go gossipVotesRoutine: its LastCommit when the
// node lags by one height, the stored commit when by more) and the parts
// of the committed block (gossipDataForCatchup). No proposal, no
// prevotes: the node commits from the precommits without voting, as a
// real lagging node does. false when p has no commit of h to tell.
func (w *world) catchUpOnly(p *node, h int64, msgs []event) []event {
	var votes *voteSet
	round, block := int32(-1), noBlock
	has := func(v int32) bool { return votes.has(v) }
	switch c, ok := w.commits[h]; {
	case p.h == h+1 && p.lastCommit != nil:
		votes, round, block = p.lastCommit, p.lastCommitRound, p.lastCommitBlock
		has = func(v int32) bool { return w.lastCommitHas(p, v) }
	case ok:
		votes, round, block = c.votes, c.round, c.block
	default:
		return msgs
	}
	kept := msgs[:0]
	for _, e := range msgs {
		switch e.mk {
		case mPrecommit:
			if e.round == round && has(e.from) {
				kept = append(kept, e)
			}
		case mPart:
			if e.block == block {
				kept = append(kept, e)
			}
		}
	}
	return kept
}

// newHeightQuiet resets n for height h without a step event (a node's
// first height starts before valnet listens, as with real nodes).
func (w *world) newHeightQuiet(n *node, h int64, commitTime int64) {
	n.h, n.r, n.step = h, 0, stepNewHeight
	n.noteState()
	n.startTime = commitTime + w.timeouts.commit
	n.votes.reset(w.n, n.lastCommit)
	n.proposal, n.polRound, n.propBlock = noBlock, -1, noBlock
	n.wantParts(noBlock)
	n.locked, n.lockedRound, n.valid, n.validRound = noBlock, -1, noBlock, -1
	n.commitRound, n.commitBlock, n.triggeredPC = -1, noBlock, false
}
