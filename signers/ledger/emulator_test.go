package ledger

import (
	"github.com/valnet/valnet/internal/signbytes"

	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/types"
	"github.com/jonboulle/clockwork"
)

type req struct {
	step signbytes.Step
	h, r int64
}

func (q req) String() string { return fmt.Sprintf("%s@%d/%d", q.step, q.h, q.r) }

func TestEmulatorVoteStateMachine(t *testing.T) {
	const ok, denied = true, false
	type step struct {
		req
		accept bool
	}
	for _, tc := range []struct {
		name string
		seq  []step
	}{
		{"first request at any height, then steps", []step{
			{req{signbytes.StepPrecommit, 100, 3}, ok}, {req{signbytes.StepPrevote, 100, 3}, denied}, {req{signbytes.StepProposal, 101, 0}, ok},
		}},
		{"full heights", []step{
			{req{signbytes.StepProposal, 1, 0}, ok}, {req{signbytes.StepPrevote, 1, 0}, ok}, {req{signbytes.StepPrecommit, 1, 0}, ok},
			{req{signbytes.StepPrevote, 2, 0}, ok}, {req{signbytes.StepPrecommit, 2, 0}, ok}, {req{signbytes.StepProposal, 3, 0}, ok},
		}},
		{"same vote twice", []step{{req{signbytes.StepPrevote, 5, 0}, ok}, {req{signbytes.StepPrevote, 5, 0}, denied}}},
		{"step regression", []step{{req{signbytes.StepPrecommit, 5, 0}, ok}, {req{signbytes.StepPrevote, 5, 0}, denied}}},
		{"proposal after prevote", []step{{req{signbytes.StepPrevote, 5, 0}, ok}, {req{signbytes.StepProposal, 5, 0}, denied}}},
		{"skipping prevote", []step{{req{signbytes.StepProposal, 5, 0}, ok}, {req{signbytes.StepPrecommit, 5, 0}, ok}}},
		{"higher round starts over", []step{
			{req{signbytes.StepPrecommit, 5, 0}, ok}, {req{signbytes.StepProposal, 5, 1}, ok}, {req{signbytes.StepPrevote, 5, 1}, ok},
			{req{signbytes.StepPrevote, 5, 3}, ok},
		}},
		{"lower round", []step{{req{signbytes.StepPrevote, 5, 2}, ok}, {req{signbytes.StepPrecommit, 5, 1}, denied}}},
		{"lower height", []step{{req{signbytes.StepPrevote, 5, 0}, ok}, {req{signbytes.StepPrecommit, 4, 9}, denied}}},
		{"refusal keeps the state", []step{
			{req{signbytes.StepPrevote, 5, 0}, ok}, {req{signbytes.StepProposal, 4, 0}, denied}, {req{signbytes.StepPrecommit, 5, 0}, ok},
			{req{signbytes.StepPrecommit, 5, 0}, denied},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			emu, _ := newTestEmulator()
			pub := emu.key.PubKey()
			want := signbytes.VoteState{}
			for i, s := range tc.seq {
				msg := signBytes(t, s.step, s.h, s.r)
				sig, err := rawSign(t, emu, msg, DefaultChunkSize)
				if s.accept {
					if err != nil {
						t.Fatalf("#%d %v: %v", i, s.req, err)
					}
					if !pub.VerifySignature(msg, sig) {
						t.Fatalf("#%d %v: signature does not verify", i, s.req)
					}
					want = signbytes.VoteState{Height: s.h, Round: s.r, Step: s.step}
				} else {
					var se *StatusError
					if !errors.As(err, &se) || se.SW != SWDenied || !errors.Is(err, ErrDenied) {
						t.Fatalf("#%d %v: got %v, want 0x6985", i, s.req, err)
					}
				}
				if got, _ := emu.State(); got != want {
					t.Fatalf("#%d %v: state %v, want %v", i, s.req, got, want)
				}
			}
		})
	}
}

func TestEmulatorErrors(t *testing.T) {
	emu, rec := newTestEmulator()
	vote := signBytes(t, signbytes.StepPrevote, 9, 0)
	for _, tc := range []struct {
		name string
		cmd  []byte
		sw   uint16
	}{
		{"wrong CLA", []byte{0xE0, 0x01, 0, 0, 0}, 0x6E00},
		{"wrong CLA, short", []byte{0x55}, 0x6E00},
		{"unknown INS", []byte{CLA, 0x07, 0, 0, 0}, 0x6D00},
		{"short APDU", []byte{CLA, InsGetVersion}, 0x6700},
		{"Lc mismatch", []byte{CLA, InsSign, 1, 1, 5, 1, 2}, 0x6700},
		{"empty", nil, 0x6982},
		{"garbage sign bytes", command(InsSign, 1, 1, []byte("definitely not a vote")), 0x6984},
		{"vote extension bytes", command(InsSign, 1, 1, types.VoteExtensionSignBytes(testChainID,
			&cmtproto.Vote{Type: cmtproto.PrecommitType, Height: 9, Extension: []byte("ext")})), 0x6984},
		{"truncated vote", command(InsSign, 1, 1, vote[:len(vote)-1]), 0x6984},
	} {
		rec.take()
		_, err := ParseResponse(emu.Exchange(tc.cmd))
		var se *StatusError
		if !errors.As(err, &se) || se.SW != tc.sw {
			t.Errorf("%s: got %v, want 0x%04X", tc.name, err, tc.sw)
		}
		// A refused request costs the exchange only, never the signature.
		if got := sum(rec.take()); got != NanoSPlus.HostStall+NanoSPlus.Wire {
			t.Errorf("%s: modelled %v", tc.name, got)
		}
	}
	if _, ok := emu.State(); ok {
		t.Error("errors must not initialise the vote state")
	}
	_, err := ParseResponse(emu.Exchange([]byte{0xE0, 0x01, 0, 0, 0}))
	if !errors.Is(err, ErrAppNotOpen) || !strings.Contains(err.Error(), "open the Tendermint validator app") {
		t.Errorf("wrong CLA message: %v", err)
	}
}

func TestEmulatorInfo(t *testing.T) {
	emu, _ := newTestEmulator()
	data, err := ParseResponse(emu.Exchange(VersionAPDU()))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := ParseVersion(data)
	if v != DefaultEmulatorVersion || v.TestMode() || CheckVersion(v) != nil {
		t.Errorf("version %v", v)
	}
	data, err = ParseResponse(emu.Exchange(PubKeyAPDU()))
	if err != nil || string(data) != string(testKey().PubKey().Bytes()) {
		t.Errorf("pubkey % x %v", data, err)
	}
	if emu.Model() != "model:ledger-nano-s-plus" {
		t.Errorf("model %q", emu.Model())
	}
}

// P1=1 resets the buffer: a sign sequence abandoned half way does not
// leak into the next one.
func TestEmulatorBufferResetOnP1(t *testing.T) {
	emu, _ := newTestEmulator()
	a := signBytes(t, signbytes.StepPrevote, 3, 0)
	b := signBytes(t, signbytes.StepPrevote, 4, 0)
	pa, _ := SignAPDUs(a, 48)
	for _, p := range pa[:2] { // abandon a after 2 of 3 packets
		if data, err := ParseResponse(emu.Exchange(p)); err != nil || len(data) != 0 {
			t.Fatalf("intermediate packet: % x %v", data, err)
		}
	}
	sig, err := rawSign(t, emu, b, 48)
	if err != nil {
		t.Fatal(err)
	}
	if !testKey().PubKey().VerifySignature(b, sig) {
		t.Fatal("signature is not over the second message alone")
	}
	if s, _ := emu.State(); s != (signbytes.VoteState{Height: 4, Round: 0, Step: signbytes.StepPrevote}) {
		t.Fatalf("state %v", s)
	}
	// Without P1=1 the chunks append to what is there: the app then sees
	// b followed by c's tail and cannot parse it.
	c := signBytes(t, signbytes.StepPrecommit, 4, 0)
	pc, _ := SignAPDUs(c, 48)
	if _, err := ParseResponse(emu.Exchange(pc[len(pc)-1])); !errors.Is(err, ErrParse) {
		t.Fatalf("append without reset: %v", err)
	}
}

func TestEmulatorRestartApp(t *testing.T) {
	emu, rec := newTestEmulator()
	emu.confirm = 2 * time.Second
	if _, err := rawSign(t, emu, signBytes(t, signbytes.StepPrevote, 10, 0), 250); err != nil {
		t.Fatal(err)
	}
	if got := sum(rec.take()); got != 54*time.Millisecond+2*time.Second+525*time.Millisecond {
		t.Errorf("first signature with confirmation: %v", got)
	}
	if _, err := rawSign(t, emu, signBytes(t, signbytes.StepPrecommit, 10, 0), 250); err != nil {
		t.Fatal(err)
	}
	if got := sum(rec.take()); got != 579*time.Millisecond {
		t.Errorf("second signature: %v", got)
	}
	emu.RestartApp()
	if _, ok := emu.State(); ok {
		t.Fatal("restart keeps RAM state")
	}
	// A restarted app has forgotten height 10: a lower height is accepted
	// again once confirmed. This is why valnet keeps its own guard.
	if _, err := rawSign(t, emu, signBytes(t, signbytes.StepPrevote, 3, 0), 250); err != nil {
		t.Fatal(err)
	}
	if got := sum(rec.take()); got != 579*time.Millisecond+2*time.Second {
		t.Errorf("after restart: %v", got)
	}
}

// timingRows is the chunk-size table of docs/ledger.md: a CometBFT v1 vote
// is 112 bytes and a proposal 123 with chain ID "valnet-test"; 104 is the
// payload of the seeds/000 capture; 150 and 300 bracket larger chain IDs
// and the golden framing payload.
var timingRows = []struct {
	what  string
	size  int
	chunk int
	want  time.Duration
}{
	{"seed capture payload", 104, 250, 579 * time.Millisecond},
	{"seed capture payload", 104, 48, 687 * time.Millisecond},
	{"prevote/precommit", 112, 250, 579 * time.Millisecond},
	{"prevote/precommit", 112, 64, 633 * time.Millisecond},
	{"prevote/precommit", 112, 48, 687 * time.Millisecond},
	{"prevote/precommit", 112, 32, 741 * time.Millisecond},
	{"proposal", 123, 250, 579 * time.Millisecond},
	{"proposal", 123, 48, 687 * time.Millisecond},
	{"~150 B message", 150, 250, 579 * time.Millisecond},
	{"~150 B message", 150, 48, 741 * time.Millisecond},
	{"300 B payload", 300, 250, 633 * time.Millisecond},
	{"300 B payload", 300, 48, 903 * time.Millisecond},
}

func TestModelledSignTimeTable(t *testing.T) {
	for _, row := range timingRows {
		if got := ModelledSignTime(row.size, row.chunk, NanoSPlus); got != row.want {
			t.Errorf("%d B at chunk %d: %v, want %v", row.size, row.chunk, got, row.want)
		}
	}
	for _, bad := range [][2]int{{0, 250}, {100, 0}, {100, 256}} {
		if got := ModelledSignTime(bad[0], bad[1], NanoSPlus); got != 0 {
			t.Errorf("%v: %v", bad, got)
		}
	}
	// Seeds/000: ~580 ms with large chunks, ~730 ms before.
	if d := ModelledSignTime(112, 250, NanoSPlus); d < 526*time.Millisecond || d > 602*time.Millisecond {
		t.Errorf("large chunks %v outside the published 526-602 ms", d)
	}
	if d := ModelledSignTime(150, 48, NanoSPlus); d < 700*time.Millisecond || d > 760*time.Millisecond {
		t.Errorf("48-byte chunks %v not ~730 ms", d)
	}
}

// The emulator spends exactly what the table says: one HostStall+Wire per
// exchange and DeviceSign on the last one. Messages of each size are real
// sign bytes padded with a longer chain ID where needed, so they parse.
func TestEmulatorTimingTable(t *testing.T) {
	for _, row := range timingRows {
		t.Run(fmt.Sprintf("%d@%d", row.size, row.chunk), func(t *testing.T) {
			msg := voteOfSize(t, row.size)
			emu, rec := newTestEmulator()
			_ = emu.TakeModelled()
			if _, err := rawSign(t, emu, msg, row.chunk); err != nil {
				t.Fatal(err)
			}
			slept := rec.take()
			n := (row.size + row.chunk - 1) / row.chunk
			if len(slept) != n+1 || slept[n] != NanoSPlus.DeviceSign {
				t.Fatalf("sleeps %v, want %d exchanges then the device signature", slept, n)
			}
			for _, d := range slept[:n] {
				if d != 54*time.Millisecond {
					t.Fatalf("exchange cost %v", d)
				}
			}
			if got := emu.TakeModelled(); got != row.want || sum(slept) != row.want {
				t.Fatalf("modelled %v, slept %v, want %v", got, sum(slept), row.want)
			}
			if emu.TakeModelled() != 0 {
				t.Fatal("TakeModelled does not reset")
			}
		})
	}
}

// voteOfSize builds a real prevote whose sign bytes are exactly n bytes,
// by choosing the chain ID length (104..300 covers the table).
func voteOfSize(t testing.TB, n int) []byte {
	t.Helper()
	for l := 1; l < 400; l++ {
		b := signBytesChain(strings.Repeat("c", l), signbytes.StepPrevote, 1, 0)
		if len(b) == n {
			return b
		}
		if len(b) > n {
			break
		}
	}
	t.Fatalf("no vote of %d bytes", n)
	return nil
}

func TestEmulatorCloseReleasesSleep(t *testing.T) {
	t.Parallel()
	clk := clockwork.NewFakeClock()
	emu := NewEmulator(EmulatorConfig{Key: testKey(), Timing: &EmulatorTiming{DeviceSign: 10 * time.Second}, Clock: clk})
	done := make(chan error, 1)
	go func() {
		_, err := rawSign(t, emu, signBytes(t, signbytes.StepPrevote, 1, 0), 250)
		done <- err
	}()
	awaitWaiter(t, clk) // the on-device signature is being waited out
	emu.Close()
	// Released with the clock standing still: Close, not the time, ended it.
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("got %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not release the sleep")
	}
	if _, err := emu.Exchange(VersionAPDU()); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	if err := emu.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
}

// On a fake clock the model waits exactly its figures, one after the
// other: the exchange (HostStall+Wire), then the on-device signature.
func TestEmulatorWaitsOnItsClock(t *testing.T) {
	clk := clockwork.NewFakeClock()
	emu := NewEmulator(EmulatorConfig{Key: testKey(), Clock: clk})
	defer emu.Close()
	msg := signBytes(t, signbytes.StepPrevote, 1, 0)
	start := clk.Now()
	done := make(chan error, 1)
	go func() {
		sig, err := rawSign(t, emu, msg, 250)
		if err == nil && !testKey().PubKey().VerifySignature(msg, sig) {
			err = errors.New("signature does not verify")
		}
		done <- err
	}()
	for _, d := range []time.Duration{NanoSPlus.HostStall + NanoSPlus.Wire, NanoSPlus.DeviceSign} {
		awaitWaiter(t, clk)
		clk.Advance(d - 1)
		if !waiting(clk) {
			t.Fatalf("a wait of %v ended early", d)
		}
		clk.Advance(1)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the signature did not return")
	}
	want := ModelledSignTime(len(msg), 250, NanoSPlus)
	if took := clk.Since(start); took != want {
		t.Errorf("took %v on the clock, model %v", took, want)
	}
	if got := emu.TakeModelled(); got != want {
		t.Errorf("TakeModelled %v, want %v", got, want)
	}
}

// The one real-time test: a NanoSPlus signature with large chunks takes
// at least the ~579 ms of the model (seeds/000's order of magnitude) of
// wall clock; a loaded host may take longer, never shorter.
func TestEmulatorRealTime(t *testing.T) {
	if testing.Short() {
		t.Skip("sleeps ~0.6 s")
	}
	t.Parallel()
	emu := NewEmulator(EmulatorConfig{Key: testKey()})
	defer emu.Close()
	msg := signBytes(t, signbytes.StepPrevote, 1, 0)
	start := time.Now()
	if _, err := rawSign(t, emu, msg, 250); err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	want := ModelledSignTime(len(msg), 250, NanoSPlus)
	if el < want {
		t.Fatalf("took %v, less than the model's %v", el, want)
	}
	if got := emu.TakeModelled(); got != want {
		t.Fatalf("TakeModelled %v, want %v", got, want)
	}
}
