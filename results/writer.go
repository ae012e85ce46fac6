package results

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// Emitter is anything events can be sent to. *Writer implements it; tests
// and packages that only produce events can depend on this instead.
type Emitter interface {
	Emit(Event)
}

const (
	// flushInterval bounds how stale events.jsonl may be while a run is
	// quiet (e.g. stuck in a round), so `tail -f` and a crash lose little.
	flushInterval = 250 * time.Millisecond
	// flushSize bounds the buffer between flushes on a busy network.
	flushSize = 64 << 10
)

// Writer appends events to events.jsonl. Emit is safe for concurrent use and
// cheap: the event is encoded outside the lock and only appended to a memory
// buffer under it; the buffer goes to the OS after every block and run_end
// event, when it grows past 64 KiB, and every 250 ms otherwise. The buffer
// only ever holds whole lines and is written in one call, so a crash leaves
// a file whose lines are all complete (except, at worst, a torn final write,
// which Read tolerates).
type Writer struct {
	mu     sync.Mutex
	f      *os.File
	buf    []byte
	err    error // first error; reported by Flush and Close
	wrErr  bool  // a write failed: stop writing (see flushLocked)
	closed bool

	subMu sync.RWMutex
	subs  []func(Event)

	stop chan struct{}
	done chan struct{}
}

// NewWriter creates (or truncates) the file at path and starts the
// background flusher. Close must be called to stop it.
func NewWriter(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	w := &Writer{
		f:    f,
		buf:  make([]byte, 0, flushSize),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go w.flusher()
	return w, nil
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
		ev.Time = time.Now().UTC()
	}
	line, err := json.Marshal(ev)
	if err != nil {
		// Unreachable for Event's field types; keep the error rather than
		// writing half a line.
		w.setErr(fmt.Errorf("encode %s event: %w", ev.Kind, err))
		return
	}

	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.buf = append(w.buf, line...)
	w.buf = append(w.buf, '\n')
	// A block or run_end is what reports and `tail -f` wait for; push it
	// to the OS right away.
	if ev.Kind == KindBlock || ev.Kind == KindRunEnd || len(w.buf) >= flushSize {
		w.flushLocked()
	}
	w.mu.Unlock()

	w.subMu.RLock()
	subs := w.subs
	w.subMu.RUnlock()
	for _, fn := range subs {
		fn(ev)
	}
}

// Flush hands buffered events to the OS (no fsync) and returns the first
// error seen so far.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.flushLocked()
	}
	return w.err
}

// Close stops the flusher, writes what is buffered, fsyncs and closes the
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

	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	if err := w.f.Sync(); err != nil {
		w.keepErr(err)
	}
	if err := w.f.Close(); err != nil {
		w.keepErr(err)
	}
	return w.err
}

// flushLocked writes the buffer in a single call. After a write error the
// buffer is dropped: retrying could duplicate the part that did get written.
func (w *Writer) flushLocked() {
	if len(w.buf) == 0 {
		return
	}
	if !w.wrErr {
		if _, err := w.f.Write(w.buf); err != nil {
			w.wrErr = true
			w.keepErr(err)
		}
	}
	w.buf = w.buf[:0]
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

func (w *Writer) flusher() {
	defer close(w.done)
	t := time.NewTicker(flushInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.mu.Lock()
			w.flushLocked()
			w.mu.Unlock()
		}
	}
}
