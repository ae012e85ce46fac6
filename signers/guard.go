package signers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto"
	cmtjson "github.com/cometbft/cometbft/libs/json"
	"github.com/cometbft/cometbft/privval"

	"github.com/valnet/valnet/internal/phase"
)

// Guarded is the double-sign guard every signer path goes through. It turns
// a KeySigner into a Signer with exactly CometBFT FilePV's rules, by running
// FilePV's own code over a key that delegates to the backend:
//   - a persisted high-water mark (height, round, step, sign bytes,
//     signature) in a state file in FilePV's format;
//   - regressions are refused; at the same height/round/step, identical
//     sign bytes or a timestamp-only change get the stored signature
//     without asking the backend; anything else is "conflicting data";
//   - the state is saved atomically before a signature is returned.
//
// On top of FilePV it holds an exclusive lock on the state file (flock on
// <state>.lock) for as long as it is open, so two signers - two processes,
// or a restarted signer racing its predecessor - can never share a
// high-water mark.
type Guarded struct {
	mu   sync.Mutex
	pv   *privval.FilePV
	key  *delegatingKey
	lock *os.File
}

var (
	_ Signer           = (*Guarded)(nil)
	_ Closer           = (*Guarded)(nil)
	_ InjectedReporter = (*Guarded)(nil)
	_ QueueReporter    = (*Guarded)(nil)
)

// OpenGuard opens (or creates) the state file and locks it.
func OpenGuard(ks KeySigner, stateFile string) (*Guarded, error) {
	key := &delegatingKey{ks: ks}
	pv, lock, err := openSignState(key, stateFile)
	if err != nil {
		return nil, err
	}
	return &Guarded{pv: pv, key: key, lock: lock}, nil
}

// openSignState opens (or creates) a high-water mark in FilePV's format
// and locks it: a FilePV over key whose LastSignState is the file's. The
// guard and the node-side watch of an external signer (Watched) share it.
func openSignState(key crypto.PrivKey, stateFile string) (*privval.FilePV, *os.File, error) {
	if err := os.MkdirAll(filepath.Dir(stateFile), 0o700); err != nil {
		return nil, nil, fmt.Errorf("double-sign guard: %w", err)
	}
	lock, err := lockFile(stateFile + ".lock")
	if err != nil {
		return nil, nil, err
	}
	// NewFilePV is the only way to give FilePV a state path; the key file
	// path is never written (the key may not even be extractable).
	pv := privval.NewFilePV(key, "", stateFile)
	data, err := os.ReadFile(stateFile)
	switch {
	case errors.Is(err, os.ErrNotExist):
		err = saveState(pv) // the file exists from the start
	case err == nil:
		var st privval.FilePVLastSignState
		if err = cmtjson.Unmarshal(data, &st); err != nil {
			err = fmt.Errorf("double-sign guard: state file %s is damaged (%v); refusing to sign without a high-water mark", stateFile, err)
			break
		}
		pv.LastSignState.Height, pv.LastSignState.Round, pv.LastSignState.Step = st.Height, st.Round, st.Step
		pv.LastSignState.Signature, pv.LastSignState.SignBytes = st.Signature, st.SignBytes
	}
	if err != nil {
		unlockFile(lock)
		return nil, nil, err
	}
	return pv, lock, nil
}

// LastSigned is the persisted high-water mark.
func (g *Guarded) LastSigned() (height int64, round int32, step int8) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.pv.LastSignState
	return s.Height, s.Round, s.Step
}

func (g *Guarded) GetPubKey() (crypto.PubKey, error) { return g.key.ks.PubKey(), nil }

func (g *Guarded) SignVote(chainID string, vote *cmtproto.Vote, signExtension bool) error {
	return g.sign(VotePhase(vote), vote.Height, func() error { return g.pv.SignVote(chainID, vote, signExtension) })
}

func (g *Guarded) SignProposal(chainID string, proposal *cmtproto.Proposal) error {
	return g.sign(phase.Proposal, proposal.Height, func() error { return g.pv.SignProposal(chainID, proposal) })
}

// sign runs one FilePV signature. FilePV updates its in-memory state before
// saving it; if the save fails, the in-memory state is rolled back too, so
// a retry cannot hand out a signature that was never persisted.
func (g *Guarded) sign(kind string, height int64, f func() error) (err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	saved := g.pv.LastSignState
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("double-sign guard: could not persist the high-water mark, signature withheld: %v", r)
		}
		if err != nil {
			g.pv.LastSignState = saved
		}
	}()
	g.key.kind, g.key.height, g.key.signed, g.key.asked = kind, height, false, false
	if err = f(); err == nil && g.key.signed {
		crashAt(CrashAfterSave, height) // the fault knob (guardcrash.go)
	}
	if err != nil && !g.key.asked {
		// FilePV refused before the backend was asked: a regression or
		// conflicting data at the high-water mark.
		err = &WithheldError{Kind: FailureSignerConflict, Err: fmt.Errorf("double-sign guard: %w", err)}
	}
	return err
}

// SignBytes signs raw bytes (not a consensus message: no high-water mark).
func (g *Guarded) SignBytes(b []byte) ([]byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.key.ks.Sign(KindBytes, b)
}

// Close closes the backend, then releases the lock. The backend is closed
// first and without the guard's lock: a signature in progress holds that
// lock while it waits in the backend (a device model may take a minute),
// and closing the backend is what ends the wait.
func (g *Guarded) Close() error {
	var err error
	if c, ok := g.key.ks.(Closer); ok {
		err = c.Close()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lock != nil {
		unlockFile(g.lock)
		g.lock = nil
	}
	return err
}

// TakeInjected passes on modelled time of the backend (a device model).
func (g *Guarded) TakeInjected() time.Duration {
	if r, ok := g.key.ks.(InjectedReporter); ok {
		return r.TakeInjected()
	}
	return 0
}

// TakeQueued passes on the backend's wait for a shared device.
func (g *Guarded) TakeQueued() time.Duration { return takeQueued(g.key.ks) }

// recoverSave turns FilePV's panic on a failed state write into an error:
// the signature is then not returned, which is the safe outcome.
func recoverSave(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("double-sign guard: could not persist the high-water mark, signature withheld: %v", r)
	}
}

func saveState(pv *privval.FilePV) (err error) {
	defer recoverSave(&err)
	pv.LastSignState.Save()
	return nil
}

// delegatingKey lets FilePV's code sign through any backend.
type delegatingKey struct {
	ks     KeySigner
	kind   string // phase of the message being signed, set under Guarded.mu
	height int64  // its height, for the crash knob
	signed bool   // the backend made a new signature for it
	asked  bool   // the backend was asked for one
}

var _ crypto.PrivKey = (*delegatingKey)(nil)

// Bytes is never persisted: FilePV's key file is not written by the guard.
func (k *delegatingKey) Bytes() []byte         { return nil }
func (k *delegatingKey) PubKey() crypto.PubKey { return k.ks.PubKey() }
func (k *delegatingKey) Type() string          { return k.ks.PubKey().Type() }

// Sign asks the backend; FilePV persists the signature after it returns.
func (k *delegatingKey) Sign(msg []byte) ([]byte, error) {
	k.asked = true
	sig, err := k.ks.Sign(k.kind, msg)
	if err == nil {
		k.signed = true
		crashAt(CrashBeforeSave, k.height) // the fault knob (guardcrash.go)
	}
	return sig, err
}

// lockFile takes an exclusive, non-blocking flock on path.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("double-sign guard: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("double-sign guard: %s is locked: another signer is using this state file", path)
		}
		return nil, fmt.Errorf("double-sign guard: lock %s: %w", path, err)
	}
	return f, nil
}

func unlockFile(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}
