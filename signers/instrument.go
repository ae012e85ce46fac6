package signers

import (
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto"
	"github.com/jonboulle/clockwork"

	"github.com/valnet/valnet/internal/phase"
)

// SignRecord is one finished signature as seen from outside the signer
// chain (that is, as the node experiences it).
type SignRecord struct {
	Phase    string
	Height   int64
	Round    int32
	BlockID  string // hex hash signed; "" for a nil vote
	Start    time.Time
	Latency  time.Duration // whole call, injected delay included
	Injected time.Duration // part of Latency added by a latency model
	// Queued is the part of Latency spent waiting for a shared signing
	// device (Device) before it started on this signature; OnDevice says
	// whether the signer is on one at all (a zero wait is then a sample).
	Queued   time.Duration
	OnDevice bool
	Err      error
}

// Observer receives every SignRecord. It is called on the consensus
// goroutine, so it must be quick.
type Observer interface {
	SignDone(SignRecord)
}

// ObserverFunc adapts a function to an Observer.
type ObserverFunc func(SignRecord)

func (f ObserverFunc) SignDone(r SignRecord) { f(r) }

// Instrumented times every proposal and vote signature of inner and
// reports it to an Observer.
type Instrumented struct {
	inner    Signer
	obs      Observer
	clock    clockwork.Clock // times each call: the clock the chain's models wait on
	onDevice bool            // inner signs on a shared Device: report its queue waits
}

var (
	_ Signer = (*Instrumented)(nil)
	_ Closer = (*Instrumented)(nil)
)

// Instrument wraps inner; it should be the outermost decorator so that its
// latency is the node's view of the signature. It times on the real clock
// (Build uses Spec.Clock, so that Latency and Injected share one clock).
func Instrument(inner Signer, obs Observer) *Instrumented {
	return &Instrumented{inner: inner, obs: obs, clock: realClock}
}

func (s *Instrumented) GetPubKey() (crypto.PubKey, error) { return s.inner.GetPubKey() }

// SignVote reports the request's phase, height, round and block, taken
// before the call: what a signer answers may leave them zero (a sparse
// answer), and the record is of what the node asked for.
func (s *Instrumented) SignVote(chainID string, vote *cmtproto.Vote, signExtension bool) error {
	ph, h, r, id := VotePhase(vote), vote.Height, vote.Round, blockIDHex(vote.BlockID)
	start := s.clock.Now()
	err := s.inner.SignVote(chainID, vote, signExtension)
	s.report(ph, h, r, id, start, err)
	return err
}

func (s *Instrumented) SignProposal(chainID string, proposal *cmtproto.Proposal) error {
	h, r, id := proposal.Height, proposal.Round, blockIDHex(proposal.BlockID)
	start := s.clock.Now()
	err := s.inner.SignProposal(chainID, proposal)
	s.report(phase.Proposal, h, r, id, start, err)
	return err
}

func (s *Instrumented) SignBytes(b []byte) ([]byte, error) { return s.inner.SignBytes(b) }

func (s *Instrumented) Close() error { return Close(s.inner) }

func (s *Instrumented) report(phase string, h int64, r int32, blockID string, start time.Time, err error) {
	rec := SignRecord{Phase: phase, Height: h, Round: r, BlockID: blockID, Start: start, Latency: s.clock.Since(start), Err: err}
	if ir, ok := s.inner.(InjectedReporter); ok {
		rec.Injected = ir.TakeInjected()
	}
	if qr, ok := s.inner.(QueueReporter); ok && s.onDevice {
		rec.Queued, rec.OnDevice = qr.TakeQueued(), true
	}
	s.obs.SignDone(rec)
}
