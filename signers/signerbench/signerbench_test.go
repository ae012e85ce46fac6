package signerbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jonboulle/clockwork"
)

// quick keeps the suite fast: few ops, cheap bcrypt, no cap that a slow
// CI machine could hit. SLH-DSA-128s and keyfile every-sign at cost 12 are
// never run here (0.7 s and 0.2 s per op).
func quick(t *testing.T, only ...string) Options {
	return Options{Only: only, Iterations: 5, Duration: time.Minute, Warmup: 1, KeyfileCost: 4, Dir: t.TempDir()}
}

func TestRunProducesEverySelectedRowSane(t *testing.T) {
	only := []string{"ed25519", "secp256k1", "secp256k1-decred", "bls12-381", "ml-dsa-44", "ml-dsa-65", "ml-dsa-87",
		"slh-dsa-sha2-128f", "local", "keyfile-every-sign", "transport"} // transport pulls in both remotes
	o := quick(t, only...)
	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, a := range only[:8] {
		for _, op := range []string{OpKeygen, OpSign, OpVerify} {
			want = append(want, a+" "+op)
		}
	}
	for _, b := range []string{"local", "keyfile-every-sign", "remote-tcp", "remote-unix", "overhead-tcp", "overhead-unix"} {
		want = append(want, b+" "+OpSignVote)
	}
	var got []string
	for _, r := range rep.Rows {
		got = append(got, r.Name+" "+r.Op)
		if r.N != o.Iterations {
			t.Errorf("%s %s: n = %d, want %d (note %q)", r.Name, r.Op, r.N, o.Iterations, r.Note)
			continue
		}
		if !(r.P50US > 0 && r.P50US <= r.P99US && (r.OpsPerS > 0) != (r.Group == GroupTransport)) {
			t.Errorf("%s %s: p50 %v p99 %v ops/s %v", r.Name, r.Op, r.P50US, r.P99US, r.OpsPerS)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows\n got %v\nwant %v", got, want)
	}
	// The hop excludes the guard's fsync, so it is below the whole remote
	// signature, signature by signature.
	byName := map[string]Row{}
	for _, r := range rep.Rows {
		byName[r.Name] = r
	}
	for _, tr := range transports {
		if h, r := byName["overhead-"+tr], byName["remote-"+tr]; h.P99US >= r.P99US || h.P50US >= r.P50US {
			t.Errorf("%s hop %v/%v µs, whole signature %v/%v µs", tr, h.P50US, h.P99US, r.P50US, r.P99US)
		}
	}
	if f := rep.Failed(); len(f) > 0 {
		t.Errorf("failed rows: %+v", f)
	}
	if rep.MessageBytes < 100 || rep.MessageBytes > 160 {
		t.Errorf("message is %d bytes; a CometBFT precommit's sign bytes are ~110-150", rep.MessageBytes)
	}
}

func TestOnlyOneRow(t *testing.T) {
	rep, err := Run(context.Background(), quick(t, "keyfile-once"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1 || rep.Rows[0].Name != "keyfile-once" || rep.Rows[0].N != 5 {
		t.Fatalf("rows: %+v", rep.Rows)
	}
}

// A bench that times broken signing must say so instead of a number.
func TestBrokenSchemesFailTheirRows(t *testing.T) {
	msgs := voteMessages(4)
	good := algorithms[0] // ed25519
	tests := []struct {
		name  string
		tweak func(keyPair) keyPair
		want  map[string]bool // op -> failed
	}{
		{"signature that does not verify", func(k keyPair) keyPair {
			sign := k.sign
			k.sign = func(m []byte) ([]byte, error) {
				s, err := sign(m)
				s[0] ^= 1
				return s, err
			}
			return k
		}, map[string]bool{OpKeygen: false, OpSign: true, OpVerify: true}},
		{"verify that accepts anything", func(k keyPair) keyPair {
			k.verify = func(_, _ []byte) bool { return true }
			return k
		}, map[string]bool{OpKeygen: false, OpSign: false, OpVerify: true}},
		{"signer that errors", func(k keyPair) keyPair {
			k.sign = func([]byte) ([]byte, error) { return nil, errors.New("device unplugged") }
			return k
		}, map[string]bool{OpKeygen: false, OpSign: true, OpVerify: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := good
			a.newKey = func() (keyPair, error) {
				k, err := good.newKey()
				return tc.tweak(k), err
			}
			rows, err := runAlgorithm(context.Background(), quick(t), a, msgs)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 3 {
				t.Fatalf("rows: %+v", rows)
			}
			for _, r := range rows {
				if r.Failed() != tc.want[r.Op] {
					t.Errorf("%s: failed = %v, want %v (note %q)", r.Op, r.Failed(), tc.want[r.Op], r.Note)
				}
				if r.Failed() && r.N != 0 {
					t.Errorf("%s: a failed row reports n = %d", r.Op, r.N)
				}
			}
		})
	}
}

func TestUnavailableSchemeIsSkippedNotFailed(t *testing.T) {
	rows, err := runAlgorithm(context.Background(), quick(t), algorithm{name: "x", unavailable: "needs cgo"}, voteMessages(1))
	if err != nil || len(rows) != 3 {
		t.Fatalf("%v %+v", err, rows)
	}
	for _, r := range rows {
		if r.Failed() || r.N != 0 || r.Note != NotAvailablePrefix+"needs cgo" {
			t.Errorf("%+v", r)
		}
	}
}

func TestJSONRoundTrips(t *testing.T) {
	rep, err := Run(context.Background(), quick(t, "ed25519", "local"))
	if err != nil {
		t.Fatal(err)
	}
	rep.Rows = append(rep.Rows, Row{Group: GroupAlgorithm, Name: "x", Op: OpSign, Note: NotAvailablePrefix + "why"})
	b, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep, back) {
		t.Fatalf("round trip differs:\n%+v\n%+v", rep, back)
	}
	// The row schema is a contract: exactly these keys, always present.
	var raw struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{"group", "n", "name", "note", "op", "ops_per_s", "p50_us", "p99_us"}
	for _, r := range raw.Rows {
		var keys []string
		for k := range r {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, wantKeys) {
			t.Fatalf("row keys %v, want %v", keys, wantKeys)
		}
	}
}

func TestSelect(t *testing.T) {
	sel, err := Select([]string{" Overhead-Unix "})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"overhead-unix", "remote-unix"} {
		if !sel[n] {
			t.Errorf("%s not selected: %v", n, sel)
		}
	}
	if len(sel) != 2 {
		t.Errorf("selected %v", sel)
	}
	all, _ := Select(nil)
	if len(all) != len(catalog) {
		t.Errorf("empty selects %d of %d", len(all), len(catalog))
	}
	_, err = Select([]string{"ed25519", "ed448"})
	var un *UnknownNameError
	if !errors.As(err, &un) || un.Name != "ed448" || !strings.Contains(err.Error(), "keyfile-once") {
		t.Fatalf("err = %v", err)
	}
}

func TestMeasureHonoursDurationAndContext(t *testing.T) {
	// Ops of exactly 10 ms on a fake clock: the warm-up stops after one
	// (past a tenth of the 40 ms cap), then 4 timed ops reach the cap.
	clk := clockwork.NewFakeClock()
	o := Options{Iterations: 1000, Duration: 40 * time.Millisecond, Warmup: 3, clock: clk}
	calls := 0
	slow := func(int) error { calls++; clk.Advance(10 * time.Millisecond); return nil }
	s, err := measure(context.Background(), o, slow)
	if err != nil {
		t.Fatal(err)
	}
	if !s.capped || len(s.d) != 4 || calls != 5 {
		t.Fatalf("capped %v, %d samples of %d calls; want capped, 4 of 5", s.capped, len(s.d), calls)
	}
	for _, d := range s.d {
		if d != 10*time.Millisecond {
			t.Fatalf("samples %v, want each 10ms", s.d)
		}
	}
	// Never fewer than minSamples, even when one op outlasts the cap.
	o.Duration = 5 * time.Millisecond
	if s, err = measure(context.Background(), o, slow); err != nil || len(s.d) != minSamples || !s.capped {
		t.Fatalf("an op longer than the cap: %d samples, capped %v (%v); want %d", len(s.d), s.capped, err, minSamples)
	}
	if r := s.row("g", "n", "op", ""); !strings.Contains(r.Note, "capped") {
		t.Errorf("note %q", r.Note)
	}

	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	_, err = measure(ctx, Options{Iterations: 1000, Duration: -1, Warmup: 1}, func(int) error {
		if calls++; calls == 5 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || calls != 5 {
		t.Fatalf("err %v after %d calls", err, calls)
	}

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	rep, err := Run(ctx, quick(t, "ed25519", "local"))
	if !errors.Is(err, context.Canceled) || len(rep.Rows) != 0 {
		t.Fatalf("Run after cancel: %v, %d rows", err, len(rep.Rows))
	}
}

func TestInterleavedKeepsGoingPastAFailingOp(t *testing.T) {
	o := Options{Iterations: 10, Duration: -1, Warmup: 1}
	ok := func(int) error { return nil }
	bad := func(seq int) error {
		if seq == 4 {
			return errors.New("boom")
		}
		return nil
	}
	s, err := measureInterleaved(context.Background(), o, []op{ok, bad})
	if err != nil {
		t.Fatal(err)
	}
	if len(s[0].d) != 10 || s[0].err != nil || s[1].err == nil {
		t.Fatalf("%+v", s)
	}
}

// TestRowPercentiles: a row's p50 and p99 are nearest-rank over its
// samples in any order (with few samples p99 is the maximum).
func TestRowPercentiles(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Microsecond)
	}
	if r := (samples{d: d}).row("g", "n", "op", ""); r.P50US != 50 || r.P99US != 99 || r.N != 100 {
		t.Errorf("100 samples: p50 %v p99 %v n %d, want 50, 99, 100", r.P50US, r.P99US, r.N)
	}
	if r := (samples{d: d[97:]}).row("g", "n", "op", ""); r.P99US != 3 {
		t.Errorf("p99 of 3 = %v, want the max", r.P99US)
	}
	if r := (samples{}).row("g", "n", "op", ""); r.P50US != 0 || r.P99US != 0 {
		t.Errorf("empty row = %+v", r)
	}
}

func TestTableIsAligned(t *testing.T) {
	rep := newReport(Options{Iterations: 3, Duration: time.Second})
	rep.MessageBytes = 116
	rep.Rows = []Row{
		{Group: GroupAlgorithm, Name: "ed25519", Op: OpSign, N: 3, P50US: 26.4, P99US: 31, OpsPerS: 37000, Note: "x"},
		{Group: GroupBackend, Name: "keyfile-every-sign", Op: OpSignVote, N: 3, P50US: 190000, P99US: 1.2e6, OpsPerS: 5.2},
		{Group: GroupTransport, Name: "overhead-tcp", Op: OpSignVote, N: 3, P50US: -12.5, P99US: 40},
		{Group: GroupAlgorithm, Name: "y", Op: OpSign, Note: NotAvailablePrefix + "why"},
	}
	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, s := range []string{"26.4 µs", "190 ms", "1.20 s", "-12.5 µs", "5.20", "not available: why", "CPUs"} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
	width := -1
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, "|") {
			continue
		}
		if w := utf8.RuneCountInString(l); width < 0 {
			width = w
		} else if w != width {
			t.Errorf("ragged table line (%d, want %d): %q", w, width, l)
		}
	}
}
