package runner

import (
	"sync"

	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
)

// recorder is the single entry point for events during a run: every node
// and every signer emits into it. It keeps one block event per height (the
// first node to commit it), feeds the live tracker, and writes the stream.
// Once sealed (the run is stopping) it drops everything but run_end, so
// nothing the shutdown itself causes is counted as part of the run.
type recorder struct {
	w       *eventlog.Writer
	tracker *results.Tracker // nil: nothing reads the live progress (a model run)
	metrics *liveMetrics     // nil without --metrics

	mu     sync.Mutex
	blocks map[int64]bool
	sealed bool
	downs  results.NodeDowns // validators whose node a fault has taken down now

	// Signers report through a queue: encoding and writing an event must
	// not sit inside a signature (it would be counted as transport time,
	// and it would stall the consensus routine that waits for it).
	queue   chan *eventlog.Event
	drained chan struct{}
	stop    chan struct{}
	once    sync.Once
}

// queueSize bounds the signer event queue. It holds pointers (an Event is
// ~500 bytes; the channel is allocated up front), so it can be deep: a
// signer waits on a full queue only when the writer is thousands of
// events behind, and the order of a signer's events (sign_request before
// its sign) is never changed by a write that jumps the queue.
const queueSize = 8192

func newRecorder(w *eventlog.Writer) *recorder {
	r := &recorder{w: w, tracker: results.NewTracker(), blocks: map[int64]bool{},
		queue: make(chan *eventlog.Event, queueSize), drained: make(chan struct{}), stop: make(chan struct{})}
	go r.drain()
	return r
}

// EmitAsync records e from a signer's goroutine, in order, without
// waiting for it to be written.
func (r *recorder) EmitAsync(e eventlog.Event) {
	select {
	case <-r.stop:
		r.Emit(e) // dropped if sealed, as any late event
	case r.queue <- &e:
	}
}

func (r *recorder) drain() {
	defer close(r.drained)
	for {
		select {
		case e := <-r.queue:
			r.Emit(*e)
		case <-r.stop:
			for {
				select {
				case e := <-r.queue:
					r.Emit(*e)
				default:
					return
				}
			}
		}
	}
}

func (r *recorder) Emit(e eventlog.Event) {
	r.mu.Lock()
	if !r.accept(&e) {
		r.mu.Unlock()
		return
	}
	// Writing under the lock keeps the file in the order events were
	// accepted, so a block line never precedes the run_start line.
	r.w.Emit(e)
	// The load generator asks which nodes are down (nodeDown). A missed
	// precommit is never classified here: missed.csv does that from the
	// stream, by one rule, so no live copy can disagree with it.
	if e.Kind == eventlog.KindFault {
		r.downs.Observe(&e)
	}
	tracker := r.tracker
	r.mu.Unlock()
	if tracker != nil {
		tracker.Observe(e)
	}
	if r.metrics != nil {
		r.metrics.Observe(e)
	}
}

var _ eventlog.BatchSink = (*recorder)(nil)

// EmitBatch is Emit of each event in turn, under one lock (the sim's
// millions of events come this way).
func (r *recorder) EmitBatch(evs []eventlog.Event) {
	r.mu.Lock()
	kept := 0
	for i := range evs {
		if !r.accept(&evs[i]) {
			continue
		}
		if kept != i {
			evs[kept] = evs[i]
		}
		kept++
	}
	evs = evs[:kept]
	r.w.EmitBatch(evs)
	for i := range evs {
		if evs[i].Kind == eventlog.KindFault {
			r.downs.Observe(&evs[i])
		}
	}
	tracker := r.tracker
	r.mu.Unlock()
	if tracker != nil {
		tracker.ObserveBatch(evs)
	}
	if r.metrics != nil {
		for i := range evs {
			r.metrics.Observe(evs[i])
		}
	}
}

// accept says whether e goes into the stream: nothing but run_end once
// sealed, and one block event a height. r.mu is held.
func (r *recorder) accept(e *eventlog.Event) bool {
	if r.sealed && e.Kind != eventlog.KindRunEnd {
		return false
	}
	if e.Kind == eventlog.KindBlock {
		if r.blocks[e.Height] {
			return false
		}
		r.blocks[e.Height] = true
	}
	return true
}

// untracked stops feeding the live tracker: nothing will read it.
func (r *recorder) untracked() {
	r.mu.Lock()
	r.tracker = nil
	r.mu.Unlock()
}

// nodeDown reports whether a fault has validator v's node down now.
func (r *recorder) nodeDown(v string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.downs.Down(v)
}

// seal writes what signers queued, then stops accepting events from nodes
// and signers.
func (r *recorder) seal() {
	r.once.Do(func() { close(r.stop) })
	<-r.drained
	r.mu.Lock()
	r.sealed = true
	r.mu.Unlock()
}
