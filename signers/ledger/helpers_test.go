package ledger

import (
	"github.com/valnet/valnet/internal/signbytes"

	"bytes"
	"context"
	"crypto/sha256"
	"sync"
	"testing"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/types"
	"github.com/jonboulle/clockwork"
)

const testChainID = "valnet-test"

var testTime = time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.UTC)

func testKey() ed25519.PrivKey {
	return ed25519.GenPrivKeyFromSecret([]byte("valnet ledger model test key"))
}

func testBlockID() cmtproto.BlockID {
	h := sha256.Sum256([]byte("block"))
	p := sha256.Sum256([]byte("parts"))
	return cmtproto.BlockID{Hash: h[:], PartSetHeader: cmtproto.PartSetHeader{Total: 1, Hash: p[:]}}
}

// signBytes builds real CometBFT v1 sign bytes for a proposal (step
// signbytes.StepProposal) or a vote, the way a validator's PrivValidator gets them.
func signBytes(t testing.TB, s signbytes.Step, h, r int64) []byte {
	t.Helper()
	b := signBytesChain(testChainID, s, h, r)
	if b == nil {
		t.Fatalf("bad step %v", s)
	}
	return b
}

func signBytesChain(chainID string, s signbytes.Step, h, r int64) []byte {
	switch s {
	case signbytes.StepProposal:
		return types.ProposalSignBytes(chainID, &cmtproto.Proposal{
			Type: cmtproto.ProposalType, Height: h, Round: int32(r), PolRound: -1,
			BlockID: testBlockID(), Timestamp: testTime,
		})
	case signbytes.StepPrevote, signbytes.StepPrecommit:
		typ := cmtproto.PrevoteType
		if s == signbytes.StepPrecommit {
			typ = cmtproto.PrecommitType
		}
		return types.VoteSignBytes(chainID, &cmtproto.Vote{
			Type: typ, Height: h, Round: int32(r), BlockID: testBlockID(),
			Timestamp: testTime, ValidatorIndex: 3,
		})
	}
	return nil
}

// sleepRecorder stands in for real waits: the model's timing is checked
// from the durations it asks for.
type sleepRecorder struct {
	mu sync.Mutex
	d  []time.Duration
}

func (r *sleepRecorder) Sleep(d time.Duration) {
	r.mu.Lock()
	r.d = append(r.d, d)
	r.mu.Unlock()
}

func (r *sleepRecorder) take() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.d
	r.d = nil
	return d
}

func sum(ds []time.Duration) (t time.Duration) {
	for _, d := range ds {
		t += d
	}
	return t
}

// newTestEmulator is a NanoSPlus model that records sleeps instead of
// sleeping.
func newTestEmulator() (*Emulator, *sleepRecorder) {
	rec := &sleepRecorder{}
	return NewEmulator(EmulatorConfig{Key: testKey(), Sleep: rec.Sleep}), rec
}

// rawSign sends msg in chunks straight to dev and returns the last answer.
func rawSign(t testing.TB, dev Device, msg []byte, chunk int) ([]byte, error) {
	t.Helper()
	packets, err := SignAPDUs(msg, chunk)
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	for _, p := range packets {
		data, err = ParseResponse(dev.Exchange(p))
		if err != nil {
			return nil, err
		}
	}
	return data, nil
}

func hexLines(packets [][]byte) []byte {
	var b bytes.Buffer
	for _, p := range packets {
		for _, c := range p {
			b.WriteString(string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15]))
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// waiting reports whether a wait is pending on clk now, without waiting.
func waiting(clk *clockwork.FakeClock) bool {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // BlockUntilContext answers at once when the waiter is there
	return clk.BlockUntilContext(ctx, 1) == nil
}

// awaitWaiter waits (real time, generous deadline) until a wait is
// pending on clk.
func awaitWaiter(t testing.TB, clk *clockwork.FakeClock) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clk.BlockUntilContext(ctx, 1); err != nil {
		t.Fatalf("nothing waited on the fake clock: %v", err)
	}
}
