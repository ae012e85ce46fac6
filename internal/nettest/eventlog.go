package nettest

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/valnet/valnet/results/eventlog"
)

// EventLog is a Sink that keeps every event, the highest block each node
// reported and when the first block came.
type EventLog struct {
	mu     sync.Mutex
	events []eventlog.Event
	blocks map[string]int64
	first  time.Time
}

func NewEventLog() *EventLog { return &EventLog{blocks: map[string]int64{}} }

func (l *EventLog) Emit(e eventlog.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
	if e.Kind == eventlog.KindBlock {
		if l.first.IsZero() {
			l.first = time.Now()
		}
		if e.Height > l.blocks[e.Node] {
			l.blocks[e.Node] = e.Height
		}
	}
}

// Block is the highest block node has reported.
func (l *EventLog) Block(node string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.blocks[node]
}

// MinBlock is the lowest of nodes' highest blocks.
func (l *EventLog) MinBlock(nodes ...string) int64 {
	m := int64(-1)
	for _, n := range nodes {
		if b := l.Block(n); m < 0 || b < m {
			m = b
		}
	}
	return m
}

// FirstBlock is when the first block event came; zero before.
func (l *EventLog) FirstBlock() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first
}

// Snapshot is every event so far.
func (l *EventLog) Snapshot() []eventlog.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]eventlog.Event(nil), l.events...)
}

// Count is how many events of kind node has reported.
func (l *EventLog) Count(kind eventlog.Kind, node string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := 0
	for _, e := range l.events {
		if e.Kind == kind && e.Node == node {
			c++
		}
	}
	return c
}

// ConflictingVotes lists every validator that, as any node saw it, voted
// for two different blocks in one height, round and phase: a double sign.
func ConflictingVotes(events []eventlog.Event) []string {
	type hrp struct {
		val    string
		height int64
		round  int32
		phase  string
	}
	seen := map[hrp]string{}
	var out []string
	for _, e := range events {
		if e.Kind != eventlog.KindVote {
			continue
		}
		k := hrp{e.Validator, e.Height, e.Round, e.Phase}
		if b, ok := seen[k]; ok && b != e.BlockID {
			out = append(out, fmt.Sprintf("%s at %d/%d %s: %q and %q", e.Validator, e.Height, e.Round, e.Phase, b, e.BlockID))
			continue
		}
		seen[k] = e.BlockID
	}
	return out
}

// SignedIn reports whether validator signed the commit of a block after
// height (a block event after height+1 whose LastCommit does not list it
// as absent).
func SignedIn(events []eventlog.Event, validator string, height int64) bool {
	for _, e := range events {
		if e.Kind == eventlog.KindBlock && e.Height > height+1 && !slices.Contains(e.LastCommitAbsent, validator) {
			return true
		}
	}
	return false
}
