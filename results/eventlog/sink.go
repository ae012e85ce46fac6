package eventlog

// Sink receives the events a backend observes (a node's, or the sim's).
// It is called from the backend's event goroutines and must not block for
// long. *Writer is one; the runner's recorder, tests' logs and SinkFunc
// are others.
type Sink interface {
	Emit(Event)
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(Event)

func (f SinkFunc) Emit(e Event) { f(e) }

var _ Sink = (*Writer)(nil)
