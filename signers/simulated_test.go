package signers

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cometbft/cometbft/crypto/ed25519"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/signers/profiles"
)

// simKey is a real key for the simulated signer to sign with.
func simKey() PrivKeySigner {
	return PrivKeySigner{Key: ed25519.GenPrivKeyFromSecret([]byte("simulated-test"))}
}

func fixedProfile(d time.Duration) profiles.Profile {
	return profiles.Profile{Name: "fixed-test", Description: "model for tests", Source: "test",
		Latency: &latency.Spec{Dist: latency.Fixed, Value: d}}
}

func newSim(t *testing.T, inner KeySigner, p profiles.Profile, seed int64, stream string) *Simulated {
	t.Helper()
	s, err := NewSimulated(inner, p, seed, stream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// timedSign signs msg, checks the signature verifies, and returns how long
// Sign took.
func timedSign(t *testing.T, s KeySigner, msg []byte) time.Duration {
	t.Helper()
	start := time.Now()
	sig, err := s.Sign(phase.Prevote, msg)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if !s.PubKey().VerifySignature(msg, sig) {
		t.Fatal("signature does not verify")
	}
	return took
}

func TestSimulatedTakesTheModelledTime(t *testing.T) {
	// A small table so the test stays fast: 64 B 10 ms, 1024 B 60 ms.
	table := profiles.Profile{Name: "table-test", ByPayload: []profiles.Point{
		{Bytes: 64, Latency: 10 * time.Millisecond}, {Bytes: 1024, Latency: 60 * time.Millisecond}}}
	for _, tc := range []struct {
		name     string
		profile  profiles.Profile
		msgBytes int
		min      time.Duration // the model's time: never faster
	}{
		{"fixed 30ms", fixedProfile(30 * time.Millisecond), 100, 30 * time.Millisecond},
		{"table 100 B", table, 100, table.At(100)},
		{"table 1000 B", table, 1000, table.At(1000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, simKey(), tc.profile, 1, "v0")
			took := timedSign(t, s, make([]byte, tc.msgBytes))
			// Generous upper bound: a loaded host may oversleep, but not by 50 ms.
			if took < tc.min || took > tc.min+50*time.Millisecond {
				t.Errorf("Sign took %v, want %v .. %v", took, tc.min, tc.min+50*time.Millisecond)
			}
			inj := s.TakeInjected()
			if inj < tc.min || inj > took {
				t.Errorf("injected %v, want between the model's %v and the call's %v", inj, tc.min, took)
			}
			if again := s.TakeInjected(); again != 0 {
				t.Errorf("TakeInjected did not reset: %v", again)
			}
		})
	}
}

func TestSimulatedTableOrdersPayloads(t *testing.T) {
	table := profiles.Profile{Name: "table-test", ByPayload: []profiles.Point{
		{Bytes: 64, Latency: 10 * time.Millisecond}, {Bytes: 1024, Latency: 60 * time.Millisecond}}}
	s := newSim(t, simKey(), table, 1, "v0")
	small := timedSign(t, s, make([]byte, 100))
	large := timedSign(t, s, make([]byte, 1000))
	// The table says 11.9 ms vs 58.75 ms: 1000 B must take clearly longer.
	if large < small+30*time.Millisecond {
		t.Errorf("1000 B took %v, 100 B took %v: want the larger payload ~47 ms slower", large, small)
	}
}

func TestSimulatedPlansFromTheProfile(t *testing.T) {
	yubi, _ := profiles.Builtin("yubihsm2")
	s := newSim(t, simKey(), yubi, 1, "v0")
	for _, tc := range []struct {
		bytes int
		want  time.Duration
	}{
		{32, 105 * time.Millisecond},
		{100, 130 * time.Millisecond}, // 121 + 36/64 * 16
		{1024, 353 * time.Millisecond},
		{10, 105 * time.Millisecond}, // below the table: clamped
	} {
		if got := s.plan(KindBytes, tc.bytes); got != tc.want {
			t.Errorf("plan(%d B) = %v, want %v", tc.bytes, got, tc.want)
		}
	}

	yubi.Jitter = 0.05
	j := newSim(t, simKey(), yubi, 1, "v0")
	lo, hi := float64(130*time.Millisecond)*0.95, float64(130*time.Millisecond)*1.05
	var draws []time.Duration
	for range 200 {
		d := j.plan(KindBytes, 100)
		if float64(d) < lo || float64(d) > hi {
			t.Fatalf("jittered plan %v outside ±5%% of 130ms", d)
		}
		draws = append(draws, d)
	}
	slices.Sort(draws)
	if draws[len(draws)-1]-draws[0] < 5*time.Millisecond {
		t.Errorf("jitter ±5%% of 130ms spread only %v over 200 draws", draws[len(draws)-1]-draws[0])
	}
}

func TestSimulatedRepeatsWithTheSameSeed(t *testing.T) {
	for _, name := range []string{"ledger-nano-s-plus", "slh-dsa-128s-ledger", "yubihsm2"} {
		t.Run(name, func(t *testing.T) {
			p, ok := profiles.Builtin(name)
			if !ok {
				t.Fatal("missing profile")
			}
			p.Jitter = 0.05 // only used by the table profile
			seq := func(seed int64, stream string) []time.Duration {
				s := newSim(t, simKey(), p, seed, stream)
				var out []time.Duration
				for range 20 {
					out = append(out, s.plan(phase.Prevote, 120))
				}
				return out
			}
			a, b := seq(7, "v1"), seq(7, "v1")
			if !slices.Equal(a, b) {
				t.Fatalf("same seed, different plans:\n%v\n%v", a, b)
			}
			if slices.Equal(a, seq(8, "v1")) || slices.Equal(a, seq(7, "v2")) {
				t.Error("another seed or stream gave the same plans: the draws are not seeded")
			}
		})
	}
}

func TestSimulatedCloseReleasesALongWait(t *testing.T) {
	s, err := NewSimulated(simKey(), fixedProfile(10*time.Second), 1, "v0")
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("vote")
	type result struct {
		sig []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		sig, err := s.Sign(phase.Precommit, msg)
		done <- result{sig, err}
	}()
	time.Sleep(50 * time.Millisecond)
	closed := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		if !s.PubKey().VerifySignature(msg, r.sig) {
			t.Error("released signature does not verify")
		}
		if waited := time.Since(closed); waited > time.Second {
			t.Errorf("Sign returned %v after Close", waited)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not release the waiting Sign")
	}
	if inj := s.TakeInjected(); inj >= 10*time.Second {
		t.Errorf("injected %v: counts the modelled time not spent", inj)
	}
	// After Close no time is added.
	if took := timedSign(t, s, msg); took > time.Second {
		t.Errorf("Sign after Close took %v", took)
	}
}

func TestSimulatedLabelAndErrors(t *testing.T) {
	p, _ := profiles.Builtin("yubihsm2")
	s := newSim(t, simKey(), p, 1, "v0")
	if got := s.Label(); got != "simulated(model:yubihsm2)" {
		t.Errorf("Label() = %q", got)
	}
	if !bytes.Equal(s.PubKey().Bytes(), simKey().PubKey().Bytes()) {
		t.Error("PubKey is not the inner key's")
	}
	for _, tc := range []struct {
		name  string
		inner KeySigner
		p     profiles.Profile
	}{
		{"no key", nil, p},
		{"no timing", simKey(), profiles.Profile{Name: "empty"}},
		{"bad distribution", simKey(), profiles.Profile{Name: "bad",
			Latency: &latency.Spec{Dist: latency.Lognormal, P50: time.Second, P99: time.Millisecond}}},
	} {
		if _, err := NewSimulated(tc.inner, tc.p, 1, "v0"); err == nil {
			t.Errorf("%s: NewSimulated accepted it", tc.name)
		} else if strings.TrimSpace(err.Error()) == "" {
			t.Errorf("%s: empty error", tc.name)
		}
	}
}
