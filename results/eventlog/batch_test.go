package eventlog

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// TestBatchWritesWhatEmitWrites: events handed on in batches (a Batcher
// into a Writer's EmitBatch, with flushes at uneven points) make the
// same file, byte for byte, as the same events emitted one by one; an
// event without a time gets the writer's clock in both; subscribers see
// every event in order.
func TestBatchWritesWhatEmitWrites(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	var events []Event
	kinds := []Kind{KindRunStart, KindStep, KindVote, KindBlock, KindSign, KindRunEnd}
	for i := range 3*batchSize + 17 {
		e := Event{Time: t0.Add(time.Duration(i) * time.Millisecond), Kind: kinds[i%len(kinds)], Node: "n", Height: int64(i)}
		if i%97 == 0 {
			e.Time = time.Time{} // stamped by the writer
		}
		events = append(events, e)
	}
	write := func(name string, emit func(w *Writer)) ([]byte, []int64) {
		path := filepath.Join(t.TempDir(), name)
		w, err := newWriter(path, clock, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		var seen []int64
		w.Subscribe(func(e Event) { seen = append(seen, e.Height) })
		emit(w)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return raw, seen
	}
	one, oneSeen := write("one.jsonl", func(w *Writer) {
		for _, e := range events {
			w.Emit(e)
		}
	})
	batched, batchSeen := write("batch.jsonl", func(w *Writer) {
		sink, flush := NewBatcher(w)
		if _, ok := sink.(*Batcher); !ok {
			t.Fatalf("NewBatcher(*Writer) is a %T, want a *Batcher", sink)
		}
		for i, e := range events {
			sink.Emit(e)
			if i%500 == 499 {
				flush() // a partial batch
			}
		}
		flush()
	})
	if !bytes.Equal(one, batched) {
		t.Fatalf("batched file differs: %d bytes against %d one by one", len(batched), len(one))
	}
	if n := bytes.Count(one, []byte{'\n'}); n != len(events) {
		t.Fatalf("%d lines, want %d", n, len(events))
	}
	if len(batchSeen) != len(oneSeen) {
		t.Fatalf("subscriber saw %d events in batches, %d one by one", len(batchSeen), len(oneSeen))
	}
	for i := range oneSeen {
		if batchSeen[i] != oneSeen[i] {
			t.Fatalf("subscriber's event %d: height %d in batches, %d one by one", i, batchSeen[i], oneSeen[i])
		}
	}
}

// TestNewBatcherPassesPlainSinks: a sink that takes no batches gets each
// event at once; its flush does nothing.
func TestNewBatcherPassesPlainSinks(t *testing.T) {
	var got []int64
	plain := SinkFunc(func(e Event) { got = append(got, e.Height) })
	sink, flush := NewBatcher(plain)
	sink.Emit(Event{Kind: KindStep, Height: 1})
	if len(got) != 1 {
		t.Fatalf("a plain sink got %d events after one Emit, want 1", len(got))
	}
	flush()
	if len(got) != 1 {
		t.Fatalf("flush sent %d more", len(got)-1)
	}
}

// TestWriterEmitBatchWakesEncoder: a batch with a block wakes the encoder,
// as Emit of a block does; one without does not until kickEvents wait.
func TestWriterEmitBatchWakesEncoder(t *testing.T) {
	w, err := openWriter(filepath.Join(t.TempDir(), "events.jsonl"), clockwork.NewFakeClock())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { go w.encoder(time.Hour); w.Close() }()
	w.EmitBatch([]Event{{Kind: KindStep}, {Kind: KindVote}})
	if kicked(w) {
		t.Fatal("a batch of a step and a vote woke the encoder")
	}
	w.EmitBatch([]Event{{Kind: KindStep}, {Kind: KindBlock, Height: 1}})
	if !kicked(w) {
		t.Fatal("a batch with a block did not wake the encoder")
	}
	w.drain()
	w.EmitBatch(make([]Event, kickEvents))
	if !kicked(w) {
		t.Fatalf("a batch of %d events did not wake the encoder", kickEvents)
	}
}
