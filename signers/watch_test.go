package signers

import (
	"path/filepath"
	"strings"
	"testing"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/internal/signbytes"
)

// fakeKMS is an external signer with no guard of its own and failure
// knobs: it signs whatever it is asked, or signs another block than the
// one asked (conflict), or returns a signature that does not verify.
type fakeKMS struct {
	key      PrivKeySigner
	asked    int
	conflict bool // sign the vote with its block hash changed
	garbage  bool // return a signature that does not verify
	sparse   bool // answer as horcrux does: only timestamp and signatures set
}

func (f *fakeKMS) GetPubKey() (crypto.PubKey, error) { return f.key.Key.PubKey(), nil }

func (f *fakeKMS) SignVote(chainID string, v *cmtproto.Vote, _ bool) error {
	f.asked++
	signed := *v
	if f.conflict {
		signed.BlockID.Hash = append([]byte{0xEE}, v.BlockID.Hash[1:]...)
		*v = signed
	}
	sig, err := f.key.Key.Sign(types.VoteSignBytes(chainID, &signed))
	if f.garbage {
		sig[0] ^= 0xFF
	}
	v.Signature = sig
	if f.sparse {
		*v = cmtproto.Vote{Timestamp: v.Timestamp, Signature: v.Signature, ExtensionSignature: v.ExtensionSignature}
	}
	return err
}

func (f *fakeKMS) SignProposal(chainID string, p *cmtproto.Proposal) error {
	f.asked++
	sig, err := f.key.Key.Sign(types.ProposalSignBytes(chainID, p))
	p.Signature = sig
	return err
}

func (f *fakeKMS) SignBytes(b []byte) ([]byte, error) { return f.key.Key.Sign(b) }

// The node-side watch applies FilePV's rules to what an external signer
// returns, and persists its mark across a reopen.
func TestWatchedKeepsFilePVRulesOnAnExternalSigner(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	kms := &fakeKMS{key: PrivKeySigner{Key: testKey()}}
	pub, _ := kms.GetPubKey()
	w, err := Watch(kms, pub, state)
	if err != nil {
		t.Fatal(err)
	}
	v := vote(types.PrecommitType, 5, 0, 0xAA)
	if err := w.SignVote(chainID, v, false); err != nil {
		t.Fatal(err)
	}
	verifyVote(t, w, v)

	for _, tc := range []struct {
		name  string
		vote  *cmtproto.Vote
		knobs func()
		want  string
		kind  string // FailureOf the error
		asks  bool   // the signer is asked at all
	}{
		{"regression", vote(types.PrevoteType, 4, 0, 0xAA), func() {}, "height regression", FailureSignerConflict, false},
		{"same HRS, other block", vote(types.PrecommitType, 5, 0, 0xBB), func() {}, "conflicting data", FailureSignerConflict, true},
		// Its signature is over another block: it does not verify over
		// the vote asked for, whatever the answer says its vote was.
		{"signer signs another block", vote(types.PrecommitType, 6, 0, 0xAA), func() { kms.conflict = true }, "does not verify", FailureSignatureInvalid, true},
		{"bad signature", vote(types.PrecommitType, 7, 0, 0xAA), func() { kms.conflict, kms.garbage = false, true }, "does not verify", FailureSignatureInvalid, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.knobs()
			before := kms.asked
			err := w.SignVote(chainID, tc.vote, false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if k := FailureOf(err); k != tc.kind {
				t.Fatalf("failure %s, want %s", k, tc.kind)
			}
			if asked := kms.asked > before; asked != tc.asks {
				t.Fatalf("signer asked: %v, want %v", asked, tc.asks)
			}
		})
	}
	kms.garbage = false
	if h, r, s := lastMark(w); h != 5 || r != 0 || s != signbytes.StepPrecommit.Int8() {
		t.Fatalf("mark %d/%d/%d after refusals, want 5/0/%d", h, r, s, signbytes.StepPrecommit.Int8())
	}
	// The same vote again (a timestamp-only change too) is passed on.
	again := vote(types.PrecommitType, 5, 0, 0xAA)
	if err := w.SignVote(chainID, again, false); err != nil {
		t.Fatalf("same vote again: %v", err)
	}
	// A sparse answer (horcrux: type, height, round and block zero) is
	// taken as CometBFT takes it: its signature onto the vote asked for,
	// which keeps its own fields and verifies.
	kms.sparse = true
	sparse := vote(types.PrecommitType, 8, 0, 0xAA)
	asked := *sparse
	if err := w.SignVote(chainID, sparse, false); err != nil {
		t.Fatalf("sparse answer: %v", err)
	}
	if sparse.Height != asked.Height || sparse.Type != asked.Type || string(sparse.BlockID.Hash) != string(asked.BlockID.Hash) {
		t.Fatalf("sparse answer: the vote lost its fields: %+v", sparse)
	}
	verifyVote(t, w, sparse)
	kms.sparse = false
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopened: the mark is read back; a regression is still refused.
	w2, err := Watch(kms, pub, state)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if err := w2.SignVote(chainID, vote(types.PrevoteType, 8, 0, 0xAA), false); err == nil || !strings.Contains(err.Error(), "step regression") {
		t.Fatalf("after reopen: %v", err)
	}
	if _, err := Watch(kms, pub, state); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("a second watch on one state file: %v", err)
	}
}

func lastMark(w *Watched) (int64, int32, int8) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.pv.LastSignState
	return s.Height, s.Round, s.Step
}
