package sim

// The message lane of the queue: where a broadcast's messages wait (a
// vote to every neighbour of a full mesh), and on a sparse topology the
// gossip routines' wake-ups and bursts of votes (gossip.go: most of such
// a run's events; in the lane the 175-validator shape ran ~25 % faster
// than as events, docs/bench.md). A
// vote goes to every neighbour at once, ~1,000 messages in a 1,000-node
// mesh, millions in flight over ~100 ms. As events of their own in the
// queue's 16 µs buckets, writing each was a cache miss (thousands of
// buckets written at once); kept together per broadcast, reading each
// back was. The lane keeps a message in 32 bytes (its time, sequence
// number, receiver, sender and the vote's header, which holds what every
// message of it carries) in coarse buckets of ~2 ms: a broadcast writes
// into tens of them, each written in order, and a bucket is sorted once,
// when its time comes, and read in order. Almost every message goes to
// another bucket than the one before it (a 1,000-node mesh: 99 %), so
// the fewer buckets are being written at once, the more of their ends
// stay in cache: ~2 ms buckets ran the 1,000-node mesh 14 % faster than
// ~1 ms, and 4-17 ms buckets no faster (docs/bench.md). The
// queue pops the lane and its events merged by key, so the order is that
// of one queue of every event: the same run, byte for byte.

type laneMsg struct {
	at   int64
	seq  uint64
	hdr  int32 // index into queue.hdrs
	node int32 // receiver
	via  int32 // sender
	arg  int32 // the event's arg: the header's, or a burst's slot (pushMsgArg)
}

// msgHeader is a vote in flight: what every message of its broadcast and
// of its relays carries but the sender (via). One header serves every
// node's relay of the vote while any of its messages is in the lane: a
// header of each relay (a few messages each) was read back at each pop,
// a cache miss a message once millions were in flight.
type msgHeader struct {
	ev   event // what every message of the vote carries, via aside
	refs int32 // its messages in the lane
	open bool  // still being sent
}

// voteSlots is the size of the table of votes in flight (lane.byVote).
const (
	voteBits  = 14
	voteSlots = 1 << voteBits
)

const (
	laneShift = 21 // a lane bucket is 2^21 ns (2.1 ms) of virtual time
	laneBits  = 9  // the lane holds 2^9 buckets: 1.07 s ahead
	laneSize  = 1 << laneBits
	laneMask  = laneSize - 1
	laneRadix = 7 // bits of a radix pass of sortBucket (3 passes cover laneShift)
)

type lane struct {
	// base is the current bucket (at >> laneShift), sorted into cur;
	// buckets base+1 .. base+laneSize-1 fill in ring.
	base int64
	ring [][]laneMsg
	full occupancy
	cur  []laneMsg
	pos  int
	tmp  []laneMsg
	// bufs are drained buckets' arrays, last drained last: an empty
	// bucket takes one (bucket sizes swing by 1,000x between a vote
	// phase and the quiet between, so a slot's own would keep growing)
	bufs [][]laneMsg
	hdrs []msgHeader
	free []int32
	// byVote: the header of a vote in flight by a hash of the vote (+1;
	// 0 none), so its relays share it; a slot taken by another vote just
	// gives this one a header of its own.
	byVote []int32
	out    event // the message popped last
	n      int   // messages in the lane
	// warm, when set, is shown each bucket once it is sorted, before
	// its messages are handled (world.warmBucket)
	warm func([]laneMsg)
}

// openHeader starts a broadcast (or relay) of messages carrying vote ev;
// pushMsg adds them, closeHeader ends it. The vote's header is used
// again while it is in the lane.
func (q *queue) openHeader(ev *event) int32 {
	l := &q.lane
	if l.byVote == nil {
		l.byVote = make([]int32, voteSlots)
	}
	slot := voteSlot(ev)
	if h := l.byVote[slot] - 1; h >= 0 {
		if hd := &l.hdrs[h]; (hd.refs > 0 || hd.open) && hd.ev.height == ev.height && hd.ev.round == ev.round &&
			hd.ev.from == ev.from && hd.ev.mk == ev.mk && hd.ev.block == ev.block && hd.ev.arg == ev.arg {
			hd.open = true
			return h
		}
	}
	var h int32
	if k := len(l.free); k > 0 {
		h = l.free[k-1]
		l.free = l.free[:k-1]
	} else {
		l.hdrs = append(l.hdrs, msgHeader{})
		h = int32(len(l.hdrs) - 1)
	}
	l.hdrs[h] = msgHeader{ev: *ev, open: true}
	l.hdrs[h].ev.kind = evMsg
	l.byVote[slot] = h + 1
	return h
}

// voteSlot is vote ev's slot in lane.byVote.
func voteSlot(ev *event) uint64 {
	k := uint64(ev.height)*0x9e3779b97f4a7c15 ^ uint64(uint32(ev.round))<<34 ^ uint64(ev.mk)<<32 ^ uint64(uint32(ev.from))
	return (k * 0xbf58476d1ce4e5b9) >> (64 - voteBits)
}

// standingHeader is a header that is never closed, for messages that
// carry nothing but their receiver and sender (a gossip routine's
// wake-up, gossip.go arm).
func (q *queue) standingHeader(ev event) int32 {
	l := &q.lane
	l.hdrs = append(l.hdrs, msgHeader{ev: ev, open: true})
	return int32(len(l.hdrs) - 1)
}

func (q *queue) closeHeader(h int32) {
	l := &q.lane
	l.hdrs[h].open = false
	if l.hdrs[h].refs == 0 {
		l.free = append(l.free, h)
	}
}

// pushMsg queues broadcast h's message to node, arriving at at, with the
// next sequence number. One outside the lane's buckets ahead goes into
// the queue as an event of its own, with the same key.
func (q *queue) pushMsg(h int32, at int64, node, via int32) {
	q.pushMsgArg(h, at, node, via, q.lane.hdrs[h].ev.arg)
}

// pushMsgArg is pushMsg of a message whose arg is its own (a burst of
// votes names its slot), not its header's.
func (q *queue) pushMsgArg(h int32, at int64, node, via, arg int32) {
	q.seq++
	l := &q.lane
	if l.ring == nil {
		l.ring, l.full = make([][]laneMsg, laneSize), newOccupancy(laneSize)
	}
	if l.n == 0 && q.now>>laneShift-1 > l.base {
		l.restart(q.now>>laneShift - 1)
	}
	b := at >> laneShift
	if b <= l.base || b >= l.base+laneSize {
		e := l.hdrs[h].ev
		e.at, e.due, e.seq, e.node, e.via, e.arg = at, at, q.seq, node, via, arg
		q.pushKept(&e)
		return
	}
	i := b & laneMask
	if l.ring[i] == nil {
		if k := len(l.bufs); k > 0 {
			l.ring[i], l.bufs = l.bufs[k-1], l.bufs[:k-1]
		}
	}
	l.ring[i] = append(l.ring[i], laneMsg{at: at, seq: q.seq, hdr: h, node: node, via: via, arg: arg})
	l.full.set(i)
	l.hdrs[h].refs++
	l.n++
}

// restart makes the empty lane's buckets start after base. Its buckets
// are those of the 1.07 s after the last message it had: after a quiet
// spell (timeout_commit, a halted chain) every message fell beyond them
// and bypassed the lane, for good, into the queue's chunks. No message
// is due before now, so an empty lane can start again at now.
func (l *lane) restart(base int64) {
	if l.cur != nil {
		l.bufs = append(l.bufs, l.cur[:0]) // drained: its array serves again
	}
	l.ring[l.base&laneMask] = nil
	l.cur, l.pos, l.base = nil, 0, base
}

// peekMsg is the lane's first message; nil when it is empty.
func (l *lane) peekMsg() *laneMsg {
	for l.pos == len(l.cur) {
		if l.ring == nil {
			return nil
		}
		if l.cur != nil {
			l.bufs = append(l.bufs, l.cur[:0]) // drained: its array serves again
		}
		l.ring[l.base&laneMask] = nil
		l.cur, l.pos = nil, 0
		next, ok := l.full.after(l.base)
		if !ok {
			return nil
		}
		l.base = next
		i := next & laneMask
		l.full.clear(i)
		l.cur = l.sortBucket(l.ring[i])
		if l.warm != nil {
			l.warm(l.cur)
		}
	}
	return &l.cur[l.pos]
}

// popMsg takes the message peekMsg returned, as an event valid until the
// next pop.
func (l *lane) popMsg() *event {
	m := &l.cur[l.pos]
	l.pos++
	l.n--
	hd := &l.hdrs[m.hdr]
	l.out = hd.ev
	l.out.at, l.out.due, l.out.seq, l.out.node, l.out.via, l.out.arg = m.at, m.at, m.seq, m.node, m.via, m.arg
	if hd.refs--; hd.refs == 0 && !hd.open {
		l.free = append(l.free, m.hdr)
	}
	return &l.out
}

// before: message m pops before event e (a message is due at its time).
func (m *laneMsg) before(e *event) bool {
	if m.at != e.at {
		return m.at < e.at
	}
	if m.at != e.due {
		return m.at < e.due
	}
	return m.seq < e.seq
}

// sortBucket sorts a bucket by time, then sequence number: its messages
// came in sequence order, and a stable radix sort of the time's bits
// within the bucket keeps that order among equal times. Most buckets
// hold 64-127 messages (global175): three passes of 7 bits cost a third
// of two passes of 10, whose 1,024-entry counts outweighed the messages.
// A pass whose digit is the same for every message moves nothing.
func (l *lane) sortBucket(s []laneMsg) []laneMsg {
	if len(s) < 2 {
		return s
	}
	if len(s) <= 24 {
		for i := 1; i < len(s); i++ {
			m := s[i]
			j := i
			for ; j > 0 && m.at < s[j-1].at; j-- {
				s[j] = s[j-1]
			}
			s[j] = m
		}
		return s
	}
	if cap(l.tmp) < len(s) {
		l.tmp = make([]laneMsg, len(s))
	}
	src, dst := s, l.tmp[:len(s)]
	for sh := uint(0); sh < laneShift; sh += laneRadix {
		var count [1 << laneRadix]int32
		for i := range src {
			count[(src[i].at>>sh)&(1<<laneRadix-1)]++
		}
		if count[(src[0].at>>sh)&(1<<laneRadix-1)] == int32(len(src)) {
			continue // one digit: already in order
		}
		var sum int32
		for d := range count {
			sum, count[d] = sum+count[d], sum
		}
		for i := range src {
			d := (src[i].at >> sh) & (1<<laneRadix - 1)
			dst[count[d]] = src[i]
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &s[0] {
		l.tmp = s[:cap(s)] // the sorted messages are in tmp's array: swap
	}
	return src
}
