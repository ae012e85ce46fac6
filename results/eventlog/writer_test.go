package eventlog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func TestWriterConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	w, err := NewWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	var seen atomic.Int64
	w.Subscribe(func(Event) { seen.Add(1) })

	const goroutines, perG = 16, 500
	kinds := []Kind{KindSign, KindVote, KindStep, KindBlock, KindNewRound}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				// Node names the goroutine, Height its sequence; a long
				// Error makes lines of varied length straddle flushes.
				w.Emit(Event{
					Time: t0, Kind: kinds[i%len(kinds)], Node: fmt.Sprintf("g%d", g), Height: int64(i),
					Error: string(bytes.Repeat([]byte{'x'}, (g*31+i*17)%700)),
				})
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) == 0 || raw[len(raw)-1] != '\n' {
		t.Fatal("file does not end with a complete line")
	}
	lines := bytes.Split(raw[:len(raw)-1], []byte{'\n'})
	if len(lines) != goroutines*perG {
		t.Fatalf("got %d lines, want %d", len(lines), goroutines*perG)
	}
	next := map[string]int64{} // per goroutine: events keep their emit order
	for n, line := range lines {
		var ev Event
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("line %d is not a complete event: %v", n+1, err)
		}
		if ev.Height != next[ev.Node] {
			t.Fatalf("line %d: %s event %d, want %d", n+1, ev.Node, ev.Height, next[ev.Node])
		}
		next[ev.Node]++
	}
	if seen.Load() != goroutines*perG {
		t.Errorf("subscriber saw %d events, want %d", seen.Load(), goroutines*perG)
	}
}

// fileLines returns the complete lines currently in the file.
func fileLines(t *testing.T, path string) int {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > 0 && raw[len(raw)-1] != '\n' {
		t.Fatal("file ends with a partial line")
	}
	return bytes.Count(raw, []byte{'\n'})
}

// waitLines polls, up to within, until the encoder (another goroutine)
// has written want complete lines to the file.
func waitLines(t *testing.T, path string, want int, within time.Duration, what string) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()
	for fileLines(t, path) != want {
		select {
		case <-deadline.C:
			t.Fatalf("%s: %d lines in the file after %v, want %d", what, fileLines(t, path), within, want)
		case <-poll.C:
		}
	}
}

// kicked reports whether Emit woke the encoder (and takes the wake-up):
// with no encoder running, the kick channel holds exactly what Emit sent.
func kicked(w *Writer) bool {
	select {
	case <-w.kick:
		return true
	default:
		return false
	}
}

// TestWriterWakesEncoder: a block, a run_end or kickEvents queued events
// wake the encoder; anything else waits for the idle wake-up. No encoder
// runs, so what Emit sent is all the kick channel holds.
func TestWriterWakesEncoder(t *testing.T) {
	w, err := openWriter(filepath.Join(t.TempDir(), "events.jsonl"), clockwork.NewFakeClock())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { go w.encoder(time.Hour); w.Close() }()
	steps := []struct {
		ev   Event
		wake bool
	}{
		{Event{Kind: KindSign, Validator: "v1"}, false},
		{Event{Kind: KindBlock, Height: 1}, true},
		{Event{Kind: KindVote, Validator: "v1"}, false},
		{Event{Kind: KindStep, Step: "propose"}, false},
		{Event{Kind: KindRunEnd, StopReason: StopHeights}, true},
	}
	for i, st := range steps {
		w.Emit(st.ev)
		if got := kicked(w); got != st.wake {
			t.Fatalf("step %d: a %s event woke the encoder: %v, want %v", i, st.ev.Kind, got, st.wake)
		}
	}
	w.drain()
	for i := range kickEvents {
		w.Emit(Event{Kind: KindVote, Height: int64(i)})
		if got, want := kicked(w), i == kickEvents-1; got != want {
			t.Fatalf("vote %d of %d queued: woke the encoder %v, want %v", i+1, kickEvents, got, want)
		}
	}
}

// TestWriterFlushing: the encoder writes what a wake-up (a block, a
// run_end, a full queue) or its idle tick finds queued; Flush writes at
// once. The fake clock ticks only when the test advances it.
func TestWriterFlushing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	clock := clockwork.NewFakeClock()
	path := filepath.Join(t.TempDir(), "events.jsonl")
	w, err := newWriter(path, clock, flushInterval)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	// A block wakes the encoder: it and everything before it are written.
	w.Emit(Event{Kind: KindSign, Validator: "v1"})
	w.Emit(Event{Kind: KindBlock, Height: 1})
	waitLines(t, path, 2, 10*time.Second, "after a block")

	// A vote waits for a flush (TestWriterWakesEncoder: it wakes no one) ...
	w.Emit(Event{Kind: KindVote, Validator: "v1"})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := fileLines(t, path); n != 3 {
		t.Fatalf("after Flush: %d lines, want 3", n)
	}
	// ... or for the idle tick, flushInterval later.
	w.Emit(Event{Kind: KindVote, Validator: "v2"})
	if err := clock.BlockUntilContext(ctx, 1); err != nil { // the encoder's ticker
		t.Fatal(err)
	}
	clock.Advance(flushInterval)
	waitLines(t, path, 4, 10*time.Second, "a vote after the idle tick")

	w.Emit(Event{Kind: KindRunEnd, StopReason: StopHeights})
	waitLines(t, path, 5, 10*time.Second, "after run_end")
	for i := range kickEvents {
		w.Emit(Event{Kind: KindVote, Height: int64(i)})
	}
	waitLines(t, path, 5+kickEvents, 10*time.Second, "after a full queue")
}

// TestWriterHelpsWhenBehind: an emitter far ahead of the encoder encodes
// the queue itself, so the queue never holds more than helpEvents. No
// encoder runs (the stuck one): only the emitter can write.
func TestWriterHelpsWhenBehind(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	w, err := openWriter(path, clockwork.NewFakeClock())
	if err != nil {
		t.Fatal(err)
	}
	for i := range helpEvents + 10 {
		w.Emit(Event{Kind: KindVote, Height: int64(i)})
		w.mu.Lock()
		n := len(w.queue)
		w.mu.Unlock()
		if want := (i + 1) % helpEvents; n != want {
			t.Fatalf("after %d events the queue holds %d, want %d", i+1, n, want)
		}
		if i == helpEvents-1 {
			if got := fileLines(t, path); got != helpEvents {
				t.Fatalf("the emitter of event %d left %d lines in the file, want %d", helpEvents, got, helpEvents)
			}
		}
	}
	go w.encoder(time.Hour)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range evs {
		if e.Height != int64(i) {
			t.Fatalf("event %d has height %d: out of order", i, e.Height)
		}
	}
	if len(evs) != helpEvents+10 {
		t.Fatalf("%d events, want %d", len(evs), helpEvents+10)
	}
}

func TestWriterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	w, err := NewWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	w.Emit(Event{Kind: KindStep, Step: "propose"}) // zero time: stamped
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	w.Emit(Event{Kind: KindStep}) // after Close: dropped, no panic
	if err := w.Flush(); err != nil {
		t.Fatalf("Flush after Close: %v", err)
	}

	evs, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Fatalf("got %d events, want 1", len(evs))
	}
	if ts := evs[0].Time; ts.Before(before.Add(-time.Second)) || ts.After(time.Now()) {
		t.Errorf("zero time stamped as %v", ts)
	}
}

func TestNewWriterError(t *testing.T) {
	if _, err := NewWriter(filepath.Join(t.TempDir(), "no", "such", "dir", "events.jsonl")); err == nil {
		t.Error("want an error for a missing directory")
	}
}
