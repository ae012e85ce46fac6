package runner

import (
	"sync"

	"github.com/valnet/valnet/results"
)

// recorder is the single entry point for events during a run: every node
// and every signer emits into it. It keeps one block event per height (the
// first node to commit it), feeds the live tracker, and writes the stream.
// Once sealed (the run is stopping) it drops everything but run_end, so
// nothing the shutdown itself causes is counted as part of the run.
type recorder struct {
	w       *results.Writer
	tracker *results.Tracker

	mu     sync.Mutex
	blocks map[int64]bool
	sealed bool
}

func newRecorder(w *results.Writer) *recorder {
	return &recorder{w: w, tracker: results.NewTracker(), blocks: map[int64]bool{}}
}

func (r *recorder) Emit(e results.Event) {
	r.mu.Lock()
	if r.sealed && e.Kind != results.KindRunEnd {
		r.mu.Unlock()
		return
	}
	if e.Kind == results.KindBlock {
		if r.blocks[e.Height] {
			r.mu.Unlock()
			return
		}
		r.blocks[e.Height] = true
	}
	// Writing under the lock keeps the file in the order events were
	// accepted, so a block line never precedes the run_start line.
	r.w.Emit(e)
	r.mu.Unlock()
	r.tracker.Observe(e)
}

// seal stops accepting events from nodes and signers.
func (r *recorder) seal() {
	r.mu.Lock()
	r.sealed = true
	r.mu.Unlock()
}
