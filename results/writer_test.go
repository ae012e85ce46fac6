package results

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

func TestWriterFlushing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	w, err := NewWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	// A block pushes itself and everything before it to the OS at once.
	w.Emit(Event{Kind: KindSign, Validator: "v1"})
	w.Emit(Event{Kind: KindBlock, Height: 1})
	if n := fileLines(t, path); n != 2 {
		t.Fatalf("after a block: %d lines in the file, want 2", n)
	}

	// Anything else reaches the file within the flush interval.
	w.Emit(Event{Kind: KindVote, Validator: "v1"})
	deadline := time.Now().Add(5 * flushInterval)
	for fileLines(t, path) != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("vote not flushed after %v", 5*flushInterval)
		}
		time.Sleep(10 * time.Millisecond)
	}

	w.Emit(Event{Kind: KindRunEnd, StopReason: StopHeights})
	if n := fileLines(t, path); n != 4 {
		t.Fatalf("after run_end: %d lines, want 4", n)
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
