package eventlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

// waitLines waits (polling, up to within) until the file holds want
// complete lines.
func waitLines(t *testing.T, path string, want int, within time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for fileLines(t, path) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d lines in the file after %v, want %d", what, fileLines(t, path), within, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWriterFlushing(t *testing.T) {
	// The idle wake-up an hour away: only a block, run_end or a full
	// queue can make the encoder write.
	path := filepath.Join(t.TempDir(), "events.jsonl")
	w, err := newWriter(path, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	// A block wakes the encoder: it and everything before it are written.
	w.Emit(Event{Kind: KindSign, Validator: "v1"})
	w.Emit(Event{Kind: KindBlock, Height: 1})
	waitLines(t, path, 2, 10*time.Second, "after a block")

	// Anything else waits (here: for an hour) ...
	w.Emit(Event{Kind: KindVote, Validator: "v1"})
	time.Sleep(50 * time.Millisecond)
	if n := fileLines(t, path); n != 2 {
		t.Fatalf("a vote alone was written: %d lines", n)
	}
	// ... until a flush, a run_end, or kickEvents of them.
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := fileLines(t, path); n != 3 {
		t.Fatalf("after Flush: %d lines, want 3", n)
	}
	w.Emit(Event{Kind: KindRunEnd, StopReason: StopHeights})
	waitLines(t, path, 4, 10*time.Second, "after run_end")
	for i := range kickEvents {
		w.Emit(Event{Kind: KindVote, Height: int64(i)})
	}
	waitLines(t, path, 4+kickEvents, 10*time.Second, "after a full queue")

	// With the default wake-up, a vote reaches the file within it.
	path2 := filepath.Join(t.TempDir(), "events.jsonl")
	w2, err := NewWriter(path2)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	w2.Emit(Event{Kind: KindVote, Validator: "v1"})
	waitLines(t, path2, 1, 20*flushInterval, "a vote")
}

// TestWriterHelpsWhenBehind: an emitter far ahead of the encoder encodes
// the queue itself, so the queue never holds more than helpEvents.
func TestWriterHelpsWhenBehind(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	w, err := newWriter(path, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w.wmu.Lock() // the encoder is stuck: it cannot drain
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range helpEvents + 10 {
			w.Emit(Event{Kind: KindVote, Height: int64(i)})
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		n := len(w.queue)
		w.mu.Unlock()
		if n >= helpEvents {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queue holds %d events, never %d", n, helpEvents)
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("the emitter went on past helpEvents while the queue could not drain")
	case <-time.After(50 * time.Millisecond):
	}
	w.wmu.Unlock()
	<-done
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
