package threshold

import (
	"strings"
	"sync"
	"testing"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/latency"
)

const chainID = "threshold-test"

var testKey = ed25519.GenPrivKeyFromSecret([]byte("t"))

// fullKey is the model's one full key.
type fullKey struct{ k ed25519.PrivKey }

func (f fullKey) PubKey() crypto.PubKey                     { return f.k.PubKey() }
func (f fullKey) Sign(_ string, msg []byte) ([]byte, error) { return f.k.Sign(msg) }

// recorder keeps every Round.
type recorder struct {
	mu     sync.Mutex
	rounds []Round
}

func (r *recorder) Cosigned(x Round) {
	r.mu.Lock()
	r.rounds = append(r.rounds, x)
	r.mu.Unlock()
}

func (r *recorder) last(t *testing.T) Round {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.rounds) == 0 {
		t.Fatal("no round observed")
	}
	return r.rounds[len(r.rounds)-1]
}

func start(t *testing.T, n, th int, timeout time.Duration) (*Cluster, *KeySigner, *recorder, string) {
	t.Helper()
	rec := &recorder{}
	dir := t.TempDir()
	c, err := Start(Config{Cosigners: n, Threshold: th, Timeout: timeout, StateDir: dir, Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, c.Signer(fullKey{testKey}), rec, dir
}

func prevote(h int64, r int32, ts time.Time) []byte {
	return types.VoteSignBytes(chainID, &cmtproto.Vote{Type: cmtproto.PrevoteType, Height: h, Round: r,
		BlockID: cmtproto.BlockID{Hash: make([]byte, 32), PartSetHeader: cmtproto.PartSetHeader{Total: 1, Hash: make([]byte, 32)}}, Timestamp: ts})
}

func TestThresholdSignsWithQuorum(t *testing.T) {
	ts := time.Unix(1700000000, 0).UTC()
	for _, tc := range []struct {
		name       string
		n, th      int
		down       []int
		wantOK     bool
		wantLeader int
		wantErr    string
	}{
		{name: "all up", n: 3, th: 2, wantOK: true, wantLeader: 1},
		{name: "one follower down", n: 3, th: 2, down: []int{3}, wantOK: true, wantLeader: 1},
		{name: "leader down: the next leads", n: 3, th: 2, down: []int{1}, wantOK: true, wantLeader: 2},
		{name: "two down: no quorum", n: 3, th: 2, down: []int{1, 2}, wantErr: "nonce round"},
		{name: "all down", n: 3, th: 2, down: []int{1, 2, 3}, wantErr: "every cosigner is down"},
		{name: "3 of 5 with two down", n: 5, th: 3, down: []int{2, 4}, wantOK: true, wantLeader: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, s, rec, _ := start(t, tc.n, tc.th, 2*time.Second)
			for _, k := range tc.down {
				if err := c.SetDown(k, true); err != nil {
					t.Fatal(err)
				}
			}
			msg := prevote(5, 0, ts)
			sig, err := s.Sign("prevote", msg)
			r := rec.last(t)
			if !tc.wantOK {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one with %q", err, tc.wantErr)
				}
				if r.Err == nil {
					t.Fatal("the observed round has no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !s.PubKey().VerifySignature(msg, sig) {
				t.Fatal("signature does not verify")
			}
			if r.Leader != tc.wantLeader || len(r.Answered) != tc.th || r.Height != 5 || r.Phase != "prevote" {
				t.Fatalf("round = %+v, want leader %d and %d answers", r, tc.wantLeader, tc.th)
			}
			for _, k := range r.Answered {
				for _, d := range tc.down {
					if k == d {
						t.Fatalf("cosigner %d answered while down", k)
					}
				}
			}
			if r.Quorum < r.Nonces || r.Quorum <= 0 {
				t.Fatalf("quorum %v before nonces %v", r.Quorum, r.Nonces)
			}
		})
	}
}

// A cosigner that answers after the timeout is left out of the quorum:
// the others make it.
func TestSlowCosignerIsPassedOver(t *testing.T) {
	c, s, rec, _ := start(t, 3, 2, 300*time.Millisecond)
	if err := c.SetSlow(2, latency.Constant(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sign("prevote", prevote(1, 0, time.Now())); err != nil {
		t.Fatal(err)
	}
	if r := rec.last(t); len(r.Answered) != 2 || r.Answered[0] != 1 || r.Answered[1] != 3 {
		t.Fatalf("answered %v, want [1 3]", r.Answered)
	}
	// Both followers slow: no quorum within the timeout.
	_ = c.SetSlow(3, latency.Constant(time.Second))
	_, err := s.Sign("prevote", prevote(2, 0, time.Now()))
	if err == nil || !strings.Contains(err.Error(), "no answer within the timeout") {
		t.Fatalf("err = %v, want a timeout", err)
	}
}

// Each cosigner keeps a persisted high-water mark: it refuses a
// regression and a conflicting vote, also after a restart (down, up).
func TestCosignerRefusesRegression(t *testing.T) {
	c, _, _, _ := start(t, 3, 2, time.Second)
	cs := c.cosigners[1]
	ts := time.Unix(1700000000, 0).UTC()
	if _, err := cs.sign(SignArgs{SignBytes: prevote(10, 1, ts)}); err != nil {
		t.Fatal(err)
	}
	// The same vote again, and with only its timestamp changed: allowed.
	for _, b := range [][]byte{prevote(10, 1, ts), prevote(10, 1, ts.Add(time.Second))} {
		if _, err := cs.sign(SignArgs{SignBytes: b}); err != nil {
			t.Fatalf("retry refused: %v", err)
		}
	}
	if err := c.SetDown(2, true); err != nil {
		t.Fatal(err)
	}
	if err := c.SetDown(2, false); err != nil { // reads the mark back from its file
		t.Fatal(err)
	}
	other := types.VoteSignBytes(chainID, &cmtproto.Vote{Type: cmtproto.PrevoteType, Height: 10, Round: 1, Timestamp: ts})
	for name, b := range map[string][]byte{"lower round": prevote(10, 0, ts), "lower height": prevote(9, 5, ts), "conflicting (nil) vote": other} {
		if _, err := cs.sign(SignArgs{SignBytes: b}); err == nil || !strings.Contains(err.Error(), "high-water mark") {
			t.Errorf("%s: err = %v, want a refusal", name, err)
		}
	}
	if _, err := cs.sign(SignArgs{SignBytes: prevote(10, 2, ts)}); err != nil {
		t.Fatalf("a later round refused: %v", err)
	}
}

func TestStartRefusesNoThreshold(t *testing.T) {
	for _, tc := range [][2]int{{1, 1}, {3, 0}, {3, 4}} {
		if _, err := Start(Config{Cosigners: tc[0], Threshold: tc[1], StateDir: t.TempDir()}); err == nil {
			t.Errorf("%d of %d: started", tc[1], tc[0])
		}
	}
}
