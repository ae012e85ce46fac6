package latency

import (
	"strings"
	"testing"
	"time"
)

// FuzzParse drives latency.Parse (valnet signer serve --latency, the
// text form of a latency) and the model of whatever it accepts: no panic,
// no hang, an error that names the text for anything refused, and draws
// that are real delays (never negative, uniform within its bounds).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"200ms", "0", "fixed:1s", "uniform:100ms:300ms", "normal:200ms:30ms",
		"lognormal:200ms:800ms", "uniform:1s:1s", "lognormal:1ns:2562047h",
		"normal:2562047h:2562047h", "uniform:0:2562047h", "fixed:-1ms", "lognormal:0:1s",
		"uniform:3s:1s", "cauchy:1s", "", ":", "fixed:", "uniform:1s", "200", "1e3ms",
	} {
		f.Add(s, int64(1))
	}
	f.Fuzz(func(t *testing.T, text string, seed int64) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			check(t, text, seed)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("Parse(%q) did not return within 10s", text)
		}
	})
}

func check(t *testing.T, text string, seed int64) {
	spec, err := Parse(text)
	if err != nil {
		if !strings.Contains(err.Error(), "latency ") {
			t.Errorf("Parse(%q): the error does not name the latency: %v", text, err)
		}
		return
	}
	if err := spec.Validate(); err != nil {
		t.Fatalf("Parse(%q) accepted %+v, which Validate refuses: %v", text, spec, err)
	}
	_ = spec.String()
	_ = spec.Median()
	m, err := New(spec, seed, "fuzz")
	if err != nil {
		t.Fatalf("New(%+v): %v", spec, err)
	}
	for range 50 {
		d := m.Draw()
		if d < 0 {
			t.Fatalf("%s drew a negative delay %v", spec, d)
		}
		if spec.Dist == Uniform && (d < spec.Min || d > spec.Max) {
			t.Fatalf("%s drew %v, outside its bounds", spec, d)
		}
	}
}
