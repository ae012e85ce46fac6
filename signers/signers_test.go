package signers

import (
	"bytes"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/latency"
)

const chainID = "valnet-test"

func testKey() ed25519.PrivKey { return ed25519.GenPrivKeyFromSecret([]byte("signers-test")) }

func openLocal(t *testing.T, dir string) *Built {
	t.Helper()
	b, err := Build(Spec{Type: TypeLocal, Key: testKey(),
		KeyFile: filepath.Join(dir, "key.json"), StateFile: filepath.Join(dir, "state.json")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func vote(typ cmtproto.SignedMsgType, h int64, r int32, hash byte) *cmtproto.Vote {
	v := &cmtproto.Vote{Type: typ, Height: h, Round: r, Timestamp: time.Unix(1700000000, 0).UTC()}
	if hash != 0 {
		v.BlockID = cmtproto.BlockID{Hash: bytes.Repeat([]byte{hash}, 32),
			PartSetHeader: cmtproto.PartSetHeader{Total: 1, Hash: bytes.Repeat([]byte{hash}, 32)}}
	}
	return v
}

func verifyVote(t *testing.T, s Signer, v *cmtproto.Vote) {
	t.Helper()
	pub, err := s.GetPubKey()
	if err != nil {
		t.Fatal(err)
	}
	if !pub.VerifySignature(types.VoteSignBytes(chainID, v), v.Signature) {
		t.Fatalf("signature of %v does not verify", v)
	}
}

func TestLocalSignsAndRefusesRegressionsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	l := openLocal(t, dir)
	v := vote(types.PrevoteType, 5, 0, 0xAA)
	if err := l.Signer.SignVote(chainID, v, false); err != nil {
		t.Fatal(err)
	}
	verifyVote(t, l.Signer, v)
	if _, err := Build(Spec{Type: TypeLocal, Key: testKey(), KeyFile: filepath.Join(dir, "key.json"),
		StateFile: filepath.Join(dir, "state.json")}); err == nil {
		t.Fatal("a second signer opened a state file in use")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// A restarted signer reads the persisted high-water mark.
	l2 := openLocal(t, dir).Signer
	for _, tc := range []struct {
		name string
		v    *cmtproto.Vote
		ok   bool
	}{
		{"same vote again gets the stored signature", vote(types.PrevoteType, 5, 0, 0xAA), true},
		{"conflicting block at same HRS", vote(types.PrevoteType, 5, 0, 0xBB), false},
		{"lower height", vote(types.PrevoteType, 4, 0, 0xAA), false},
		{"next step", vote(types.PrecommitType, 5, 0, 0xAA), true},
		{"back to prevote", vote(types.PrevoteType, 5, 0, 0xAA), false},
		{"next round", vote(types.PrevoteType, 5, 1, 0), true},
	} {
		err := l2.SignVote(chainID, tc.v, false)
		if (err == nil) != tc.ok {
			t.Fatalf("%s: err = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if tc.ok {
			verifyVote(t, l2, tc.v)
		}
	}
}

func TestLocalRefusesAHomeWithAnotherKey(t *testing.T) {
	dir := t.TempDir()
	openLocal(t, dir).Close()
	_, err := Build(Spec{Type: TypeLocal, Key: ed25519.GenPrivKeyFromSecret([]byte("other")),
		KeyFile: filepath.Join(dir, "key.json"), StateFile: filepath.Join(dir, "state2.json")})
	if err == nil {
		t.Fatal("opened a home that holds another key")
	}
}

type recordingObserver struct {
	mu   sync.Mutex
	recs []SignRecord
}

func (o *recordingObserver) SignDone(r SignRecord) {
	o.mu.Lock()
	o.recs = append(o.recs, r)
	o.mu.Unlock()
}

func TestBuildChainDelaysSelectedPhasesAndReportsInjected(t *testing.T) {
	const delay = 30 * time.Millisecond
	obs := &recordingObserver{}
	dir := t.TempDir()
	clk := newFakeClock()
	built, err := Build(Spec{Type: "local", Key: testKey(),
		KeyFile: filepath.Join(dir, "k.json"), StateFile: filepath.Join(dir, "s.json"),
		Latency: &latency.Spec{Dist: "fixed", Value: delay}, Phases: []string{phase.Precommit},
		Seed: 1, Stream: "v", Obs: obs, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if built.Label != "local+latency(fixed 30ms)" {
		t.Fatalf("label %q", built.Label)
	}
	// The prevote is not delayed: it returns without waiting on the clock.
	pv, pc := vote(types.PrevoteType, 1, 0, 1), vote(types.PrecommitType, 1, 0, 1)
	done := make(chan error, 1)
	go func() { done <- built.Signer.SignVote(chainID, pv, false) }()
	if err := awaitNoWait(t, clk, done); err != nil {
		t.Fatal(err)
	}
	verifyVote(t, built.Signer, pv)
	// The precommit waits exactly the model's 30 ms.
	go func() { done <- built.Signer.SignVote(chainID, pc, false) }()
	advanceThrough(t, clk, delay)
	if err := await(t, done); err != nil {
		t.Fatal(err)
	}
	verifyVote(t, built.Signer, pc)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.recs) != 2 {
		t.Fatalf("%d records", len(obs.recs))
	}
	prevote, precommit := obs.recs[0], obs.recs[1]
	if prevote.Phase != phase.Prevote || prevote.Injected != 0 || prevote.Latency != 0 {
		t.Fatalf("prevote was delayed: %+v", prevote)
	}
	// Instrumented times on the chain's clock: the latency is the delay.
	if precommit.Phase != phase.Precommit || precommit.Injected != delay || precommit.Latency != delay {
		t.Fatalf("precommit not delayed as modelled: %+v", precommit)
	}
	if precommit.Height != 1 || precommit.BlockID == "" {
		t.Fatalf("record lacks its vote: %+v", precommit)
	}
}

// On the real clock a loaded host may oversleep, never undersleep: the
// injected delay is at least the model's, and the latency covers it.
func TestDelayIsNeverShortened(t *testing.T) {
	const delay = 20 * time.Millisecond
	obs := &recordingObserver{}
	dir := t.TempDir()
	built, err := Build(Spec{Type: "local", Key: testKey(),
		KeyFile: filepath.Join(dir, "k.json"), StateFile: filepath.Join(dir, "s.json"),
		Latency: &latency.Spec{Dist: "fixed", Value: delay}, Seed: 1, Stream: "v", Obs: obs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { built.Close() })
	if err := built.Signer.SignVote(chainID, vote(types.PrevoteType, 1, 0, 1), false); err != nil {
		t.Fatal(err)
	}
	if r := obs.recs[0]; r.Injected < delay || r.Latency < r.Injected {
		t.Errorf("record %+v: want injected >= %v and latency >= injected", r, delay)
	}
}

// A fault delay is spent on the chain's clock, exactly, and reported as
// injected; cleared, it is gone; Close cuts one in progress short and the
// signature is then made.
func TestFaultDelayOnTheClock(t *testing.T) {
	const delay = 40 * time.Millisecond
	clk := newFakeClock()
	obs := &recordingObserver{}
	dir := t.TempDir()
	built, err := Build(Spec{Type: "local", Key: testKey(),
		KeyFile: filepath.Join(dir, "k.json"), StateFile: filepath.Join(dir, "s.json"), Obs: obs, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	model, err := latency.New(latency.Spec{Dist: latency.Fixed, Value: delay}, 1, "fault")
	if err != nil {
		t.Fatal(err)
	}
	built.Faults.SetDelay("slow", model, []string{phase.Prevote})
	done := make(chan error, 1)
	sign := func(typ cmtproto.SignedMsgType, h int64) {
		go func() { done <- built.Signer.SignVote(chainID, vote(typ, h, 0, 1), false) }()
	}

	sign(types.PrevoteType, 1)
	advanceThrough(t, clk, delay)
	if err := await(t, done); err != nil {
		t.Fatal(err)
	}
	sign(types.PrecommitType, 1) // another phase: no delay
	if err := awaitNoWait(t, clk, done); err != nil {
		t.Fatal(err)
	}
	built.Faults.ClearDelay("slow")
	sign(types.PrevoteType, 2)
	if err := awaitNoWait(t, clk, done); err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	for i, want := range []time.Duration{delay, 0, 0} {
		if r := obs.recs[i]; r.Injected != want || r.Latency != want {
			t.Errorf("record %d %+v: want injected and latency %v", i, r, want)
		}
	}
	obs.mu.Unlock()

	built.Faults.SetDelay("slow", model, nil)
	sign(types.PrevoteType, 3)
	awaitWaiters(t, clk, 1)
	if err := built.Faults.Close(); err != nil {
		t.Fatal(err)
	}
	// Released with the clock standing still. The signature then goes on
	// to the chain below, which Close closes too: signed if it got there
	// first, else refused as closed.
	if err := await(t, done); err != nil && !strings.Contains(err.Error(), "closed") {
		t.Fatalf("released signature: err = %v", err)
	}
}

func TestCloseReleasesAWaitingSignature(t *testing.T) {
	dir := t.TempDir()
	built, err := Build(Spec{Type: "local", Key: testKey(),
		KeyFile: filepath.Join(dir, "k.json"), StateFile: filepath.Join(dir, "s.json"),
		Latency: &latency.Spec{Dist: "fixed", Value: time.Hour}, Seed: 1, Stream: "v"})
	if err != nil {
		t.Fatal(err)
	}
	// Whether Close comes while the signature waits or before it starts,
	// the signature is refused at once: a closing chain signs nothing.
	done := make(chan error, 1)
	go func() { done <- built.Signer.SignVote(chainID, vote(types.PrevoteType, 1, 0, 1), false) }()
	if err := Close(built.Signer); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		// The released signature fails: the signer is gone.
		if err == nil || !strings.Contains(err.Error(), "closed") {
			t.Fatalf("released signature: err = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not release the waiting signature")
	}
}

func TestBuildRejectsUnknownType(t *testing.T) {
	if _, err := Build(Spec{Type: "hsm"}); err == nil {
		t.Fatal("unknown signer type accepted")
	}
}

func BenchmarkLocalSignVote(b *testing.B) {
	dir := b.TempDir()
	l, err := Build(Spec{Type: TypeLocal, Key: testKey(), KeyFile: filepath.Join(dir, "key.json"), StateFile: filepath.Join(dir, "state.json")})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	h := int64(1)
	for b.Loop() {
		if err := l.Signer.SignVote(chainID, vote(types.PrevoteType, h, 0, 1), false); err != nil {
			b.Fatal(err)
		}
		h++
	}
}
