package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/valnet/valnet/internal/schedule"
	"github.com/valnet/valnet/internal/signerfault"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers"
)

// serveFaults is the fault timeline of `valnet signer serve`: a scenario's
// signer faults on the rule of internal/schedule, as `valnet run` has
// them. A standalone signer sees the chain only through the requests it
// gets, so consensus is at the height of the latest request: a fault
// starts with the first request at its height or above. Ends come by a
// timer.
type serveFaults struct {
	plans []scenarios.FaultPlan
	seed  int64

	mu      sync.Mutex
	faults  *signers.Faults
	logf    func(format string, args ...any)
	sched   *schedule.Schedule
	undo    []func() // per fault, set by its start when it has an end
	height  int64    // the highest height asked for
	timer   *time.Timer
	stopped bool
}

var _ signers.ServeTimeline = (*serveFaults)(nil)

func newServeFaults(plans []scenarios.FaultPlan, seed int64) *serveFaults {
	return &serveFaults{plans: plans, seed: seed, undo: make([]func(), len(plans))}
}

func faultID(i int, f scenarios.FaultPlan) string { return fmt.Sprintf("faults[%d]:%s", i, f.Action) }

func faultLabel(i int, f scenarios.FaultPlan) string {
	l := fmt.Sprintf("fault %d (%s at h=%d", i, f.Action, f.At.Height)
	if f.At.HasRound {
		l += fmt.Sprintf(" r=%d", f.At.Round)
	}
	return l + ")"
}

// Arm installs the faults tied to one height, so they match that height
// exactly whatever else happens, and starts the clock.
func (t *serveFaults) Arm(fs *signers.Faults, logf func(format string, args ...any)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.faults, t.logf = fs, logf
	entries := make([]schedule.Entry, len(t.plans))
	for i, f := range t.plans {
		signerfault.Arm(fs, faultID(i, f), f)
		entries[i] = schedule.Entry{Height: f.At.Height, Duration: f.Duration}
	}
	t.sched = schedule.New(time.Now(), entries)
}

// Reached steps the timeline to a request at height h.
func (t *serveFaults) Reached(h int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.height = max(t.height, h)
	t.step(time.Now())
}

// Stop ends the timer; nothing starts or ends after it.
func (t *serveFaults) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	if t.timer != nil {
		t.timer.Stop()
	}
}

// step applies what is due and sets the timer for what time brings next;
// called with mu held.
func (t *serveFaults) step(now time.Time) {
	if t.stopped {
		return
	}
	for _, a := range t.sched.Step(now, t.height) {
		i, f := a.Entry, t.plans[a.Entry]
		label := faultLabel(i, f)
		if a.Kind == schedule.End {
			if undo := t.undo[i]; undo != nil {
				undo()
				t.logf("%s ended", label)
			}
			continue
		}
		on, err := signerfault.Start(t.faults, faultID(i, f), f, t.seed)
		switch {
		case err != nil: // checked when the config was read
			t.logf("%s not applied: %v", label, err)
		case on.Undo == nil:
			t.logf("%s: %s", label, on.What) // armed already; now in play
		default:
			window := "until the signer stops"
			if f.Duration > 0 {
				window = "for " + f.Duration.String()
			}
			t.undo[i] = on.Undo
			t.logf("%s started at h=%d: %s %s", label, t.height, on.What, window)
		}
	}
	if t.timer != nil {
		t.timer.Stop()
	}
	if next, ok := t.sched.Next(); ok {
		t.timer = time.AfterFunc(time.Until(next), func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.step(time.Now())
		})
	}
}
