package ledger

import (
	"github.com/valnet/valnet/internal/signbytes"

	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/types"
	"github.com/jonboulle/clockwork"
)

// consensusSequence is what one validator signs over a few heights: it
// proposes every third height and one height needs a second round.
func consensusSequence(n int) []req {
	var seq []req
	for h := int64(1); len(seq) < n; h++ {
		rounds := int64(1)
		if h == 4 {
			rounds = 2
		}
		for r := int64(0); r < rounds && len(seq) < n; r++ {
			steps := []signbytes.Step{signbytes.StepPrevote, signbytes.StepPrecommit}
			if (h+r)%3 == 0 {
				steps = append([]signbytes.Step{signbytes.StepProposal}, steps...)
			}
			for _, s := range steps {
				if len(seq) < n {
					seq = append(seq, req{s, h, r})
				}
			}
		}
	}
	return seq
}

func TestSignerEndToEnd(t *testing.T) {
	for _, chunk := range []int{250, 48} {
		emu, rec := newTestEmulator()
		s, err := Open(emu, chunk)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.TakeInjected(); got != 2*54*time.Millisecond {
			t.Errorf("open (version + pubkey) modelled %v", got)
		}
		rec.take()
		if !bytes.Equal(s.PubKey().Bytes(), testKey().PubKey().Bytes()) {
			t.Fatal("public key differs from the device's")
		}
		if s.Label() != "ledger(model:ledger-nano-s-plus)" || s.ChunkSize() != chunk || s.Version() != DefaultEmulatorVersion {
			t.Errorf("label %q chunk %d version %v", s.Label(), s.ChunkSize(), s.Version())
		}
		seq := consensusSequence(20)
		for i, q := range seq {
			msg := signBytes(t, q.step, q.h, q.r)
			sig, err := s.Sign(q.step.String(), msg)
			if err != nil {
				t.Fatalf("chunk %d #%d %v: %v", chunk, i, q, err)
			}
			if !testKey().PubKey().VerifySignature(msg, sig) {
				t.Fatalf("chunk %d #%d %v: signature does not verify", chunk, i, q)
			}
			if want := ModelledSignTime(len(msg), chunk, NanoSPlus); s.TakeInjected() != want {
				t.Fatalf("chunk %d #%d: modelled time differs from %v", chunk, i, want)
			}
		}
		if len(seq) != 20 {
			t.Fatalf("%d signatures", len(seq))
		}
		// Re-signing the last vote is a regression for the device.
		last := seq[len(seq)-1]
		_, err = s.Sign(last.step.String(), signBytes(t, last.step, last.h, last.r))
		if !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), "vote state regression") {
			t.Fatalf("re-sign: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Sign("prevote", signBytes(t, signbytes.StepPrevote, 100, 0)); err == nil {
			t.Fatal("sign after close")
		}
	}
}

func TestSignerParseRefusal(t *testing.T) {
	emu, _ := newTestEmulator()
	s, err := Open(emu, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.ChunkSize() != DefaultChunkSize {
		t.Errorf("chunk %d", s.ChunkSize())
	}
	ext := types.VoteExtensionSignBytes(testChainID, &cmtproto.Vote{Type: cmtproto.PrecommitType, Height: 2, Extension: []byte("x")})
	_, err = s.Sign("bytes", ext)
	if !errors.Is(err, ErrParse) || !strings.Contains(err.Error(), "docs/ledger.md") {
		t.Fatalf("vote extension: %v", err)
	}
	if _, err := s.Sign("bytes", nil); err == nil {
		t.Fatal("empty message signed")
	}
}

// tamper wraps a device and damages its signatures.
type tamper struct {
	Device
	fn func([]byte) []byte
}

func (d tamper) Exchange(c []byte) ([]byte, error) {
	data, err := d.Device.Exchange(c)
	if err == nil && len(data) == 64 {
		data = d.fn(append([]byte(nil), data...))
	}
	return data, err
}

func TestSignerRejectsBadSignatures(t *testing.T) {
	for name, fn := range map[string]func([]byte) []byte{
		"flipped bit": func(b []byte) []byte { b[10] ^= 1; return b },
		"short":       func(b []byte) []byte { return b[:63] },
		"long":        func(b []byte) []byte { return append(b, 0) },
	} {
		emu, _ := newTestEmulator()
		s, err := Open(tamper{emu, fn}, 250)
		if err != nil {
			t.Fatal(err)
		}
		sig, err := s.Sign("prevote", signBytes(t, signbytes.StepPrevote, 1, 0))
		if err == nil || sig != nil {
			t.Errorf("%s: bad signature passed on", name)
		} else if name == "flipped bit" && !strings.Contains(err.Error(), "does not verify") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// answerAll is a device that answers every command with one status word,
// e.g. the dashboard with no app open.
type answerAll struct {
	sw     uint16
	closed bool
}

func (d *answerAll) Exchange([]byte) ([]byte, error) { return nil, StatusWordError(d.sw) }
func (d *answerAll) Close() error                    { d.closed = true; return nil }

func TestOpenErrors(t *testing.T) {
	dev := &answerAll{sw: 0x6E00}
	_, err := Open(dev, 250)
	if !errors.Is(err, ErrAppNotOpen) || !strings.Contains(err.Error(), "get version") {
		t.Errorf("app not open: %v", err)
	}
	if !dev.closed {
		t.Error("failed Open leaves the device open")
	}

	for name, v := range map[string]Version{
		"major 2":      {Mode: 0, Major: 2},
		"unknown mode": {Mode: 0x42, Major: 0, Minor: 6},
	} {
		emu := NewEmulator(EmulatorConfig{Key: testKey(), Version: &v, Timing: &EmulatorTiming{}})
		if _, err := Open(emu, 250); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if _, err := emu.Exchange(VersionAPDU()); !errors.Is(err, ErrClosed) {
			t.Errorf("%s: device left open", name)
		}
	}
	// Test-mode 0.x builds (the historical app) are spoken to.
	v := Version{Mode: 0xFF, Major: 0, Minor: 6}
	s, err := Open(NewEmulator(EmulatorConfig{Key: testKey(), Version: &v, Timing: &EmulatorTiming{}}), 250)
	if err != nil || !s.Version().TestMode() {
		t.Errorf("test-mode 0.6.0: %v", err)
	}

	for _, chunk := range []int{-1, 256} {
		if _, err := Open(NewEmulator(EmulatorConfig{Timing: &EmulatorTiming{}}), chunk); err == nil {
			t.Errorf("chunk %d accepted", chunk)
		}
	}
	if _, err := Open(nil, 250); err == nil {
		t.Error("nil device accepted")
	}
}

// Close during a (modelled) on-device signature returns promptly.
func TestSignerCloseDuringSign(t *testing.T) {
	t.Parallel()
	clk := clockwork.NewFakeClock()
	emu := NewEmulator(EmulatorConfig{Key: testKey(), Timing: &EmulatorTiming{DeviceSign: 10 * time.Second}, Clock: clk})
	s, err := Open(emu, 250)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Sign("prevote", signBytes(t, signbytes.StepPrevote, 1, 0))
		done <- err
	}()
	awaitWaiter(t, clk) // the on-device signature is under way
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("got %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not end the Sign")
	}
}

// A signer restarted on the same modelled device finds the device's vote
// state where it was: the app was not restarted.
func TestSignerRestartKeepsDeviceState(t *testing.T) {
	emu, _ := newTestEmulator()
	defer emu.Close()
	s, err := Open(emu.Conn(), 250)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sign("prevote", signBytes(t, signbytes.StepPrevote, 1, 0)); err != nil {
		t.Fatal(err)
	}
	if s.Label() != "ledger(model:ledger-nano-s-plus)" {
		t.Errorf("label through Conn: %q", s.Label())
	}
	s.Close()
	s, err = Open(emu.Conn(), 250)
	if err != nil {
		t.Fatal("reopen:", err)
	}
	defer s.Close()
	if _, err := s.Sign("prevote", signBytes(t, signbytes.StepPrevote, 1, 0)); !errors.Is(err, ErrDenied) {
		t.Fatalf("same vote after reopen: %v", err)
	}
	if _, err := s.Sign("precommit", signBytes(t, signbytes.StepPrecommit, 1, 0)); err != nil {
		t.Fatal(err)
	}
}
