package sim

import "math/bits"

// The event queue. Events pop in the order of their key: time, then the
// time the event was first due (an event held back while its node was
// busy keeps its place among the others held back), then insertion. No
// goroutines, no wall clock: the same inputs pop in the same order.
//
// It is a bucket queue (a calendar queue): virtual time is cut into
// buckets of 2^bucketShift ns, a ring holds the buckets of the next
// ringSize of them (each a list of fixed-size chunks, reused last freed
// first so that they stay in cache), and events further ahead wait in a
// heap (far) until the ring reaches them. A bucket is sorted by key when
// it becomes the current one; what is pushed into the current bucket
// after that goes into a small heap (side) popped in merge with it. Keys
// are unique (every push has its own sequence number), so this pops
// exactly the order one heap of every event would, at a fraction of the
// cost when hundreds of thousands of messages are in flight.

type evKind uint8

const (
	evMsg      evKind = iota // a message reaches a node (msg)
	evTimeout                // a consensus timeout of a node fires
	evWake                   // the fault timeline or the load has something due
	evCatchUp                // a lagging node has fetched the next committed block
	evRestart                // a restarted node is up again
	evInternal               // a node's own vote or proposal reaches its receive routine
	evGossip                 // a gossip routine of a connection wakes (gossip.go): via names the connection, step the channel
)

// msgKind is what a message carries.
type msgKind uint8

const (
	mProposal msgKind = iota
	mPart
	mPrevote
	mPrecommit
	mVotes // a burst of votes (gossip.go): arg names it
)

type event struct {
	at, due int64 // virtual ns
	seq     uint64
	height  int64
	node    int32 // receiver
	from    int32 // sender; the voter of a vote
	// via: the node whose connection carries a message (evMsg) to node,
	// the voter's peer for a relayed vote: that link decides at arrival
	// whether it gets through (a cut holds what is in flight).
	via   int32
	round int32
	block int32 // block id (creation round); -1 nil
	// arg is the one more figure an event kind needs: a block part's
	// index (mPart), a proposal's POL round (mProposal), the node job an
	// evRestart reports to (timeline.reports, -1 none). Read it through
	// the accessor of the kind.
	arg  int32
	kind evKind
	mk   msgKind
	step uint8 // timeout step
	// proxy: this copy stands for the earliest of the events its node
	// holds while busy (node.waiting); see world.dispatch.
	proxy bool
}

// partIndex is an mPart's block part.
func (e *event) partIndex() int32 { return e.arg }

// polRound is an mProposal's POL round.
func (e *event) polRound() int32 { return e.arg }

// report is the node job an evRestart reports to; -1 none.
func (e *event) report() int32 { return e.arg }

// before orders events by key.
func (a *event) before(b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.due != b.due {
		return a.due < b.due
	}
	return a.seq < b.seq
}

const (
	bucketShift = 14 // a bucket is 2^14 ns (16.4 µs) of virtual time
	ringBits    = 15 // the ring holds 2^15 buckets: 0.54 s ahead
	ringSize    = 1 << ringBits
	ringMask    = ringSize - 1
	chunkLen    = 15   // events per chunk
	slabLen     = 1024 // chunks per allocation
)

// chunk is a piece of a bucket; chunks are named by index + 1 (0: none).
type chunk struct {
	evs  [chunkLen]event
	next int32
}

// bucket is the chunk list of one bucket of the ring; n: events in the
// last chunk.
type bucket struct{ head, tail, n int32 }

type queue struct {
	seq uint64
	// base is the current bucket (time >> bucketShift); ring[b&ringMask]
	// holds the events of bucket b for base < b < base+ringSize, and
	// full marks the ring's non-empty buckets.
	base int64
	ring []bucket
	full occupancy
	// chunks are allocated a slab at a time and never move: a burst of
	// events grew one slice of them by copying, an eighth of a
	// partitioned run's time.
	chunks  []*[slabLen]chunk
	nchunks int32
	free    []int32 // chunks not in use, last freed last
	// cur is the current bucket, sorted; cur[pos:] still queued. It is
	// the bucket's only chunk, or a copy of its chunks in buf.
	cur       []event
	pos       int
	curc      int32     // the chunk cur is in; 0: buf
	buf       []event   // for a bucket of more than one chunk
	side      eventHeap // pushed into the current bucket (or before) once it was sorted
	last      event     // the last event popped off side
	far       eventHeap // beyond the ring
	idx, idx2 []int32   // scratch for sorting a large bucket
	tmp       []event
	lane      lane  // broadcasts' messages (msglane.go)
	now       int64 // the time of the event popped last
	peekSide  bool  // peekEvent's event is side's
}

func bucketOf(at int64) int64 { return at >> bucketShift }

// push queues e, due now at e.at, with the next sequence number.
func (q *queue) push(e event) { q.pushNew(&e) }

// pushNew is push of an event the caller may have changed.
func (q *queue) pushNew(e *event) {
	e.due = e.at
	q.seq++
	e.seq = q.seq
	q.pushKept(e)
}

// pushKept queues e at e.at keeping its due time and sequence number (an
// event held back while its node was busy).
func (q *queue) pushKept(e *event) {
	b := bucketOf(e.at)
	switch {
	case b <= q.base:
		q.side.push(*e)
	case b < q.base+ringSize:
		q.add(b&ringMask, e)
	default:
		q.far.push(*e)
	}
}

// add appends e to ring bucket i.
func (q *queue) add(i int64, e *event) {
	if q.ring == nil {
		q.ring, q.full = make([]bucket, ringSize), newOccupancy(ringSize)
	}
	bk := &q.ring[i]
	switch {
	case bk.tail == 0:
		c := q.chunk()
		bk.head, bk.tail, bk.n = c, c, 0
		q.full.set(i)
	case bk.n == chunkLen:
		c := q.chunk()
		q.chunkAt(bk.tail).next = c
		bk.tail, bk.n = c, 0
	}
	q.chunkAt(bk.tail).evs[bk.n] = *e
	bk.n++
}

// chunk takes a free chunk (the last freed) or makes one.
func (q *queue) chunk() int32 {
	if k := len(q.free); k > 0 {
		c := q.free[k-1]
		q.free = q.free[:k-1]
		return c
	}
	if q.nchunks%slabLen == 0 {
		q.chunks = append(q.chunks, new([slabLen]chunk))
	}
	q.nchunks++
	return q.nchunks
}

// chunkAt is chunk c (index + 1).
func (q *queue) chunkAt(c int32) *chunk { return &q.chunks[(c-1)/slabLen][(c-1)%slabLen] }

// pop takes the first event off the queue, of its events and the
// lane's messages; nil when it is empty. The event stays valid until
// the next pop.
func (q *queue) pop() *event {
	m := q.lane.peekMsg()
	e := q.peekEvent()
	if m != nil && (e == nil || m.before(e)) {
		q.now = m.at
		return q.lane.popMsg()
	}
	if e == nil {
		return nil
	}
	q.now = e.at
	if q.peekSide {
		q.last = q.side.pop()
		return &q.last
	}
	q.pos++
	return e
}

// peekEvent is the first of the queue's events (not the lane's); nil
// when there is none.
func (q *queue) peekEvent() *event {
	for {
		if q.pos < len(q.cur) {
			q.peekSide = len(q.side) > 0 && q.side[0].before(&q.cur[q.pos])
			if q.peekSide {
				return &q.side[0]
			}
			return &q.cur[q.pos]
		}
		if len(q.side) > 0 {
			q.peekSide = true
			return &q.side[0]
		}
		if !q.advance() {
			return nil
		}
	}
}

// advance makes the next non-empty bucket the current one; false when
// nothing is queued.
func (q *queue) advance() bool {
	var next int64
	ok := false
	if q.ring != nil {
		next, ok = q.full.after(q.base)
	}
	if len(q.far) > 0 {
		if b := bucketOf(q.far[0].at); !ok || b < next {
			next, ok = b, true
		}
	}
	if !ok {
		return false
	}
	q.base = next
	for len(q.far) > 0 && bucketOf(q.far[0].at) < q.base+ringSize {
		e := q.far.pop()
		q.add(bucketOf(e.at)&ringMask, &e)
	}
	if q.curc != 0 {
		q.free = append(q.free, q.curc)
	}
	i := q.base & ringMask
	bk := &q.ring[i]
	q.pos = 0
	if bk.head == bk.tail {
		// one chunk: sorted and popped where it is
		q.curc = bk.head
		q.cur = q.chunkAt(bk.head).evs[:bk.n]
	} else {
		q.curc = 0
		q.buf = q.buf[:0]
		for c := bk.head; c != 0; {
			ch := q.chunkAt(c)
			n := int32(chunkLen)
			if c == bk.tail {
				n = bk.n
			}
			q.buf = append(q.buf, ch.evs[:n]...)
			next := ch.next
			ch.next = 0
			q.free = append(q.free, c)
			c = next
		}
		q.cur = q.buf
	}
	*bk = bucket{}
	q.full.clear(i)
	q.sortCur()
	return true
}

// insertionMax is the largest bucket sorted in place. A bucket of one
// chunk is sorted in its chunk, and the radix sort below keeps what it
// sorted as its next scratch (tmp): a chunk sorted by it would be written
// into once it is reused. So no chunk may hold more (checked here: a
// negative constant does not compile).
const (
	insertionMax = 24
	_            = uint(insertionMax - chunkLen)
)

// sortCur sorts the current bucket by key: in place when small, else by
// a radix sort of the times within the bucket (two passes of 7 bits; all
// of its events share the bits above bucketShift) into tmp, then an
// insertion pass that puts events of one time in key order (ties are
// rare, so the pass is linear).
func (q *queue) sortCur() {
	s := q.cur
	if len(s) <= insertionMax {
		insertionSort(s)
		return
	}
	const radix = bucketShift / 2
	var count [1 << radix]int32
	idx, tmpIdx := q.idx[:0], q.idx2[:0]
	for i := range s {
		idx = append(idx, int32(i))
		tmpIdx = append(tmpIdx, 0)
	}
	for pass := 0; pass < 2; pass++ {
		shift := uint(pass * radix)
		count = [1 << radix]int32{}
		for _, i := range idx {
			count[(s[i].at>>shift)&(1<<radix-1)]++
		}
		var sum int32
		for d := range count {
			sum, count[d] = sum+count[d], sum
		}
		for _, i := range idx {
			d := (s[i].at >> shift) & (1<<radix - 1)
			tmpIdx[count[d]] = i
			count[d]++
		}
		idx, tmpIdx = tmpIdx, idx
	}
	t := q.tmp[:0]
	for _, i := range idx {
		t = append(t, s[i])
	}
	insertionSort(t)
	q.idx, q.idx2, q.cur, q.tmp, q.buf = idx, tmpIdx, t, s, t
}

// insertionSort sorts s by key; linear when s is nearly sorted.
func insertionSort(s []event) {
	for i := 1; i < len(s); i++ {
		if !s[i].before(&s[i-1]) {
			continue
		}
		e := s[i]
		j := i
		for ; j > 0 && e.before(&s[j-1]); j-- {
			s[j] = s[j-1]
		}
		s[j] = e
	}
}

// occupancy marks the non-empty slots of a ring of buckets (slot:
// bucket mod the ring's size), with a summary bit per word of marks: a
// sparse ring (a quiet gap between heights, timeouts far ahead) is
// searched a summary word at a time instead of a mark word at a time,
// which was a fifth of a large run's time.
type occupancy struct {
	words []uint64 // bit s%64 of words[s/64]: slot s is marked
	sum   []uint64 // bit w%64 of sum[w/64]: words[w] != 0
}

func newOccupancy(slots int) occupancy {
	n := slots / 64
	return occupancy{words: make([]uint64, n), sum: make([]uint64, (n+63)/64)}
}

func (o *occupancy) set(slot int64) {
	w := slot / 64
	o.words[w] |= 1 << (slot % 64)
	o.sum[w/64] |= 1 << (w % 64)
}

func (o *occupancy) clear(slot int64) {
	w := slot / 64
	if o.words[w] &^= 1 << (slot % 64); o.words[w] == 0 {
		o.sum[w/64] &^= 1 << (w % 64)
	}
}

// next is the first marked slot at or after from (no wrap); -1: none.
func (o *occupancy) next(from int64) int64 {
	w := from / 64
	if w >= int64(len(o.words)) {
		return -1
	}
	if word := o.words[w] &^ (1<<(from%64) - 1); word != 0 {
		return w*64 + int64(bits.TrailingZeros64(word))
	}
	w++ // the first word after w with a mark, by the summary
	for s := w / 64; s < int64(len(o.sum)); s++ {
		sw := o.sum[s]
		if s == w/64 {
			sw &^= 1<<(w%64) - 1
		}
		if sw != 0 {
			k := s*64 + int64(bits.TrailingZeros64(sw))
			return k*64 + int64(bits.TrailingZeros64(o.words[k]))
		}
	}
	return -1
}

// after is the first bucket after base whose slot is marked; false when
// none is.
func (o *occupancy) after(base int64) (int64, bool) {
	mask := int64(len(o.words))*64 - 1
	start := (base + 1) & mask
	i := o.next(start)
	if i < 0 {
		if i = o.next(0); i < 0 {
			return 0, false
		}
	}
	return base + 1 + (i-start)&mask, true
}

// eventHeap is a binary min-heap of events by key.
type eventHeap []event

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[i].before(&s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(s) {
			break
		}
		m := l
		if r := l + 1; r < len(s) && s[r].before(&s[l]) {
			m = r
		}
		if !s[m].before(&s[i]) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// waitQueue is the events a node holds while its consensus routine is
// busy, sorted by due time, then sequence; q[head:] are waiting. They
// come in that order but for events a fault put back (takeDown).
type waitQueue struct {
	q    []event
	head int
}

func (w *waitQueue) len() int { return len(w.q) - w.head }

func (w *waitQueue) first() *event { return &w.q[w.head] }

func waitsBefore(a, b *event) bool {
	if a.due != b.due {
		return a.due < b.due
	}
	return a.seq < b.seq
}

func (w *waitQueue) push(e event) {
	if w.head > 1024 && w.head > len(w.q)/2 {
		w.q, w.head = w.q[:copy(w.q, w.q[w.head:])], 0
	}
	i := len(w.q)
	w.q = append(w.q, e)
	for ; i > w.head && waitsBefore(&e, &w.q[i-1]); i-- {
		w.q[i] = w.q[i-1]
	}
	w.q[i] = e
}

func (w *waitQueue) pop() event {
	e := w.q[w.head]
	w.head++
	if w.head == len(w.q) {
		w.q, w.head = w.q[:0], 0
	}
	return e
}

// all are the waiting events, in order.
func (w *waitQueue) all() []event { return w.q[w.head:] }

func (w *waitQueue) clear() { w.q, w.head = w.q[:0], 0 }
