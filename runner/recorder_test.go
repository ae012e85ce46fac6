package runner

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/valnet/valnet/results"
)

func TestRecorderKeepsOneBlockPerHeightAndDropsAfterSeal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	w, err := results.NewWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	r := newRecorder(w)
	now := time.Now()
	r.Emit(results.Event{Time: now, Kind: results.KindRunStart, Scenario: "x"})
	r.Emit(results.Event{Time: now, Kind: results.KindBlock, Node: "v1", Height: 1})
	r.Emit(results.Event{Time: now, Kind: results.KindBlock, Node: "v2", Height: 1})
	r.Emit(results.Event{Time: now, Kind: results.KindBlock, Node: "v2", Height: 2})
	r.seal()
	r.Emit(results.Event{Time: now, Kind: results.KindVote, Node: "v1", Height: 3})
	r.Emit(results.Event{Time: now, Kind: results.KindRunEnd, StopReason: results.StopHeights})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	events, err := results.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, string(e.Kind)+"/"+e.Node)
	}
	want := []string{"run_start/", "block/v1", "block/v2", "run_end/"}
	if len(kinds) != len(want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("events %v, want %v", kinds, want)
		}
	}
	if p := r.tracker.Snapshot(); p.Height != 2 {
		t.Fatalf("tracker height %d, want 2", p.Height)
	}
}
