package nettest

import (
	"fmt"
	"testing"
	"time"

	"github.com/valnet/valnet/results/eventlog"
)

func vote(val string, h int64, phase, block string) eventlog.Event {
	return eventlog.Event{Kind: eventlog.KindVote, Node: "v0", Validator: val, Height: h, Phase: phase, BlockID: block}
}

// A double sign is two votes of one validator for different blocks at one
// height, round and phase, whoever saw them; anything else is not.
func TestConflictingVotes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []eventlog.Event
		want   int
	}{
		{"one vote each", []eventlog.Event{vote("v1", 1, "prevote", "A"), vote("v2", 1, "prevote", "A")}, 0},
		{"the same vote seen twice", []eventlog.Event{vote("v1", 1, "prevote", "A"), vote("v1", 1, "prevote", "A")}, 0},
		{"another phase, another height", []eventlog.Event{vote("v1", 1, "prevote", "A"), vote("v1", 1, "precommit", "B"), vote("v1", 2, "prevote", "B")}, 0},
		{"two blocks at one step", []eventlog.Event{vote("v1", 1, "prevote", "A"), vote("v1", 1, "prevote", "B")}, 1},
	} {
		if got := ConflictingVotes(tc.events); len(got) != tc.want {
			t.Errorf("%s: %q, want %d", tc.name, got, tc.want)
		}
	}
}

// The log keeps each node's highest block, and a validator signed in once
// a later block's commit does not list it as absent.
func TestEventLog(t *testing.T) {
	l := NewEventLog()
	if !l.FirstBlock().IsZero() || l.MinBlock("v0") != 0 {
		t.Fatal("an empty log has blocks")
	}
	for _, e := range []eventlog.Event{
		{Kind: eventlog.KindBlock, Node: "v0", Height: 3, LastCommitAbsent: []string{"v1"}},
		{Kind: eventlog.KindBlock, Node: "v0", Height: 2, LastCommitAbsent: []string{"v1"}},
		{Kind: eventlog.KindBlock, Node: "v1", Height: 5, LastCommitAbsent: []string{"v1"}},
		vote("v1", 5, "prevote", "A"),
	} {
		l.Emit(e)
	}
	if l.Block("v0") != 3 || l.Block("v1") != 5 || l.MinBlock("v0", "v1") != 3 || l.FirstBlock().IsZero() {
		t.Errorf("blocks %d %d min %d", l.Block("v0"), l.Block("v1"), l.MinBlock("v0", "v1"))
	}
	if l.Count(eventlog.KindVote, "v0") != 1 || len(l.Snapshot()) != 4 {
		t.Errorf("count %d, snapshot %d", l.Count(eventlog.KindVote, "v0"), len(l.Snapshot()))
	}
	for _, tc := range []struct {
		validator string
		after     int64
		want      bool
	}{
		{"v0", 0, true},  // block 2 does not list it
		{"v1", 0, false}, // every block lists it
		{"v0", 3, true},  // block 5
		{"v0", 4, false}, // no block after 5
	} {
		if got := SignedIn(l.Snapshot(), tc.validator, tc.after); got != tc.want {
			t.Errorf("SignedIn(%s, %d) = %v, want %v", tc.validator, tc.after, got, tc.want)
		}
	}
}

// fatalTB records a Fatalf instead of ending the test.
type fatalTB struct {
	testing.TB
	failed string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	panic(f)
}

// WaitFor returns once cond holds, and fails when it does not before the
// deadline.
func TestWaitFor(t *testing.T) {
	polls := 0
	WaitFor(t, 10*time.Second, "three polls", func() bool { polls++; return polls == 3 })
	if polls != 3 {
		t.Errorf("%d polls", polls)
	}
	f := &fatalTB{TB: t}
	start := time.Now()
	func() {
		defer func() { _ = recover() }()
		WaitFor(f, 200*time.Millisecond, "never", func() bool { return false })
	}()
	if f.failed == "" || time.Since(start) < 200*time.Millisecond {
		t.Errorf("WaitFor on a false condition: %q after %v", f.failed, time.Since(start))
	}
}
