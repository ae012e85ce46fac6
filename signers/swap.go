package signers

import (
	"errors"
	"sync"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto"
)

// Errors of a signature asked for while the signer is not there.
var (
	errRestarting = errors.New("signer is restarting")
	errClosed     = errors.New("signer is closed")
)

// swappable lets a signer be replaced under its decorators, so a signer
// "process" can be killed and started again (a new guard read back from
// the state file) while the faults and latency models around it keep
// their state.
type swappable struct {
	mu     sync.RWMutex
	inner  Signer
	pub    crypto.PubKey
	closed bool
}

var (
	_ Signer           = (*swappable)(nil)
	_ Closer           = (*swappable)(nil)
	_ InjectedReporter = (*swappable)(nil)
	_ QueueReporter    = (*swappable)(nil)
)

func (s *swappable) current() (Signer, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, errClosed
	}
	if s.inner == nil {
		return nil, errRestarting
	}
	return s.inner, nil
}

// swap installs next (nil: the signer is down) and returns the previous.
func (s *swappable) swap(next Signer) Signer {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.inner
	s.inner = next
	return prev
}

// GetPubKey answers even while the signer is down: the key does not change.
func (s *swappable) GetPubKey() (crypto.PubKey, error) { return s.pub, nil }

func (s *swappable) SignVote(chainID string, vote *cmtproto.Vote, ext bool) error {
	in, err := s.current()
	if err != nil {
		return err
	}
	return in.SignVote(chainID, vote, ext)
}

func (s *swappable) SignProposal(chainID string, p *cmtproto.Proposal) error {
	in, err := s.current()
	if err != nil {
		return err
	}
	return in.SignProposal(chainID, p)
}

func (s *swappable) SignBytes(b []byte) ([]byte, error) {
	in, err := s.current()
	if err != nil {
		return nil, err
	}
	return in.SignBytes(b)
}

func (s *swappable) TakeInjected() time.Duration {
	if in, err := s.current(); err == nil {
		if r, ok := in.(InjectedReporter); ok {
			return r.TakeInjected()
		}
	}
	return 0
}

func (s *swappable) TakeQueued() time.Duration {
	if in, err := s.current(); err == nil {
		return takeQueued(in)
	}
	return 0
}

func (s *swappable) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if prev := s.swap(nil); prev != nil {
		return Close(prev)
	}
	return nil
}
