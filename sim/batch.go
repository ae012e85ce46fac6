package sim

import "math/bits"

// A broadcast as one batch. A vote goes to every neighbour at once (n-1
// messages in a full mesh), and each message used to be its own queue
// event, written into the time bucket of its arrival: at 1,000
// validators millions of them were in flight, scattered over hundreds of
// MiB, and writing each was a cache miss or two. A batch keeps a
// broadcast's messages together, sorted by arrival, and the queue holds
// only a cursor: the batch's next message. Popping it hands that message
// on and queues the next one (a k-way merge of the batches through the
// queue). Each message keeps the sequence number it would have had as an
// event of its own, so the queue pops exactly the order it popped
// before: the same run, byte for byte, at a fraction of the memory.

// batchMin is the smallest broadcast sent as a batch: fewer messages go
// into the queue one by one (the same order either way).
const batchMin = 8

// batchMsg is one message of a batch, in 8 bytes (a broadcast's are
// read back one by one, far apart, so their size is the cache misses of
// a large network).
type batchMsg struct {
	at   uint32 // arrival, ns after the batch's t0 (one later goes alone)
	node uint16 // receiver
	k    uint16 // its place in the broadcast: its sequence number is seq0+k
}

// batchMax is the most messages a batch holds (node and k are uint16).
const batchMax = 1 << 16

type batch struct {
	msg  event // what every message of the broadcast carries
	t0   int64
	seq0 uint64
	msgs []batchMsg
	pos  int
}

// batches are the open batches, named in events by index + 1.
type batches struct {
	all  []batch
	free []int32
	tmp  []batchMsg
}

// open starts a batch of messages carrying msg; 0 when none is free and
// none can be made (never: it grows).
func (bs *batches) open(msg *event, t0 int64, seq0 uint64) int32 {
	var id int32
	if k := len(bs.free); k > 0 {
		id = bs.free[k-1]
		bs.free = bs.free[:k-1]
	} else {
		bs.all = append(bs.all, batch{})
		id = int32(len(bs.all))
	}
	b := &bs.all[id-1]
	b.msg, b.t0, b.seq0, b.msgs, b.pos = *msg, t0, seq0, b.msgs[:0], 0
	b.msg.batch = 0
	return id
}

// cursor is batch id's next message as an event, false when it has no
// more (the batch is then free again).
func (bs *batches) cursor(id int32) (event, bool) {
	b := &bs.all[id-1]
	if b.pos == len(b.msgs) {
		bs.free = append(bs.free, id)
		return event{}, false
	}
	m := b.msgs[b.pos]
	b.pos++
	e := b.msg
	at := b.t0 + int64(m.at)
	e.at, e.due, e.seq, e.node, e.kind, e.batch = at, at, b.seq0+uint64(m.k), int32(m.node), evMsg, id
	return e, true
}

// sortBatch orders b's messages by arrival, then sequence number. They
// come in sequence order; a stable radix sort of the arrival times'
// high bits (two passes of 8, enough to spread them over 65,536 groups)
// puts them nearly in order, and an insertion pass orders each group.
func (bs *batches) sortBatch(b *batch) {
	s := b.msgs
	if len(s) < 2 {
		return
	}
	if len(s) > 48 {
		lo, hi := s[0].at, s[0].at
		for _, m := range s[1:] {
			lo, hi = min(lo, m.at), max(hi, m.at)
		}
		shift := max(bits.Len32(hi-lo)-16, 0)
		if cap(bs.tmp) < len(s) {
			bs.tmp = make([]batchMsg, len(s))
		}
		src, dst := s, bs.tmp[:len(s)]
		for pass := range 2 {
			var count [256]int32
			sh := shift + 8*pass
			for _, m := range src {
				count[((m.at-lo)>>sh)&255]++
			}
			var sum int32
			for d := range count {
				sum, count[d] = sum+count[d], sum
			}
			for _, m := range src {
				d := ((m.at - lo) >> sh) & 255
				dst[count[d]] = m
				count[d]++
			}
			src, dst = dst, src
		}
		// two passes: the result is back in s
	}
	for i := 1; i < len(s); i++ {
		m := s[i]
		if m.at >= s[i-1].at {
			continue
		}
		j := i
		for ; j > 0 && m.at < s[j-1].at; j-- {
			s[j] = s[j-1]
		}
		s[j] = m
	}
}
