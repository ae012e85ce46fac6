package signers

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/libs/protoio"
	"github.com/cometbft/cometbft/privval"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/internal/signbytes"
)

// Watched is the node's side of the double-sign rules for a signer valnet
// does not run (an external KMS, which keeps its own guard out of
// valnet's sight). It keeps FilePV's high-water mark of what the signer
// returned, in FilePV's format, persisted and locked like Guarded's, and:
//   - refuses a request below the mark without asking the signer (FilePV
//     refuses a regression);
//   - checks every answer: its signature, put onto the message the node
//     asked for as CometBFT does (RemoteClient), must verify against the
//     signer's public key, or it is withheld (signature-invalid);
//   - at the mark's height/round/step, passes on only a signature over the
//     same sign bytes, timestamp aside (FilePV's rule): a signer that signs
//     conflicting data there is a double-signer, and the node never sees
//     that signature;
//   - saves the mark before the signature is handed to the node.
//
// It cannot stop the signer signing for someone else: only the signer's
// own guard can. The run-wide detector still checks every vote on the
// network (double_signs in the summary).
type Watched struct {
	mu   sync.Mutex
	next Signer
	pub  crypto.PubKey
	pv   *privval.FilePV
	lock *os.File
}

var (
	_ Signer           = (*Watched)(nil)
	_ Closer           = (*Watched)(nil)
	_ InjectedReporter = (*Watched)(nil)
)

// Watch puts next (the connection to the signer) behind a high-water
// mark in stateFile. pub is the signer's key, read from it once.
func Watch(next Signer, pub crypto.PubKey, stateFile string) (*Watched, error) {
	pv, lock, err := openSignState(watchKey{pub}, stateFile)
	if err != nil {
		return nil, err
	}
	return &Watched{next: next, pub: pub, pv: pv, lock: lock}, nil
}

func (w *Watched) GetPubKey() (crypto.PubKey, error) { return w.pub, nil }

func (w *Watched) SignVote(chainID string, vote *cmtproto.Vote, signExtension bool) error {
	req := *vote
	return w.sign(VotePhase(vote), vote.Height, vote.Round, signbytes.StepOf(VotePhase(vote)).Int8(),
		func() error {
			err := w.next.SignVote(chainID, vote, signExtension)
			*vote = takeVoteAnswer(req, vote) // whatever the answer says of the rest
			return err
		},
		func() ([]byte, []byte, error) {
			// The answer's signature, timestamp and extension signature
			// are on the vote asked for: these are the bytes the node
			// will send.
			if signExtension && vote.Type == types.PrecommitType && len(vote.BlockID.Hash) > 0 {
				if !w.pub.VerifySignature(types.VoteExtensionSignBytes(chainID, vote), vote.ExtensionSignature) {
					return nil, nil, errors.New("its vote extension signature does not verify over the extension the node asked for")
				}
			}
			return types.VoteSignBytes(chainID, vote), vote.Signature, nil
		},
		func(stored []byte) ([]byte, error) {
			var cv cmtproto.CanonicalVote
			if err := protoio.UnmarshalDelimited(stored, &cv); err != nil {
				return nil, err
			}
			v := *vote
			v.Timestamp = cv.Timestamp
			return types.VoteSignBytes(chainID, &v), nil
		})
}

func (w *Watched) SignProposal(chainID string, proposal *cmtproto.Proposal) error {
	req := *proposal
	return w.sign(phase.Proposal, proposal.Height, proposal.Round, signbytes.StepProposal.Int8(),
		func() error {
			err := w.next.SignProposal(chainID, proposal)
			*proposal = takeProposalAnswer(req, proposal)
			return err
		},
		func() ([]byte, []byte, error) {
			return types.ProposalSignBytes(chainID, proposal), proposal.Signature, nil
		},
		func(stored []byte) ([]byte, error) {
			var cp cmtproto.CanonicalProposal
			if err := protoio.UnmarshalDelimited(stored, &cp); err != nil {
				return nil, err
			}
			p := *proposal
			p.Timestamp = cp.Timestamp
			return types.ProposalSignBytes(chainID, &p), nil
		})
}

// sign runs one request: check the mark, ask, verify, compare, persist.
// signed gives the sign bytes and signature of the answer (on the message
// asked for); withStoredTime the sign bytes with the stored message's
// timestamp.
func (w *Watched) sign(what string, h int64, r int32, step int8, ask func() error,
	signed func() ([]byte, []byte, error), withStoredTime func([]byte) ([]byte, error)) (err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	lss := &w.pv.LastSignState
	same, err := lss.CheckHRS(h, r, step)
	if err != nil {
		return &WithheldError{Kind: FailureSignerConflict,
			Err: fmt.Errorf("node-side double-sign watch: %s at height %d round %d not sent to the signer: %w", what, h, r, err)}
	}
	if err := ask(); err != nil {
		return err
	}
	sb, sig, err := signed()
	if err == nil && !w.pub.VerifySignature(sb, sig) {
		err = errors.New("its signature does not verify over the message the node asked for, against the validator's key")
	}
	if err != nil {
		return &WithheldError{Kind: FailureSignatureInvalid,
			Err: fmt.Errorf("node-side double-sign watch: the signer's %s at height %d round %d withheld: %w", what, h, r, err)}
	}
	if same {
		if bytes.Equal(sb, lss.SignBytes) {
			return nil
		}
		alt, err := withStoredTime(lss.SignBytes)
		if err != nil || !bytes.Equal(alt, lss.SignBytes) {
			return &WithheldError{Kind: FailureSignerConflict,
				Err: fmt.Errorf("node-side double-sign watch: the signer signed conflicting data for %s at height %d round %d; signature withheld from the node", what, h, r)}
		}
		return nil // a timestamp-only change, as FilePV allows
	}
	prev := *lss
	lss.Height, lss.Round, lss.Step, lss.SignBytes, lss.Signature = h, r, step, sb, sig
	defer func() {
		if err != nil {
			*lss = prev
		}
	}()
	return saveState(w.pv)
}

// SignBytes passes raw bytes on (not a consensus message: no mark).
func (w *Watched) SignBytes(b []byte) ([]byte, error) { return w.next.SignBytes(b) }

// TakeInjected is 0: nothing between the node and the signer is modelled.
func (w *Watched) TakeInjected() time.Duration { return 0 }

// Close closes the connection to the signer, then releases the lock.
func (w *Watched) Close() error {
	err := Close(w.next)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lock != nil {
		unlockFile(w.lock)
		w.lock = nil
	}
	return err
}

// watchKey gives FilePV's state code a key it never signs with.
type watchKey struct{ pub crypto.PubKey }

var _ crypto.PrivKey = watchKey{}

func (k watchKey) Bytes() []byte         { return nil }
func (k watchKey) PubKey() crypto.PubKey { return k.pub }
func (k watchKey) Type() string          { return k.pub.Type() }
func (k watchKey) Sign([]byte) ([]byte, error) {
	return nil, errors.New("the node-side watch holds no key: the external signer signs")
}
