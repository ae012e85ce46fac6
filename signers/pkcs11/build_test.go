//go:build cgo

package pkcs11_test

import (
	"crypto/ed25519"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/signers"
	"github.com/valnet/valnet/signers/pkcs11"
)

const chainID = "valnet-pkcs11-test"

// build provisions a token and builds the whole signer chain on it, as the
// runner does.
func build(tb testing.TB) (*signers.Built, pkcs11.Config) {
	tb.Helper()
	pkcs11.NeedSoftHSM(tb)
	dir := tb.TempDir()
	cfg, err := pkcs11.Provision(filepath.Join(dir, "hsm"), "valnet-bench", "")
	if err != nil {
		tb.Fatal(err)
	}
	b, err := signers.Build(signers.Spec{Type: signers.TypePKCS11, PKCS11: &cfg, StateFile: filepath.Join(dir, "state.json")})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { b.Close() })
	return b, cfg
}

func vote(h int64, typ cmtproto.SignedMsgType) *cmtproto.Vote {
	return &cmtproto.Vote{Type: typ, Height: h, Timestamp: time.Now(),
		BlockID: cmtproto.BlockID{Hash: make([]byte, 32), PartSetHeader: cmtproto.PartSetHeader{Total: 1, Hash: make([]byte, 32)}}}
}

// TestBuildPKCS11 signs votes through signers.Build: the guard in front of
// the token, the token's key as the validator's key.
func TestBuildPKCS11(t *testing.T) {
	b, cfg := build(t)
	if b.Label != "pkcs11(valnet-bench)" {
		t.Errorf("label %q", b.Label)
	}
	pub := ed25519.PublicKey(b.PubKey.Bytes())
	for h := int64(1); h <= 20; h++ {
		for _, typ := range []cmtproto.SignedMsgType{types.PrevoteType, types.PrecommitType} {
			v := vote(h, typ)
			if err := b.Signer.SignVote(chainID, v, false); err != nil {
				t.Fatal(err)
			}
			if !ed25519.Verify(pub, types.VoteSignBytes(chainID, v), v.Signature) {
				t.Fatalf("h%d %v: vote signature does not verify", h, typ)
			}
		}
	}
	// The guard still refuses a conflicting vote at a signed height.
	v := vote(20, types.PrecommitType)
	v.BlockID.Hash[0] = 1
	if err := b.Signer.SignVote(chainID, v, false); err == nil || !strings.Contains(err.Error(), "conflicting data") {
		t.Errorf("conflicting precommit: %v", err)
	}
	// A restart re-opens the token from the same config.
	if err := b.Restart(nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Signer.SignVote(chainID, vote(21, types.PrevoteType), false); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if _, err := signers.Build(signers.Spec{Type: signers.TypePKCS11, PKCS11: &cfg, StateFile: filepath.Join(t.TempDir(), "s.json")}); err == nil {
		t.Error("a second chain on the same token key was built")
	}
}

// BenchmarkPKCS11Sign measures a prevote signed on SoftHSM2: "guarded" is
// the whole chain a validator uses (double-sign guard with its state-file
// fsync, then the token), "token" the token alone. p50-ms and p99-ms come
// from a sorted sample of every iteration.
func BenchmarkPKCS11Sign(b *testing.B) {
	built, cfg := build(b)
	var h int64 // heights only go up, across the runs of the sub-benchmark
	b.Run("guarded", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			h++
			v := vote(h, types.PrevoteType)
			t0 := time.Now()
			if err := built.Signer.SignVote(chainID, v, false); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		report(b, lat)
	})
	b.Run("token", func(b *testing.B) {
		// The chain holds the key; a bare signer needs it back.
		built.Close()
		s, err := pkcs11.Open(cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		msg := types.VoteSignBytes(chainID, vote(1, types.PrevoteType))
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			if _, err := s.Sign(phase.Prevote, msg); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		report(b, lat)
	})
}

func report(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}
