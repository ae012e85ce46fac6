package sim

import (
	"container/heap"
	"math/rand/v2"
	"strings"
	"testing"
)

// refHeap is the plain heap of every event the queue must match.
type refHeap []event

func (h refHeap) Len() int           { return len(h) }
func (h refHeap) Less(i, j int) bool { return h[i].before(&h[j]) }
func (h refHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *refHeap) Push(x any)        { *h = append(*h, x.(event)) }
func (h *refHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// TestQueuePopsInKeyOrder: whatever is pushed (now, into the current
// bucket, across the ring, beyond it, with kept due times and sequence
// numbers), the queue pops in key order, as one sorted list would.
func TestQueuePopsInKeyOrder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spread int64 // how far ahead of now an event may be, ns
		burst  int   // events pushed per pop, at most
	}{
		{"same bucket", 1 << bucketShift, 3},
		{"ring", ringSize << bucketShift / 4, 4},
		{"beyond the ring", 3 * ringSize << bucketShift, 2},
		{"broadcasts", 200e6, 200},
		{"lane broadcasts", 300e6, 30},
		{"lane beyond its buckets", 3 * laneSize << laneShift, 20},
		{"lane after quiet spells", 5e9, 2}, // empties, then starts again
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.spread)))
			var q queue
			ref := &refHeap{}
			now, popped := int64(0), 0
			// a standing header (gossip.go's wake-ups and bursts): its
			// messages carry their own arg
			wake := event{kind: evGossip, step: 1}
			standing := q.standingHeader(wake)
			for round := 0; round < 4000 || ref.Len() > 0; round++ {
				if round < 4000 && strings.HasPrefix(tc.name, "lane") && rng.IntN(3) == 0 {
					// a broadcast: its messages go through the lane
					msg := event{mk: mPrevote, from: int32(rng.IntN(100)), height: int64(round), round: 1, block: 2}
					h := q.openHeader(&msg)
					for range rng.IntN(tc.burst + 1) {
						e := msg
						e.at, e.node = now+rng.Int64N(tc.spread), int32(rng.IntN(100))
						if rng.IntN(8) == 0 {
							e.at = now
						}
						q.pushMsg(h, e.at, e.node, e.via)
						e.due, e.seq = e.at, q.seq
						heap.Push(ref, e)
					}
					q.closeHeader(h)
					for range rng.IntN(3) {
						e := wake
						e.at, e.node, e.via, e.arg = now+rng.Int64N(tc.spread), int32(rng.IntN(100)), int32(rng.IntN(1000)), int32(rng.IntN(1000))
						q.pushMsgArg(standing, e.at, e.node, e.via, e.arg)
						e.due, e.seq = e.at, q.seq
						heap.Push(ref, e)
					}
				}
				if round < 4000 {
					for range rng.IntN(tc.burst + 1) {
						e := event{at: now + rng.Int64N(tc.spread), node: int32(rng.IntN(100))}
						if rng.IntN(8) == 0 {
							e.at = now // same time: sequence decides
						}
						if rng.IntN(10) == 0 {
							// an event held back: its key keeps an earlier due time
							q.seq++
							e.seq, e.due = q.seq, now-rng.Int64N(1e6)
							q.pushKept(&e)
						} else {
							q.push(e)
							e.due, e.seq = e.at, q.seq
						}
						heap.Push(ref, e)
					}
				}
				if ref.Len() == 0 {
					continue
				}
				got := q.pop()
				if got == nil {
					t.Fatalf("pop %d: queue empty, %d expected", popped, ref.Len())
				}
				want := heap.Pop(ref).(event)
				if *got != want {
					t.Fatalf("pop %d: got %+v, want %+v", popped, *got, want)
				}
				if got.at < now {
					t.Fatalf("pop %d: time went back from %d to %d", popped, now, got.at)
				}
				now = got.at
				popped++
			}
			if e := q.pop(); e != nil {
				t.Fatalf("queue should be empty, popped %+v", *e)
			}
			if popped < 1000 {
				t.Fatalf("only %d pops", popped)
			}
			if l := &q.lane; len(l.free) != len(l.hdrs)-1 {
				t.Fatalf("%d of %d broadcast headers still held (1 standing)", len(l.hdrs)-len(l.free), len(l.hdrs))
			}
		})
	}
}

// TestWaitQueueKeepsDueOrder: a node's waiting events come out by due
// time, then sequence, also when one comes in out of order.
func TestWaitQueueKeepsDueOrder(t *testing.T) {
	var w waitQueue
	in := []event{{due: 10, seq: 1}, {due: 10, seq: 2}, {due: 12, seq: 3}, {due: 5, seq: 9}, {due: 11, seq: 4}}
	for _, e := range in[:3] {
		w.push(e)
	}
	if got := w.pop(); got.seq != 1 {
		t.Fatalf("first: seq %d, want 1", got.seq)
	}
	for _, e := range in[3:] {
		w.push(e)
	}
	var got []uint64
	for w.len() > 0 {
		got = append(got, w.pop().seq)
	}
	want := []uint64{9, 2, 4, 3}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

// TestOccupancyAfter: the summarised search finds what a scan of every
// slot from base+1 round the ring finds.
func TestOccupancyAfter(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, slots := range []int{64, laneSize, ringSize} {
		o := newOccupancy(slots)
		marked := make([]bool, slots)
		for step := range 20000 {
			s := rng.Int64N(int64(slots))
			if rng.IntN(3) == 0 {
				o.clear(s)
				marked[s] = false
			} else if step%7 != 0 {
				o.set(s)
				marked[s] = true
			}
			base := rng.Int64N(1 << 40)
			want, wantOK := int64(0), false
			for d := int64(1); d <= int64(slots); d++ {
				if marked[(base+d)%int64(slots)] {
					want, wantOK = base+d, true
					break
				}
			}
			if got, ok := o.after(base); got != want || ok != wantOK {
				t.Fatalf("slots %d, base %d: after = %d %v, want %d %v", slots, base, got, ok, want, wantOK)
			}
			if rng.IntN(500) == 0 { // empty it now and then
				for i := range marked {
					o.clear(int64(i))
					marked[i] = false
				}
			}
		}
	}
}
