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

// timedSign signs msg on the real clock, checks the signature verifies,
// and returns how long Sign took.
func timedSign(t *testing.T, s KeySigner, msg []byte) time.Duration {
	t.Helper()
	start := time.Now()
	sig, err := s.Sign(phase.Prevote, msg)
	took := time.Since(start)
	verified(t, signResult{sig, err}, s.PubKey(), msg)
	return took
}

// tableProfile is a small table so the tests stay short: 64 B 10 ms,
// 1024 B 60 ms.
var tableProfile = profiles.Profile{Name: "table-test", ByPayload: []profiles.Point{
	{Bytes: 64, Latency: 10 * time.Millisecond}, {Bytes: 1024, Latency: 60 * time.Millisecond}}}

// On a fake clock a signature waits exactly the model's time (still
// waiting 1 ns before it, back at it), whatever the payload, and all of
// it is reported as modelled.
func TestSimulatedTakesTheModelledTime(t *testing.T) {
	for _, tc := range []struct {
		name     string
		profile  profiles.Profile
		msgBytes int
		want     time.Duration
	}{
		{"fixed 30ms", fixedProfile(30 * time.Millisecond), 100, 30 * time.Millisecond},
		{"table 100 B", tableProfile, 100, tableProfile.At(100)},
		{"table 1000 B", tableProfile, 1000, tableProfile.At(1000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			s := newSim(t, simKey(), tc.profile, 1, "v0")
			s.clock = clk
			msg := make([]byte, tc.msgBytes)
			done := goSign(s, msg)
			advanceThrough(t, clk, tc.want)
			verified(t, await(t, done), s.PubKey(), msg)
			if inj := s.TakeInjected(); inj != tc.want {
				t.Errorf("injected %v, want the model's %v", inj, tc.want)
			}
			if again := s.TakeInjected(); again != 0 {
				t.Errorf("TakeInjected did not reset: %v", again)
			}
		})
	}
}

// On the real clock a loaded host may oversleep but never shortens the
// model: the call takes at least the device time, and exactly the device
// time is reported as modelled.
func TestSimulatedNeverShortensTheModelledTime(t *testing.T) {
	const device = 20 * time.Millisecond
	s := newSim(t, simKey(), fixedProfile(device), 1, "v0")
	if took := timedSign(t, s, []byte("vote")); took < device {
		t.Errorf("Sign took %v, less than the model's %v", took, device)
	}
	if inj := s.TakeInjected(); inj != device {
		t.Errorf("injected %v, want the model's %v", inj, device)
	}
}

// A key slower than the device gets no wait added (a model never makes a
// signature faster than the real one), and only the device time counts
// as modelled.
func TestSimulatedAddsNothingAfterASlowerKey(t *testing.T) {
	const device = 30 * time.Millisecond
	clk := newFakeClock()
	s := newSim(t, &clockKey{key: simKey(), clk: clk, cost: 2 * device}, fixedProfile(device), 1, "v0")
	s.clock = clk
	start := clk.Now()
	verified(t, awaitNoWait(t, clk, goSign(s, []byte("vote"))), s.PubKey(), []byte("vote"))
	if took := clk.Since(start); took != 2*device {
		t.Errorf("Sign took %v, want the key's own %v", took, 2*device)
	}
	if inj := s.TakeInjected(); inj != device {
		t.Errorf("injected %v, want the device's %v", inj, device)
	}
}

func TestDeviceRestAndModelled(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		device, spent, innerInj time.Duration
		rest, modelled          time.Duration
	}{
		{100 * ms, 0, 0, 100 * ms, 0},               // before the wait: all of it to wait
		{100 * ms, 30 * ms, 0, 70 * ms, 30 * ms},    // the real signature took 30 ms of it
		{100 * ms, 100 * ms, 0, 0, 100 * ms},        // after the wait: the device time
		{100 * ms, 250 * ms, 0, 0, 100 * ms},        // a slower key: no wait, the device time counts
		{100 * ms, 250 * ms, 200 * ms, 0, 200 * ms}, // inner's own modelled time, when larger
		{100 * ms, 40 * ms, 0, 60 * ms, 40 * ms},    // cut short by Close: what was spent
	} {
		if got := deviceRest(tc.device, tc.spent); got != tc.rest {
			t.Errorf("deviceRest(%v, %v) = %v, want %v", tc.device, tc.spent, got, tc.rest)
		}
		if got := deviceModelled(tc.device, tc.spent, tc.innerInj); got != tc.modelled {
			t.Errorf("deviceModelled(%v, %v, %v) = %v, want %v", tc.device, tc.spent, tc.innerInj, got, tc.modelled)
		}
	}
}

func TestSimulatedTableOrdersPayloads(t *testing.T) {
	clk := newFakeClock()
	s := newSim(t, simKey(), tableProfile, 1, "v0")
	s.clock = clk
	took := func(n int) time.Duration {
		start := clk.Now()
		done := goSign(s, make([]byte, n))
		advanceThrough(t, clk, tableProfile.At(n)) // the wait is the table's at that size
		verified(t, await(t, done), s.PubKey(), make([]byte, n))
		return clk.Since(start)
	}
	small, large := took(100), took(1000)
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
	clk := newFakeClock()
	s, err := NewSimulated(simKey(), fixedProfile(10*time.Second), 1, "v0")
	if err != nil {
		t.Fatal(err)
	}
	s.clock = clk
	msg := []byte("vote")
	done := goSign(s, msg)
	awaitWaiters(t, clk, 1) // Sign is in its modelled time
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Released with the clock standing still: Close, not the time, ended it.
	verified(t, await(t, done), s.PubKey(), msg)
	if inj := s.TakeInjected(); inj != 0 {
		t.Errorf("injected %v: counts modelled time not spent", inj)
	}
	// After Close no time is added: Sign returns without waiting.
	verified(t, awaitNoWait(t, clk, goSign(s, msg)), s.PubKey(), msg)
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
