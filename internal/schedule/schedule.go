// Package schedule is the one rule of a fault timeline, without I/O: a
// fault starts when consensus reaches its height (the height before it is
// committed) or when its time after the start has come, and ends its
// duration after it started. `valnet run` steps a Schedule from its poll
// loop; `valnet signer serve` from the requests it gets and a timer. What a
// start or an end does is the driver's business.
package schedule

import (
	"slices"
	"time"
)

// Entry is when one fault happens.
type Entry struct {
	Height   int64         // > 0: starts once consensus is at this height or above
	Time     time.Duration // with Height 0: starts this long after the schedule's begin
	Duration time.Duration // > 0: ends this long after it started; 0: no end
}

// Kind is what happens to a fault.
type Kind int

const (
	Start Kind = iota
	End
)

func (k Kind) String() string {
	if k == End {
		return "end"
	}
	return "start"
}

// Action is one thing due: entry Entry starts or ends.
type Action struct {
	Entry int // index into the entries given to New
	Kind  Kind
}

// Schedule says which faults start and end when. It is not safe for
// concurrent use: one driver steps it.
type Schedule struct {
	begin   time.Time
	entries []Entry
	started []bool
	ends    []pendingEnd // in the order they are due
}

type pendingEnd struct {
	at    time.Time
	entry int
}

// New schedules entries; times count from begin (when the network started).
func New(begin time.Time, entries []Entry) *Schedule {
	return &Schedule{begin: begin, entries: slices.Clone(entries), started: make([]bool, len(entries))}
}

func (s *Schedule) startsAt(e Entry) time.Time { return s.begin.Add(e.Time) }

// Step returns what is due at now with consensus at height: the starts, in
// entry order, then the ends due by now, in the order they fall due (a
// fault with a duration never ends in the step that starts it).
func (s *Schedule) Step(now time.Time, height int64) []Action {
	var due []Action
	for i, e := range s.entries {
		if s.started[i] {
			continue
		}
		if e.Height > 0 && height < e.Height || e.Height <= 0 && now.Before(s.startsAt(e)) {
			continue
		}
		s.started[i] = true
		due = append(due, Action{Entry: i, Kind: Start})
		if e.Duration > 0 {
			s.addEnd(pendingEnd{at: now.Add(e.Duration), entry: i})
		}
	}
	n := 0
	for n < len(s.ends) && !now.Before(s.ends[n].at) {
		due = append(due, Action{Entry: s.ends[n].entry, Kind: End})
		n++
	}
	s.ends = s.ends[n:]
	return due
}

// addEnd keeps ends sorted by time; equal times keep the order they came in.
func (s *Schedule) addEnd(p pendingEnd) {
	i := len(s.ends)
	for i > 0 && p.at.Before(s.ends[i-1].at) {
		i--
	}
	s.ends = slices.Insert(s.ends, i, p)
}

// Next is the time at which time alone brings the next action (an end, or
// a start at a time); false when only heights (or nothing) are left.
func (s *Schedule) Next() (time.Time, bool) {
	var next time.Time
	found := false
	take := func(t time.Time) {
		if !found || t.Before(next) {
			next, found = t, true
		}
	}
	if len(s.ends) > 0 {
		take(s.ends[0].at)
	}
	for i, e := range s.entries {
		if !s.started[i] && e.Height <= 0 {
			take(s.startsAt(e))
		}
	}
	return next, found
}
