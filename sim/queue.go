package sim

// The event queue: one binary min-heap of value events ordered by time,
// then by the time the event was first due (an event held back while its
// node was busy keeps its place among the others held back), then by
// insertion. No goroutines, no wall clock: the same inputs pop in the same
// order.

type evKind uint8

const (
	evMsg      evKind = iota // a message reaches a node (msg)
	evTimeout                // a consensus timeout of a node fires
	evWake                   // the fault timeline or the load has something due
	evCatchUp                // a lagging node has fetched the next committed block
	evRestart                // a restarted node is up again
	evInternal               // a node's own vote or proposal reaches its receive routine
)

// msgKind is what a message carries.
type msgKind uint8

const (
	mProposal msgKind = iota
	mPart
	mPrevote
	mPrecommit
)

type event struct {
	at, due int64 // virtual ns
	seq     uint64
	kind    evKind
	mk      msgKind
	node    int32 // receiver
	from    int32 // sender; the voter of a vote
	round   int32
	block   int32 // block id (creation round); -1 nil
	step    uint8 // timeout step
	height  int64
	part    int32
}

type queue struct {
	h   []event
	seq uint64
}

func (q *queue) less(a, b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.due != b.due {
		return a.due < b.due
	}
	return a.seq < b.seq
}

func (q *queue) push(e event) {
	if e.due == 0 {
		e.due = e.at
	}
	q.seq++
	e.seq = q.seq
	q.h = append(q.h, e)
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(&q.h[i], &q.h[p]) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

// repush puts back an event held while its node was busy, at at, keeping
// its original due time and sequence so that held events stay in order.
func (q *queue) repush(e event, at int64) {
	e.at = at
	q.h = append(q.h, e)
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(&q.h[i], &q.h[p]) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

func (q *queue) pop() (event, bool) {
	if len(q.h) == 0 {
		return event{}, false
	}
	top := q.h[0]
	last := len(q.h) - 1
	q.h[0] = q.h[last]
	q.h = q.h[:last]
	i, n := 0, len(q.h)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && q.less(&q.h[r], &q.h[l]) {
			m = r
		}
		if !q.less(&q.h[m], &q.h[i]) {
			break
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
	return top, true
}

func (q *queue) len() int { return len(q.h) }
