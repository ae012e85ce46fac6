package runner

import (
	"github.com/valnet/valnet/internal/action"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/results/eventlog"
)

// record runs emit against a new recorder over a real events file and
// returns what the file holds once the writer is closed.
func record(t *testing.T, emit func(r *recorder)) (*recorder, []eventlog.Event) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.jsonl")
	w, err := eventlog.NewWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	r := newRecorder(w)
	emit(r)
	r.seal()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	events, err := eventlog.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return r, events
}

// TestRecorderKeepsOneBlockPerHeightAndDropsAfterSeal, one event at a
// time and in batches (the sim's way in, eventlog.Batcher).
func TestRecorderKeepsOneBlockPerHeightAndDropsAfterSeal(t *testing.T) {
	now := time.Now()
	before := []eventlog.Event{
		{Time: now, Kind: eventlog.KindRunStart, Scenario: "x"},
		{Time: now, Kind: eventlog.KindBlock, Node: "v1", Height: 1},
		{Time: now, Kind: eventlog.KindBlock, Node: "v2", Height: 1},
		{Time: now, Kind: eventlog.KindBlock, Node: "v2", Height: 2},
	}
	after := []eventlog.Event{
		{Time: now, Kind: eventlog.KindVote, Node: "v1", Height: 3},
		{Time: now, Kind: eventlog.KindRunEnd, StopReason: eventlog.StopHeights},
	}
	for _, batched := range []bool{false, true} {
		t.Run(map[bool]string{false: "one-by-one", true: "batched"}[batched], func(t *testing.T) {
			emit := func(r *recorder, evs []eventlog.Event) {
				if batched {
					r.EmitBatch(append([]eventlog.Event(nil), evs...))
					return
				}
				for _, e := range evs {
					r.Emit(e)
				}
			}
			r, events := record(t, func(r *recorder) {
				emit(r, before)
				r.seal()
				emit(r, after)
			})
			var kinds []string
			for _, e := range events {
				kinds = append(kinds, string(e.Kind)+"/"+e.Node)
			}
			if got, want := strings.Join(kinds, " "), "run_start/ block/v1 block/v2 run_end/"; got != want {
				t.Fatalf("events %s, want %s", got, want)
			}
			if p := r.tracker.Snapshot(); p.Height != 2 || !p.Done {
				t.Fatalf("tracker height %d, done %v; want 2, true", p.Height, p.Done)
			}
		})
	}
}

// TestRecorderFollowsNodeDowns: the recorder knows which nodes a fault
// has down now (the load generator skips them), by results.NodeChangeOf: a
// node-restart is down from its start to its end whatever its detail
// says, and a node-start ends a stop. It writes only what it was given: a
// missed precommit is classified by the report (missed.csv), never here.
func TestRecorderFollowsNodeDowns(t *testing.T) {
	now := time.Now()
	var downs []string
	_, events := record(t, func(r *recorder) {
		fault := func(v, action, state string) {
			r.Emit(eventlog.Event{Time: now, Kind: eventlog.KindFault, Validator: v, Action: action, State: state, Detail: "x"})
		}
		block := func(h int64, absent ...string) {
			r.Emit(eventlog.Event{Time: now, Kind: eventlog.KindBlock, Height: h, LastCommitAbsent: absent})
		}
		look := func() {
			var d []string
			for _, v := range []string{"v1", "v2", "v3"} {
				if r.nodeDown(v) {
					d = append(d, v)
				}
			}
			downs = append(downs, strings.Join(d, ","))
		}
		r.Emit(eventlog.Event{Time: now, Kind: eventlog.KindRunStart, Scenario: "x"})
		fault("v1", action.NodeRestart, eventlog.FaultStart)
		fault("v2", action.NodeStop, eventlog.FaultStart)
		look()
		block(2, "v1", "v2", "v3")
		fault("v1", action.NodeRestart, eventlog.FaultEnd)
		look()
		fault("v2", action.NodeStart, eventlog.FaultStart)
		look()
		block(3, "v1", "v2")
	})
	if got, want := strings.Join(downs, " | "), "v1,v2 | v2 | "; got != want {
		t.Errorf("nodes down %q, want %q", got, want)
	}
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, string(e.Kind))
	}
	if got, want := strings.Join(kinds, " "), "run_start fault fault block fault fault block"; got != want {
		t.Errorf("events %q, want %q", got, want)
	}
}
