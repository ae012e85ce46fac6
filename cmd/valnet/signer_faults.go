package main

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/valnet/valnet/internal/faultcore"
	"github.com/valnet/valnet/internal/links"
	"github.com/valnet/valnet/network"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers"
)

// serveFaults is the fault timeline of `valnet signer serve`: the fault
// core's adapter (internal/faultcore) for one signer chain, as `valnet
// run` and the sim have theirs. A standalone signer sees the chain only
// through the requests it gets, so consensus is at the height of the
// latest request: a fault starts with the first request at its height or
// above. Ends come by a timer. Its fault events are status lines.
type serveFaults struct {
	plans []scenarios.FaultPlan
	seed  int64

	mu      sync.Mutex
	faults  *signers.Faults
	logf    func(format string, args ...any)
	core    *faultcore.Core
	height  int64 // the highest height asked for
	timer   *time.Timer
	stopped bool
}

var (
	_ signers.ServeTimeline = (*serveFaults)(nil)
	_ faultcore.Effects     = (*serveFaults)(nil)
)

func newServeFaults(plans []scenarios.FaultPlan, seed int64) *serveFaults {
	return &serveFaults{plans: plans, seed: seed}
}

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
	core, err := faultcore.New(t.plans, nil, t.seed, t)
	if err != nil { // the config's faults were checked when it was read
		logf("faults not applied: %v", err)
		t.stopped = true
		return
	}
	t.core = core
	core.Begin(time.Now())
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
	t.core.Step(now, t.height)
	if t.timer != nil {
		t.timer.Stop()
	}
	if next, ok := t.core.Next(); ok {
		t.timer = time.AfterFunc(time.Until(next), func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.step(time.Now())
		})
	}
}

// Emit prints a fault event as a status line; called with mu held.
func (t *serveFaults) Emit(i int, f scenarios.FaultPlan, state, detail string) {
	label := faultLabel(i, f)
	switch {
	case state == faultcore.Start && faultcore.AtOneHeight(f):
		t.logf("%s: %s", label, detail) // armed already; now in play
	case state == faultcore.Start:
		window := "until the signer stops"
		if f.Duration > 0 {
			window = "for " + f.Duration.String()
		}
		t.logf("%s started at h=%d: %s %s", label, t.height, detail, window)
	case state == faultcore.End:
		t.logf("%s ended: %s", label, detail)
	default:
		t.logf("%s %s", label, detail)
	}
}

func (t *serveFaults) SignerFaults(string) *signers.Faults { return t.faults }

// A standalone signer is the only target of its faults, and only signer
// faults inside its chain apply (scenarios.LoadServe refuses the rest):
// the other effects are never asked for.
var errNotServe = errors.New("not a fault a standalone signer can apply")

func (t *serveFaults) SignerOutage(string, bool, time.Duration) bool   { return false }
func (t *serveFaults) SignerRestart(string, bool, time.Duration) error { return errNotServe }
func (t *serveFaults) Block([]links.Pair, bool) error                  { return errNotServe }
func (t *serveFaults) Isolate(string, bool) error                      { return errNotServe }
func (t *serveFaults) Link(string, string) network.Link                { return network.Link{} }
func (t *serveFaults) SetLink(string, string, network.Link)            {}
func (t *serveFaults) Controls(string) error                           { return errNotServe }
func (t *serveFaults) NodeDo(string, func(faultcore.NodeControl))      {}
func (t *serveFaults) Cosigner(string) (faultcore.Cosigners, int)      { return nil, 0 }
