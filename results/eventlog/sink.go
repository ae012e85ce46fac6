package eventlog

// Sink receives the events a backend observes (a node's, or the sim's).
// It is called from the backend's event goroutines and must not block for
// long. *Writer is one; the runner's recorder, tests' logs and SinkFunc
// are others.
type Sink interface {
	Emit(Event)
}

// BatchSink is a Sink that also takes many events in one call, in order,
// as if each were emitted in turn. It may change the slice's elements
// and keeps none of them after it returns. A producer of millions of
// events (the sim) hands them on through a Batcher: one lock and one
// copy a batch rather than a lock, a wake-up and several copies of a
// 672-byte event each.
type BatchSink interface {
	Sink
	EmitBatch([]Event)
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(Event)

func (f SinkFunc) Emit(e Event) { f(e) }

var (
	_ Sink      = (*Writer)(nil)
	_ BatchSink = (*Writer)(nil)
)

// batchSize is how many events a Batcher gathers before it hands them on.
const batchSize = 1024

// Batcher gathers the events of a single producer and hands them to its
// BatchSink in batches, in order. Flush hands on what it holds; the
// producer flushes before anything else may emit into the same stream
// and when it stops (a deferred Flush keeps a crash's last events).
type Batcher struct {
	sink BatchSink
	buf  []Event
}

// NewBatcher returns a Sink for one producer: a Batcher if s takes
// batches, else s itself; flush hands on what the Batcher holds (a no-op
// for s).
func NewBatcher(s Sink) (sink Sink, flush func()) {
	bs, ok := s.(BatchSink)
	if !ok {
		return s, func() {}
	}
	b := &Batcher{sink: bs, buf: make([]Event, 0, batchSize)}
	return b, b.Flush
}

var _ Sink = (*Batcher)(nil)

// Emit adds e to the batch; a full batch is handed on.
func (b *Batcher) Emit(e Event) {
	b.buf = append(b.buf, e)
	if len(b.buf) == cap(b.buf) {
		b.Flush()
	}
}

// Flush hands on the events gathered so far.
func (b *Batcher) Flush() {
	if len(b.buf) == 0 {
		return
	}
	b.sink.EmitBatch(b.buf)
	clear(b.buf) // drop what they point to
	b.buf = b.buf[:0]
}
