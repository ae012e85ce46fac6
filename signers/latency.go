package signers

import (
	"sync"
	"sync/atomic"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto"
	"github.com/jonboulle/clockwork"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/latency"
)

// Delayed injects a modelled delay before each signature of the selected
// phases, then signs with the inner signer. The delay is spent before the
// inner signer is called, so the double-sign guard inside it still decides
// on the message as it arrived. CometBFT signs synchronously in the
// consensus routine, so this stalls the validator exactly as a slow device
// would.
type Delayed struct {
	inner  Signer
	model  latency.Model
	phases map[string]bool
	clock  clockwork.Clock // the delay is spent and measured on it

	injected atomic.Int64 // ns injected since the last TakeInjected
	stop     chan struct{}
	stopOnce sync.Once
}

var (
	_ Signer           = (*Delayed)(nil)
	_ Closer           = (*Delayed)(nil)
	_ InjectedReporter = (*Delayed)(nil)
	_ QueueReporter    = (*Delayed)(nil)
)

// InjectedReporter is an optional ability of a decorator chain: it tells
// how much artificial delay went into the signature that just finished, so
// instrumentation can separate injected time from real signing time.
type InjectedReporter interface {
	TakeInjected() time.Duration
}

// WithLatency wraps inner; phases empty means every phase. The delay is
// spent on the real clock (Build uses Spec.Clock).
func WithLatency(inner Signer, model latency.Model, phases []string) *Delayed {
	d := &Delayed{inner: inner, model: model, clock: realClock, stop: make(chan struct{})}
	if len(phases) > 0 {
		d.phases = make(map[string]bool, len(phases))
		for _, p := range phases {
			d.phases[p] = true
		}
	}
	return d
}

// wait spends the modelled delay; an error when Close released it (or came
// first): a released signature is refused, not signed, so nothing is
// signed by a chain that is being closed.
func (d *Delayed) wait(phase string) error {
	select {
	case <-d.stop:
		return errClosed
	default:
	}
	if d.phases != nil && !d.phases[phase] {
		return nil
	}
	delay := d.model.Draw()
	if delay <= 0 {
		return nil
	}
	start := d.clock.Now()
	ok := sleepOn(d.clock, delay, d.stop)
	d.injected.Add(int64(d.clock.Since(start)))
	if !ok {
		return errClosed
	}
	return nil
}

// GetPubKey is not delayed: it is not a signature.
func (d *Delayed) GetPubKey() (crypto.PubKey, error) { return d.inner.GetPubKey() }

func (d *Delayed) SignVote(chainID string, vote *cmtproto.Vote, signExtension bool) error {
	if err := d.wait(VotePhase(vote)); err != nil {
		return err
	}
	return d.inner.SignVote(chainID, vote, signExtension)
}

func (d *Delayed) SignProposal(chainID string, proposal *cmtproto.Proposal) error {
	if err := d.wait(phase.Proposal); err != nil {
		return err
	}
	return d.inner.SignProposal(chainID, proposal)
}

// SignBytes (raw bytes, e.g. for a vote extension or p2p) is not a
// consensus phase and is not delayed.
func (d *Delayed) SignBytes(b []byte) ([]byte, error) { return d.inner.SignBytes(b) }

// TakeInjected returns and resets the delay injected since the last call,
// including any reported by an inner decorator.
func (d *Delayed) TakeInjected() time.Duration {
	total := time.Duration(d.injected.Swap(0))
	if r, ok := d.inner.(InjectedReporter); ok {
		total += r.TakeInjected()
	}
	return total
}

// TakeQueued passes on the inner chain's wait for a shared device.
func (d *Delayed) TakeQueued() time.Duration { return takeQueued(d.inner) }

// Close ends any delay in progress at once (that signature is refused)
// and closes the inner signer.
func (d *Delayed) Close() error {
	d.stopOnce.Do(func() { close(d.stop) })
	return Close(d.inner)
}

// Model returns the delay model, for labels.
func (d *Delayed) Model() latency.Model { return d.model }
