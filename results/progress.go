package results

import (
	"github.com/valnet/valnet/results/eventlog"
	"slices"

	"fmt"
	"github.com/valnet/valnet/internal/stats"
	"sync"
	"time"
)

// Progress is a live view of a running network, for the runner's status
// line. It is approximate by design (counts as events arrive); reports use
// Summarize.
type Progress struct {
	Height     int64         // last committed height
	Target     int64         // run_start's target height (0 if unknown)
	Round      int32         // highest round seen so far at Height+1
	Missed     int           // absent precommits so far, all validators
	SignErrors int           // sign events with an error
	Elapsed    time.Duration // since run_start (frozen at run_end)
	Done       bool          // run_end seen
	// Stall says, once no height has committed for run_start's halt
	// threshold since the last commit (or since the network started), so
	// and the likely reason, from the events; "" otherwise. It is worked
	// out once per stall: the text stays the same while the stall lasts.
	Stall string
}

// String renders p as a one-line status, e.g.
// "height 12/20 round 0 missed 3 sign errors 0 elapsed 12.3s".
func (p Progress) String() string {
	h := fmt.Sprint(p.Height)
	if p.Target > 0 {
		h += fmt.Sprintf("/%d", p.Target)
	}
	return fmt.Sprintf("height %s round %d missed %d sign errors %d elapsed %s",
		h, p.Round, p.Missed, p.SignErrors, p.Elapsed.Round(100*time.Millisecond))
}

// Tracker folds events into a Progress. Observe and Snapshot are safe for
// concurrent use; pass Observe to Writer.Subscribe. The zero value is ready.
type Tracker struct {
	mu         sync.Mutex
	p          Progress
	start, end time.Time
	// roundHeight is the height Round was seen at; Round only counts while
	// that is Height+1, i.e. the height being decided now.
	roundHeight int64
	now         func() time.Time // for tests

	// What a stall is explained from: run_start, every fault, and the
	// events since the last commit (starting with its block).
	startEv     *eventlog.Event
	faults      []eventlog.Event
	recent      []eventlog.Event
	committed   time.Time // the last block's time
	netUp       time.Time // the last node_up before the first commit
	consensusUp time.Time // the first new_round after netUp, until a commit
	intervalsMS []float64 // block intervals so far, for the halt threshold
	bound       time.Duration
	stall       string // the current stall explained; "" until there is one
}

// maxRecent bounds the events a tracker keeps for explaining a stall: a
// long stall with rounds still advancing keeps only the newest.
const maxRecent = 50_000

// NewTracker returns an empty Tracker (the zero value works as well).
func NewTracker() *Tracker { return &Tracker{} }

// Observe folds one event into the progress.
func (t *Tracker) Observe(ev eventlog.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observe(&ev)
}

// ObserveBatch folds events into the progress, in order, under one lock.
func (t *Tracker) ObserveBatch(evs []eventlog.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range evs {
		t.observe(&evs[i])
	}
}

func (t *Tracker) observe(ev *eventlog.Event) {
	if t.start.IsZero() {
		// Without run_start (tracker attached late), time from the first
		// event seen.
		t.start = ev.Time
	}
	t.keep(ev)
	switch ev.Kind {
	case eventlog.KindRunStart:
		t.start = ev.Time
		t.p.Target = ev.Heights
	case eventlog.KindBlock:
		t.p.Height = max(t.p.Height, ev.Height)
		t.p.Missed += len(ev.LastCommitAbsent)
	case eventlog.KindNewRound:
		switch {
		case ev.Height > t.roundHeight:
			t.roundHeight, t.p.Round = ev.Height, ev.Round
		case ev.Height == t.roundHeight:
			t.p.Round = max(t.p.Round, ev.Round)
		}
	case eventlog.KindSign:
		if ev.Error != "" {
			t.p.SignErrors++
		}
	case eventlog.KindRunEnd:
		t.end = ev.Time
		t.p.Done = true
	}
}

// keep holds on to what a stall would be explained from.
func (t *Tracker) keep(ev *eventlog.Event) {
	switch ev.Kind {
	case eventlog.KindRunStart:
		if t.startEv == nil {
			start := *ev // its own copy
			t.startEv = &start
			t.bound = time.Duration(ev.HaltAfterMS) * time.Millisecond
		}
	case eventlog.KindBlock:
		if ev.Height >= t.p.Height {
			if !t.committed.IsZero() {
				t.intervalsMS = append(t.intervalsMS, float64(ev.Time.Sub(t.committed).Microseconds())/1000)
			}
			t.recent = append(t.recent[:0], *ev)
			t.committed = ev.Time
			t.stall = ""
		}
	case eventlog.KindFault:
		t.faults = append(t.faults, *ev)
	case eventlog.KindNodeUp:
		if t.committed.IsZero() { // the network's start, until a commit
			t.netUp = ev.Time
			t.consensusUp = time.Time{}
			t.recent = append(t.recent, *ev)
		}
	case eventlog.KindSign, eventlog.KindSignRequest, eventlog.KindVote, eventlog.KindNewRound, eventlog.KindStep, eventlog.KindProposal, eventlog.KindHost:
		if ev.Kind == eventlog.KindNewRound && t.committed.IsZero() && t.consensusUp.IsZero() {
			t.consensusUp = ev.Time // as networkStart: consensus started
		}
		if len(t.recent) >= maxRecent {
			t.recent = append(t.recent[:0], t.recent[len(t.recent)/2:]...)
		}
		t.recent = append(t.recent, *ev)
	}
}

// stalled explains a stretch without a commit longer than the bound,
// once; "" when there is none.
func (t *Tracker) stalled(now time.Time) string {
	since := t.committed
	if since.IsZero() {
		since = t.consensusUp
	}
	if since.IsZero() {
		since = t.netUp
	}
	if since.IsZero() {
		since = t.start
	}
	if t.bound <= 0 || since.IsZero() || now.Sub(since) < t.bound {
		return ""
	}
	// The summary's threshold, with the median of the intervals so far:
	// the live line calls nothing a stall that the summary would not.
	bound := haltThreshold(t.startEv, medianMS(t.intervalsMS))
	if now.Sub(since) < bound {
		return ""
	}
	if t.stall == "" {
		evs := make([]eventlog.Event, 0, len(t.faults)+len(t.recent)+1)
		evs = append(append(append(evs, *t.startEv), t.faults...), t.recent...)
		t.stall = stallText(evs, t.p.Height, since, bound)
	}
	return t.stall
}

// Snapshot returns the progress so far.
func (t *Tracker) Snapshot() Progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.p
	if t.roundHeight != p.Height+1 {
		p.Round = 0 // no new_round seen yet for the height in progress
	}
	switch {
	case t.start.IsZero():
	case !t.end.IsZero():
		p.Elapsed = t.end.Sub(t.start)
	default:
		now := time.Now
		if t.now != nil {
			now = t.now
		}
		p.Elapsed = now().Sub(t.start)
		if t.startEv != nil {
			p.Stall = t.stalled(now())
		}
	}
	return p
}

// medianMS is the median of values (sorted in place); 0 for none.
func medianMS(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	slices.Sort(values)
	return stats.Percentile(values, 50)
}
