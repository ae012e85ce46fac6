package eventlog

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

const (
	// flushInterval bounds how stale events.jsonl may be while a run is
	// quiet (e.g. stuck in a round), so `tail -f` and a crash lose little.
	flushInterval = 250 * time.Millisecond
	// flushSize bounds one write.
	flushSize = 64 << 10
)

// Writer appends events to events.jsonl. Emit is safe for concurrent use and
// cheap: it only queues the event; a goroutine of the writer's encodes the
// queue and writes it, in the order the events were emitted, when a block
// or run_end event comes (what reports and `tail -f` wait for), when 256
// events wait, and every 250 ms otherwise. An emitter that gets ahead of
// the encoder by 16,384 events encodes the queue itself, so memory stays
// bounded. A write holds only whole lines, in one call, so a crash leaves
// a file whose lines are all complete (except, at worst, a torn final
// write, which Read tolerates).
type Writer struct {
	// wmu orders the encoding and writing of queued events (held by
	// whoever drains the queue), mu guards the queue and the state.
	wmu    sync.Mutex
	mu     sync.Mutex
	f      *os.File
	clock  clockwork.Clock // stamps zero times and ticks the idle wake-up
	queue  []Event
	spare  []Event      // the last queue drained, empty: the next queue
	lines  *lineEncoder // the encoded lines not yet written; guarded by wmu
	err    error        // first error; reported by Flush and Close
	wrErr  bool         // a write failed: stop writing (see write)
	closed bool

	subMu sync.RWMutex
	subs  []func(Event)

	tee io.Writer // gets each write too (Tee); guarded by wmu

	kick chan struct{} // wakes the encoder
	stop chan struct{}
	done chan struct{}
}

const (
	// kickEvents wakes the encoder when that many events wait.
	kickEvents = 256
	// helpEvents: an emitter that finds that many events waiting encodes
	// them itself.
	helpEvents = 16384
)

// NewWriter creates (or truncates) the file at path and starts the
// background encoder. Close must be called to stop it.
func NewWriter(path string) (*Writer, error) {
	return newWriter(path, clockwork.NewRealClock(), flushInterval)
}

// newWriter is NewWriter on clock, with the encoder's idle wake-up every
// every.
func newWriter(path string, clock clockwork.Clock, every time.Duration) (*Writer, error) {
	w, err := openWriter(path, clock)
	if err != nil {
		return nil, err
	}
	go w.encoder(every)
	return w, nil
}

// openWriter is a writer whose encoder is not started yet: tests start it
// (go w.encoder) when they want it, and before Close.
func openWriter(path string, clock clockwork.Clock) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &Writer{
		f:     f,
		clock: clock,
		lines: newLineEncoder(flushSize + flushSize/4), // a write's lines and the one that crosses flushSize
		kick:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}, nil
}

// Subscribe registers fn to receive every event emitted from now on (the
// live status tracker uses it). fn runs synchronously in the emitting
// goroutine, possibly concurrently with itself, outside the writer's lock:
// it must be fast and safe for concurrent use (Tracker.Observe is).
func (w *Writer) Subscribe(fn func(Event)) {
	w.subMu.Lock()
	w.subs = append(w.subs, fn)
	w.subMu.Unlock()
}

// Emit records ev. A zero Time is stamped with the current time. Events
// emitted after Close are dropped. Write errors are not returned here (the
// emitter is usually consensus code that cannot act on them); Flush and
// Close report the first one.
func (w *Writer) Emit(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = w.clock.Now().UTC()
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.queue = append(w.queue, ev)
	n := len(w.queue)
	w.mu.Unlock()
	w.queued(n, ev.Kind == KindBlock || ev.Kind == KindRunEnd)
	for _, fn := range w.subscribers() {
		fn(ev)
	}
}

// EmitBatch records evs in order, as Emit would each, with one lock and
// at most one wake-up of the encoder.
func (w *Writer) EmitBatch(evs []Event) {
	wake := false
	for i := range evs {
		if evs[i].Time.IsZero() {
			evs[i].Time = w.clock.Now().UTC()
		}
		wake = wake || evs[i].Kind == KindBlock || evs[i].Kind == KindRunEnd
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.queue = append(w.queue, evs...)
	n := len(w.queue)
	w.mu.Unlock()
	w.queued(n, wake)
	for _, fn := range w.subscribers() {
		for i := range evs {
			fn(evs[i])
		}
	}
}

// queued: n events wait now. An emitter that got that far ahead drains
// them itself; a block or run_end (wake), or enough events, wakes the
// encoder.
func (w *Writer) queued(n int, wake bool) {
	switch {
	case n >= helpEvents:
		w.drain()
	case wake || n >= kickEvents:
		select {
		case w.kick <- struct{}{}:
		default: // already woken
		}
	}
}

func (w *Writer) subscribers() []func(Event) {
	w.subMu.RLock()
	defer w.subMu.RUnlock()
	return w.subs
}

// Tee hands every write of whole lines to t as well, once the file took
// it, from the writer's goroutine: a reader of the run's stream as it is
// written, which reads the file's bytes and no others. A failed write to
// t ends the tee; the file goes on. Set it before the first Emit.
func (w *Writer) Tee(t io.Writer) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.tee = t
}

// Flush writes the queued events to the OS (no fsync) and returns the
// first error seen so far.
func (w *Writer) Flush() error {
	w.drain()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close stops the encoder, writes what is queued, fsyncs and closes the
// file. It returns the first error of the writer's lifetime. Calling it
// again returns that error without doing anything.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.err
	}
	w.closed = true
	w.mu.Unlock()

	close(w.stop)
	<-w.done
	w.drain()

	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.f.Sync(); err != nil {
		w.keepErr(err)
	}
	if err := w.f.Close(); err != nil {
		w.keepErr(err)
	}
	return w.err
}

// drain encodes the queued events and writes them, in 64 KiB writes of
// whole lines; the next drain waits for it, so lines keep their order.
func (w *Writer) drain() {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.mu.Lock()
	q := w.queue
	w.queue, w.spare = w.spare, nil
	w.mu.Unlock()
	for i := range q {
		if err := w.lines.encode(&q[i]); err != nil {
			// Unreachable for Event's field types; the line is not
			// written (no half line), the error kept.
			w.setErr(fmt.Errorf("encode %s event: %w", q[i].Kind, err))
			continue
		}
		if len(w.lines.buf) >= flushSize {
			w.write()
		}
	}
	w.write()
	clear(q) // drop what the events point to
	w.mu.Lock()
	if w.spare == nil {
		w.spare = q[:0]
	}
	w.mu.Unlock()
}

// write writes the buffer in a single call; w.wmu must be held. After a
// write error the buffer is dropped: retrying could duplicate the part
// that did get written.
func (w *Writer) write() {
	if len(w.lines.buf) == 0 {
		return
	}
	w.mu.Lock()
	failed := w.wrErr
	w.mu.Unlock()
	if !failed {
		if _, err := w.f.Write(w.lines.buf); err != nil {
			w.mu.Lock()
			w.wrErr = true
			w.keepErr(err)
			w.mu.Unlock()
		} else if w.tee != nil {
			if _, err := w.tee.Write(w.lines.buf); err != nil {
				w.tee = nil // its reader stopped: the file goes on alone
			}
		}
	}
	w.lines.buf = w.lines.buf[:0]
}

func (w *Writer) setErr(err error) {
	w.mu.Lock()
	w.keepErr(err)
	w.mu.Unlock()
}

// keepErr records err if it is the first; w.mu must be held.
func (w *Writer) keepErr(err error) {
	if w.err == nil {
		w.err = err
	}
}

// encoder drains the queue when woken and every every.
func (w *Writer) encoder(every time.Duration) {
	defer close(w.done)
	t := w.clock.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-w.kick:
			w.drain()
		case <-t.Chan():
			w.drain()
		}
	}
}
