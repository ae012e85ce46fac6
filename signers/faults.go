package signers

import (
	"fmt"
	"sync"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto"
	"github.com/jonboulle/clockwork"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/latency"
)

// Faults injects signer faults that a scenario timeline switches on and
// off: extra delays, dropped signatures and signer errors. It sits outside
// the double-sign guard, so a fault never changes what the guard has
// persisted: a dropped or failed signature was never made.
type Faults struct {
	inner Signer
	clock clockwork.Clock // fault delays are spent and measured on it
	stop  chan struct{}
	once  sync.Once

	mu       sync.Mutex
	delays   map[string]delayRule
	failures map[string]FailRule
	injected time.Duration
}

var (
	_ Signer           = (*Faults)(nil)
	_ Closer           = (*Faults)(nil)
	_ InjectedReporter = (*Faults)(nil)
	_ QueueReporter    = (*Faults)(nil)
)

type delayRule struct {
	model  latency.Model
	phases map[string]bool // nil: all
}

// FailMode says how a failing signature fails.
type FailMode string

const (
	// FailDrop: the signer produces no signature (as a signer that
	// silently skips a request); the node sends no vote.
	FailDrop FailMode = "drop"
	// FailError: the signer backend reports an error (a device or HSM
	// failure).
	FailError FailMode = "error"
)

// FailRule makes matching signatures fail.
type FailRule struct {
	Mode   FailMode
	Phases []string // empty: all
	// Height, when > 0, limits the rule to that height (and Round, when
	// HasRound); otherwise the rule holds while it is set.
	Height   int64
	Round    int32
	HasRound bool
}

// ErrFault is the error of a signature that a fault prevented.
type ErrFault struct {
	Mode FailMode
	Rule string
}

func (e *ErrFault) Error() string {
	if e.Mode == FailDrop {
		return fmt.Sprintf("signature dropped by fault %s", e.Rule)
	}
	return fmt.Sprintf("signer error injected by fault %s", e.Rule)
}

// WithFaults wraps inner with no fault active; delays are spent on the
// real clock (Build uses Spec.Clock).
func WithFaults(inner Signer) *Faults {
	return &Faults{inner: inner, clock: realClock, stop: make(chan struct{}),
		delays: map[string]delayRule{}, failures: map[string]FailRule{}}
}

// SetDelay adds a delay drawn from model to signatures of phases (empty:
// all) until ClearDelay(id).
func (f *Faults) SetDelay(id string, model latency.Model, phases []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delays[id] = delayRule{model: model, phases: phaseSet(phases)}
}

// ClearDelay ends delay id.
func (f *Faults) ClearDelay(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.delays, id)
}

// SetFailure makes matching signatures fail until ClearFailure(id).
func (f *Faults) SetFailure(id string, r FailRule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures[id] = r
}

// ClearFailure ends failure id.
func (f *Faults) ClearFailure(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.failures, id)
}

func phaseSet(phases []string) map[string]bool {
	if len(phases) == 0 {
		return nil
	}
	m := make(map[string]bool, len(phases))
	for _, p := range phases {
		m[p] = true
	}
	return m
}

// Plan decides what the active faults do to one signature, without
// waiting: the delay to add (drawn from every matching delay model) and,
// when the signature must fail, the error. A virtual-time signer (the
// simulator) spends the delay on its own clock; before spends it here.
func (f *Faults) Plan(phase string, h int64, r int32) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var delay time.Duration
	for _, d := range f.delays {
		if d.phases == nil || d.phases[phase] {
			delay += d.model.Draw()
		}
	}
	for id, rule := range f.failures {
		if rule.matches(phase, h, r) {
			return 0, &ErrFault{Mode: rule.Mode, Rule: id}
		}
	}
	return delay, nil
}

// before applies the active faults to one signature: it returns an error
// when the signature must fail, after waiting out any delay.
func (f *Faults) before(phase string, h int64, r int32) error {
	delay, fail := f.Plan(phase, h, r)
	if fail != nil {
		return fail
	}
	if delay > 0 {
		start := f.clock.Now()
		sleepOn(f.clock, delay, f.stop) // released by Close: signs at once, as before
		f.mu.Lock()
		f.injected += f.clock.Since(start)
		f.mu.Unlock()
	}
	return nil
}

func (r FailRule) matches(phase string, h int64, round int32) bool {
	if len(r.Phases) > 0 {
		found := false
		for _, p := range r.Phases {
			found = found || p == phase
		}
		if !found {
			return false
		}
	}
	if r.Height > 0 && h != r.Height {
		return false
	}
	return !r.HasRound || round == r.Round
}

func (f *Faults) GetPubKey() (crypto.PubKey, error) { return f.inner.GetPubKey() }

func (f *Faults) SignVote(chainID string, vote *cmtproto.Vote, ext bool) error {
	if err := f.before(VotePhase(vote), vote.Height, vote.Round); err != nil {
		return err
	}
	return f.inner.SignVote(chainID, vote, ext)
}

func (f *Faults) SignProposal(chainID string, p *cmtproto.Proposal) error {
	if err := f.before(phase.Proposal, p.Height, p.Round); err != nil {
		return err
	}
	return f.inner.SignProposal(chainID, p)
}

func (f *Faults) SignBytes(b []byte) ([]byte, error) { return f.inner.SignBytes(b) }

// TakeInjected reports fault delays (and the inner chain's modelled time).
func (f *Faults) TakeInjected() time.Duration {
	f.mu.Lock()
	d := f.injected
	f.injected = 0
	f.mu.Unlock()
	if r, ok := f.inner.(InjectedReporter); ok {
		d += r.TakeInjected()
	}
	return d
}

// TakeQueued passes on the inner chain's wait for a shared device.
func (f *Faults) TakeQueued() time.Duration { return takeQueued(f.inner) }

// Close releases any delay in progress and closes the inner signer.
func (f *Faults) Close() error {
	f.once.Do(func() { close(f.stop) })
	return Close(f.inner)
}
