package signers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto/secp256k1"
	"github.com/cometbft/cometbft/types"
)

// countingSigner counts how often the backend is asked to sign.
type countingSigner struct {
	KeySigner
	calls int
	kinds []string
}

func (c *countingSigner) Sign(kind string, msg []byte) ([]byte, error) {
	c.calls++
	c.kinds = append(c.kinds, kind)
	return c.KeySigner.Sign(kind, msg)
}

func openGuard(t *testing.T, ks KeySigner, state string) *Guarded {
	t.Helper()
	g, err := OpenGuard(ks, state)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func proposal(h int64, r int32, hash byte, ts time.Time) *cmtproto.Proposal {
	v := vote(types.PrevoteType, h, r, hash)
	return &cmtproto.Proposal{Type: types.ProposalType, Height: h, Round: r, PolRound: -1, BlockID: v.BlockID, Timestamp: ts}
}

func TestGuardRules(t *testing.T) {
	t0 := time.Unix(1700000000, 0).UTC()
	at := func(v *cmtproto.Vote, ts time.Time) *cmtproto.Vote { v.Timestamp = ts; return v }
	type step struct {
		name      string
		vote      *cmtproto.Vote
		prop      *cmtproto.Proposal
		ok        bool
		newSig    bool      // the backend was asked for a new signature
		wantStamp time.Time // for reuse: the stored timestamp comes back
	}
	steps := []step{
		{name: "proposal h5", prop: proposal(5, 0, 0xAA, t0), ok: true, newSig: true},
		{name: "prevote h5", vote: vote(types.PrevoteType, 5, 0, 0xAA), ok: true, newSig: true},
		{name: "same prevote again: stored signature", vote: vote(types.PrevoteType, 5, 0, 0xAA), ok: true},
		{name: "timestamp-only change: stored signature and timestamp", vote: at(vote(types.PrevoteType, 5, 0, 0xAA), t0.Add(time.Second)), ok: true, wantStamp: t0},
		{name: "conflicting block same HRS", vote: vote(types.PrevoteType, 5, 0, 0xBB), ok: false},
		{name: "nil vote same HRS", vote: vote(types.PrevoteType, 5, 0, 0), ok: false},
		{name: "proposal after prevote (step regression)", prop: proposal(5, 0, 0xAA, t0), ok: false},
		{name: "precommit h5", vote: vote(types.PrecommitType, 5, 0, 0xAA), ok: true, newSig: true},
		{name: "prevote after precommit", vote: vote(types.PrevoteType, 5, 0, 0xAA), ok: false},
		{name: "height regression", vote: vote(types.PrecommitType, 4, 3, 0xAA), ok: false},
		{name: "round 1 nil prevote", vote: vote(types.PrevoteType, 5, 1, 0), ok: true, newSig: true},
		{name: "round regression", vote: vote(types.PrecommitType, 5, 0, 0xAA), ok: false},
		{name: "next height", vote: vote(types.PrevoteType, 6, 0, 0xCC), ok: true, newSig: true},
	}
	for _, keyType := range []string{"ed25519", "secp256k1"} {
		t.Run(keyType, func(t *testing.T) {
			var ks KeySigner = PrivKeySigner{Key: testKey()}
			if keyType == "secp256k1" {
				ks = PrivKeySigner{Key: secp256k1.GenPrivKeySecp256k1([]byte("guard"))}
			}
			cs := &countingSigner{KeySigner: ks}
			g := openGuard(t, cs, filepath.Join(t.TempDir(), "state.json"))
			pub, _ := g.GetPubKey()
			for _, s := range steps {
				before := cs.calls
				var err error
				if s.vote != nil {
					err = g.SignVote(chainID, s.vote, false)
				} else {
					err = g.SignProposal(chainID, s.prop)
				}
				if (err == nil) != s.ok {
					t.Fatalf("%s: err = %v, want ok=%v", s.name, err, s.ok)
				}
				if asked := cs.calls > before; asked != s.newSig {
					t.Fatalf("%s: backend asked = %v, want %v", s.name, asked, s.newSig)
				}
				if !s.ok {
					continue
				}
				if s.vote != nil {
					if !pub.VerifySignature(types.VoteSignBytes(chainID, s.vote), s.vote.Signature) {
						t.Fatalf("%s: signature does not verify", s.name)
					}
					if !s.wantStamp.IsZero() && !s.vote.Timestamp.Equal(s.wantStamp) {
						t.Fatalf("%s: timestamp %v, want the stored %v", s.name, s.vote.Timestamp, s.wantStamp)
					}
				} else if !pub.VerifySignature(types.ProposalSignBytes(chainID, s.prop), s.prop.Signature) {
					t.Fatalf("%s: signature does not verify", s.name)
				}
			}
			if strings.Join(cs.kinds, ",") != "proposal,prevote,precommit,prevote,prevote" {
				t.Fatalf("backend saw kinds %v", cs.kinds)
			}
		})
	}
}

func TestGuardPersistsAndLocks(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	ks := PrivKeySigner{Key: testKey()}
	g, err := OpenGuard(ks, state)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SignVote(chainID, vote(types.PrecommitType, 9, 2, 0xAA), false); err != nil {
		t.Fatal(err)
	}
	// A second signer on the same state file is refused while the first
	// holds it.
	if _, err := OpenGuard(ks, state); err == nil || !strings.Contains(err.Error(), "another signer") {
		t.Fatalf("second guard on one state file: err = %v", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	// A restarted signer reads the high-water mark back.
	g2 := openGuard(t, ks, state)
	if h, r, s := g2.LastSigned(); h != 9 || r != 2 || s != 3 {
		t.Fatalf("restarted guard at %d/%d/%d, want 9/2/3", h, r, s)
	}
	if err := g2.SignVote(chainID, vote(types.PrevoteType, 9, 2, 0xAA), false); err == nil {
		t.Fatal("restarted guard signed a regression")
	}
	if err := g2.SignVote(chainID, vote(types.PrecommitType, 9, 2, 0xBB), false); err == nil {
		t.Fatal("restarted guard signed conflicting data")
	}
}

func TestGuardRefusesADamagedStateFile(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(state, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenGuard(PrivKeySigner{Key: testKey()}, state); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("err = %v", err)
	}
}

func TestGuardWithholdsTheSignatureWhenStateCannotBeSaved(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	g := openGuard(t, PrivKeySigner{Key: testKey()}, state)
	// Make the state unwritable: replace the file's directory entry with a
	// directory so the atomic rename fails.
	if err := os.Remove(state); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	v := vote(types.PrevoteType, 1, 0, 0xAA)
	err := g.SignVote(chainID, v, false)
	if err == nil || !strings.Contains(err.Error(), "withheld") || v.Signature != nil && err == nil {
		t.Fatalf("err = %v, want the signature withheld", err)
	}
	// Retrying the same vote must not return the unpersisted signature.
	v2 := vote(types.PrevoteType, 1, 0, 0xAA)
	if err := g.SignVote(chainID, v2, false); err == nil {
		t.Fatal("a retry got a signature whose high-water mark was never saved")
	}
}

// blockingSigner waits in Sign until closed, like a slow device.
type blockingSigner struct {
	KeySigner
	entered chan struct{}
	closed  chan struct{}
}

func (b *blockingSigner) Sign(kind string, msg []byte) ([]byte, error) {
	close(b.entered)
	<-b.closed
	return b.KeySigner.Sign(kind, msg)
}

func (b *blockingSigner) Close() error { close(b.closed); return nil }

func TestGuardCloseEndsASignatureWaitingInTheBackend(t *testing.T) {
	bs := &blockingSigner{KeySigner: PrivKeySigner{Key: testKey()}, entered: make(chan struct{}), closed: make(chan struct{})}
	g, err := OpenGuard(bs, filepath.Join(t.TempDir(), "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- g.SignVote(chainID, vote(types.PrevoteType, 1, 0, 0xAA), false) }()
	<-bs.entered
	closed := make(chan error, 1)
	go func() { closed <- g.Close() }()
	for _, ch := range []chan error{closed, done} {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("Close deadlocked with a signature waiting in the backend")
		}
	}
}
