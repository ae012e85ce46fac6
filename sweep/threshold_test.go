package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/results/eventlog"
)

// fakeRuns is a hand-written point runner: the target metric is a
// function of the value (a duration) and the seed; it records every run
// in its dir so that finished reads it back like a run directory.
type fakeRuns struct {
	metric   func(v time.Duration, seed int64) float64
	calls    []string // key=value/seed, in order
	failAt   int      // the failAt-th call (from 1) fails; 0: never
	cancel   func()   // called at call number cancelAt, which then sees ctx end
	cancelAt int
	// overloaded says which runs' host was overloaded; nil: none.
	overloaded func(dir string) bool
}

func (f *fakeRuns) run(ctx context.Context, key, value string, seed int64, dir string) (Result, error) {
	f.calls = append(f.calls, fmt.Sprintf("%s=%s/%d", key, value, seed))
	n := len(f.calls)
	if n == f.cancelAt {
		f.cancel()
		return Result{}, ctx.Err()
	}
	if n == f.failAt {
		return Result{}, errors.New("the network did not start")
	}
	d, err := time.ParseDuration(value)
	if err != nil {
		return Result{}, err
	}
	r := Result{Seed: seed, Dir: dir, StopReason: eventlog.StopHeights, Metrics: map[string]float64{"heights_committed": 10}}
	r.HostOverloaded = f.overloaded != nil && f.overloaded(dir)
	if m := f.metric(d, seed); !math.IsNaN(m) { // NaN: no samples
		r.Metrics["missed_precommits_rate(hsm)"] = m
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Result{}, err
	}
	data, _ := json.Marshal(r)
	return r, os.WriteFile(filepath.Join(dir, "fake-run.json"), data, 0o644)
}

func finishedFake(dir string) (Result, bool, error) {
	data, err := os.ReadFile(filepath.Join(dir, "fake-run.json"))
	if errors.Is(err, os.ErrNotExist) {
		return Result{}, false, nil
	}
	var r Result
	if err == nil {
		err = json.Unmarshal(data, &r)
	}
	return r, err == nil && r.Finished(), err
}

// rate rises with the latency: 0 up to 500ms, then 0.1 per 100ms.
func rate(v time.Duration, _ int64) float64 {
	return max(0, float64(v-500*time.Millisecond)/float64(time.Second))
}

func newSearch(t *testing.T, out string, f *fakeRuns, seeds ...int64) *Threshold {
	t.Helper()
	target, err := ParseTarget("missed_precommits_rate(hsm) <= 0.05")
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	return &Threshold{
		Key:  "validators[hsm].signer.latency",
		Grid: mustGrid(t, Durations, "0..3s", "50ms"), Target: target, Direction: Largest,
		Seeds: seeds, OutDir: out, RunPoint: f.run, Finished: finishedFake, Out: &buf,
		Stamp: Stamp{Scenario: "hsm.yaml", ScenarioSHA256: "abc", Backend: "inprocess", Key: "validators[hsm].signer.latency", Seed: seeds[0]},
	}
}

func output(th *Threshold) string { return th.Out.(*strings.Builder).String() }

func TestThresholdSearch(t *testing.T) {
	out := t.TempDir()
	f := &fakeRuns{metric: rate}
	th := newSearch(t, out, f, 1, 2, 3)
	rep, err := th.Search(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != Found || *rep.HoldsUpTo != "550ms" || *rep.FailsFrom != "600ms" {
		t.Fatalf("verdict %s, %v..%v; output:\n%s", rep.Verdict, rep.HoldsUpTo, rep.FailsFrom, output(th))
	}
	if len(f.calls) != 3*len(rep.Probes) {
		t.Errorf("%d runs for %d probes of 3 repeats", len(f.calls), len(rep.Probes))
	}
	want := "validators[hsm].signer.latency: holds up to 550ms, fails from 600ms (resolution 50ms, 3 runs per probe, 8 probes)"
	if !strings.Contains(output(th), want) {
		t.Errorf("output lacks %q:\n%s", want, output(th))
	}
	if !strings.Contains(output(th), "probe 1  validators[hsm].signer.latency=0s  missed_precommits_rate(hsm): 0 0 0  held\n") {
		t.Errorf("probe line missing:\n%s", output(th))
	}
	// threshold.json says the same, with every run's seed, dir and metrics.
	got, err := ReadThreshold(out)
	if err != nil {
		t.Fatal(err)
	}
	if got.Verdict != Found || *got.HoldsUpTo != "550ms" || *got.FailsFrom != "600ms" || got.Resolution != "50ms" || got.Range != "0s..3s" || got.Rule != HoldRule || got.Repeat != 3 {
		t.Errorf("threshold.json: %+v", got)
	}
	if got.HoldsFrom != nil || got.FailsUpTo != nil {
		t.Errorf("smallest-direction keys set for largest")
	}
	p := got.Probes[0]
	if p.Value != "0s" || len(p.Runs) != 3 || p.Runs[1].Seed != 2 || p.Runs[1].Dir != filepath.Join("0s", "r2") || p.Runs[1].Metrics["heights_committed"] != 10 {
		t.Errorf("first probe: %+v", p)
	}
}

// Repeats that disagree make a mixed probe: it fails (all runs must hold)
// and is counted and named.
func TestThresholdMixed(t *testing.T) {
	f := &fakeRuns{metric: func(v time.Duration, seed int64) float64 {
		if seed == 2 { // one seed is unlucky 200ms earlier
			v += 200 * time.Millisecond
		}
		return rate(v, seed)
	}}
	th := newSearch(t, t.TempDir(), f, 1, 2, 3)
	rep, err := th.Search(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != Found || *rep.HoldsUpTo != "350ms" || *rep.FailsFrom != "400ms" {
		t.Fatalf("verdict %s %v %v:\n%s", rep.Verdict, rep.HoldsUpTo, rep.FailsFrom, output(th))
	}
	if rep.MixedProbes == 0 || !strings.Contains(output(th), "failed (mixed: 2 of 3 runs held)") || !strings.Contains(output(th), "probe(s) mixed") {
		t.Errorf("mixed probes not reported (%d):\n%s", rep.MixedProbes, output(th))
	}
}

// An interrupted search keeps threshold.json with the probes done; the
// same command again reuses every finished run and ends where an
// uninterrupted search would.
func TestThresholdResume(t *testing.T) {
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	f := &fakeRuns{metric: rate, cancel: cancel, cancelAt: 8} // during the third probe
	rep, err := newSearch(t, out, f, 1, 2, 3).Search(ctx)
	if !errors.Is(err, context.Canceled) || rep.Verdict != Incomplete || len(rep.Probes) != 2 {
		t.Fatalf("interrupted: err %v verdict %s probes %d", err, rep.Verdict, len(rep.Probes))
	}
	kept, err := ReadThreshold(out)
	if err != nil || kept.Verdict != Incomplete || len(kept.Probes) != 2 || kept.Error == "" {
		t.Fatalf("threshold.json after Ctrl-C: %+v, %v", kept, err)
	}

	again := &fakeRuns{metric: rate}
	th := newSearch(t, out, again, 1, 2, 3)
	rep, err = th.Search(context.Background())
	if err != nil || rep.Verdict != Found || *rep.HoldsUpTo != "550ms" {
		t.Fatalf("resumed: %v %+v", err, rep)
	}
	// 7 finished runs (2 probes and 1 run of the third) are not run again.
	if want := 3*len(rep.Probes) - 7; len(again.calls) != want {
		t.Errorf("resumed search ran %d runs, want %d: %v", len(again.calls), want, again.calls)
	}
	if !strings.Contains(output(th), "[3 of 3 runs reused from") || !strings.Contains(output(th), "[1 of 3 runs reused from") {
		t.Errorf("reuse not shown:\n%s", output(th))
	}
	// A third time: nothing runs.
	none := &fakeRuns{metric: rate}
	if _, err := newSearch(t, out, none, 1, 2, 3).Search(context.Background()); err != nil || len(none.calls) != 0 {
		t.Errorf("third search: %v, ran %v", err, none.calls)
	}
}

func TestThresholdRefusesAnotherSearchsDir(t *testing.T) {
	out := t.TempDir()
	if _, err := newSearch(t, out, &fakeRuns{metric: rate}, 1).Search(context.Background()); err != nil {
		t.Fatal(err)
	}
	th := newSearch(t, out, &fakeRuns{metric: rate}, 7)
	th.Stamp.Seed = 7
	th.Stamp.ScenarioSHA256 = "def"
	_, err := th.Search(context.Background())
	if err == nil || !strings.Contains(err.Error(), "holds another threshold search (the scenario's text changed; seed 1, now 7)") {
		t.Errorf("err = %v", err)
	}

	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "notes.txt"), nil, 0o644)
	_, err = newSearch(t, full, &fakeRuns{metric: rate}, 1).Search(context.Background())
	if err == nil || !strings.Contains(err.Error(), "is not empty and holds no threshold.json") {
		t.Errorf("err = %v", err)
	}
}

// A run that cannot be done stops the search: incomplete, with the reason.
func TestThresholdRunFails(t *testing.T) {
	out := t.TempDir()
	rep, err := newSearch(t, out, &fakeRuns{metric: rate, failAt: 4}, 1, 2).Search(context.Background())
	if err == nil || !strings.Contains(err.Error(), "validators[hsm].signer.latency=3s, run 2 of 2 (seed 2") || !strings.Contains(err.Error(), "the network did not start") {
		t.Fatalf("err = %v", err)
	}
	kept, _ := ReadThreshold(out)
	if rep.Verdict != Incomplete || kept.Verdict != Incomplete || len(kept.Probes) != 1 || !strings.Contains(kept.Error, "did not start") {
		t.Errorf("report %+v", kept)
	}
}

func TestThresholdEverywhere(t *testing.T) {
	for _, tc := range []struct {
		metric  func(time.Duration, int64) float64
		verdict Verdict
		line    string
	}{
		{func(time.Duration, int64) float64 { return 0 }, HoldsEverywhere, "holds over the whole range 0s..3s (held at both ends; no threshold in it) (resolution 50ms, 1 run per probe, 2 probes)"},
		{func(time.Duration, int64) float64 { return 1 }, FailsEverywhere, "fails over the whole range 0s..3s"},
	} {
		t.Run(string(tc.verdict), func(t *testing.T) {
			out := t.TempDir()
			th := newSearch(t, out, &fakeRuns{metric: tc.metric}, 1)
			rep, err := th.Search(context.Background())
			if err != nil || rep.Verdict != tc.verdict || rep.HoldsUpTo != nil || rep.FailsFrom != nil {
				t.Fatalf("%v %+v", err, rep)
			}
			if !strings.Contains(output(th), tc.line) {
				t.Errorf("output lacks %q:\n%s", tc.line, output(th))
			}
			data, _ := os.ReadFile(filepath.Join(out, ThresholdFile))
			if !strings.Contains(string(data), `"holds_up_to": null`) || !strings.Contains(string(data), `"verdict": "`+string(tc.verdict)+`"`) {
				t.Errorf("threshold.json:\n%s", data)
			}
		})
	}
}

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Target
		err  string
	}{
		{"missed_precommits_rate(hsm) <= 0.05", Target{"missed_precommits_rate(hsm)", AtMost, 0.05}, ""},
		{"heights_committed>=20", Target{"heights_committed", AtLeast, 20}, ""},
		{"  sign_latency_p99_ms(v, precommit) <= 1e3 ", Target{"sign_latency_p99_ms(v, precommit)", AtMost, 1000}, ""},
		{"block_interval_p95_ms <= -1", Target{"block_interval_p95_ms", AtMost, -1}, ""},
		{"missed_precommits(hsm) < 1", Target{}, `"<" is not a comparison a target may use (only <= and >=)`},
		{"missed_precommits(hsm) == 1", Target{}, `"==" is not a comparison`},
		{"missed_precommits(hsm)", Target{}, "no comparison"},
		{"<= 3", Target{}, "no metric before <="},
		{"halts >=", Target{}, "no value after >="},
		{"halts <= few", Target{}, `"few" is not a number`},
		{"halts <= 1 >= 0", Target{}, "two comparisons"},
		{"halts <= NaN", Target{}, `"NaN" is not a number`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseTarget(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "want METRIC <= X or METRIC >= X") {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	if tg := (Target{"m", AtLeast, 2}); !tg.Holds(2) || tg.Holds(1.9) {
		t.Errorf("m >= 2 judged wrong")
	}
	if tg := (Target{"m", AtMost, 2}); !tg.Holds(2) || tg.Holds(2.1) {
		t.Errorf("m <= 2 judged wrong")
	}
}

// A run without a value for the target's metric (no samples) does not
// hold: the target could not be shown to hold there.
func TestThresholdRunWithoutValue(t *testing.T) {
	f := &fakeRuns{metric: func(v time.Duration, s int64) float64 {
		if v > 2*time.Second {
			return math.NaN() // e.g. no heights counted
		}
		return rate(v, s)
	}}
	th := newSearch(t, t.TempDir(), f, 1)
	rep, err := th.Search(context.Background())
	if err != nil || rep.Verdict != Found || *rep.HoldsUpTo != "550ms" {
		t.Fatalf("%v %+v", err, rep)
	}
	if !strings.Contains(output(th), "validators[hsm].signer.latency=3s  missed_precommits_rate(hsm): n/a  failed") {
		t.Errorf("output:\n%s", output(th))
	}
	if r := rep.Probes[1].Runs[0]; r.Value != nil || r.Held {
		t.Errorf("run without a value: %+v", r)
	}
}

// A run that stopped before its end (its stop reason, without an error)
// cannot judge the target: the search stops.
func TestThresholdRunStoppedEarly(t *testing.T) {
	th := newSearch(t, t.TempDir(), &fakeRuns{metric: rate}, 1)
	th.RunPoint = func(ctx context.Context, key, value string, seed int64, dir string) (Result, error) {
		return Result{Seed: seed, Dir: dir, StopReason: eventlog.StopError}, nil
	}
	_, err := th.Search(context.Background())
	if err == nil || !strings.Contains(err.Error(), "the run stopped early (error)") {
		t.Errorf("err = %v", err)
	}
}

// What an unfinished run left in its directory goes before it runs again
// (runner.Run refuses a directory that holds a run).
func TestThresholdRemovesUnfinishedRun(t *testing.T) {
	out := t.TempDir()
	if _, err := newSearch(t, out, &fakeRuns{metric: rate, failAt: 1}, 1).Search(context.Background()); err == nil {
		t.Fatal("the failing run did not stop the search")
	}
	left := filepath.Join(ProbeDir(out, "0s", 1), "events.jsonl")
	if err := os.MkdirAll(filepath.Dir(left), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(left, []byte("{}\n"), 0o644)
	if _, err := newSearch(t, out, &fakeRuns{metric: rate}, 1).Search(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the unfinished run's events.jsonl is still there (%v)", err)
	}
}

// Runs on an overloaded host are named per probe and counted: their values
// reflect the machine.
func TestThresholdOverloadedHost(t *testing.T) {
	overloaded := func(dir string) bool { return strings.HasSuffix(dir, filepath.Join("3s", "r2")) }
	th := newSearch(t, t.TempDir(), &fakeRuns{metric: rate, overloaded: overloaded}, 1, 2)
	rep, err := th.Search(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.OverloadedRuns != 1 || !rep.Probes[1].Runs[1].HostOverloaded {
		t.Errorf("overloaded runs %d", rep.OverloadedRuns)
	}
	for _, want := range []string{"3s  missed_precommits_rate(hsm): 2.5 2.5  failed  [host overloaded in 1 of 2 runs", "; 1 run(s) on an overloaded host"} {
		if !strings.Contains(output(th), want) {
			t.Errorf("output lacks %q:\n%s", want, output(th))
		}
	}
}

// TestThresholdConfirm: --confirm reruns the two bracketing values on the
// other backend with the same seeds, under confirm-BACKEND, and says
// whether they agree; a confirming backend whose limit is elsewhere is
// "NOT confirmed".
func TestThresholdConfirm(t *testing.T) {
	for _, tc := range []struct {
		name   string
		real   func(time.Duration, int64) float64
		agrees bool
		says   string
	}{
		{"same bracket", rate, true, "confirmed on inprocess: the same bracket"},
		{"real limit lower", func(v time.Duration, s int64) float64 { return rate(v+100*time.Millisecond, s) }, false, "NOT confirmed on inprocess"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			model := &fakeRuns{metric: rate}
			real := &fakeRuns{metric: tc.real}
			th := newSearch(t, out, model, 1, 2)
			th.ConfirmBackend, th.ConfirmPoint = "inprocess", real.run
			rep, err := th.Search(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			c := rep.Confirm
			if c == nil || len(c.Probes) != 2 || c.Probes[0].Value != "550ms" || c.Probes[1].Value != "600ms" {
				t.Fatalf("confirm %+v", c)
			}
			if want := []string{"validators[hsm].signer.latency=550ms/1", "validators[hsm].signer.latency=550ms/2",
				"validators[hsm].signer.latency=600ms/1", "validators[hsm].signer.latency=600ms/2"}; !slices.Equal(real.calls, want) {
				t.Errorf("confirming runs %v, want %v", real.calls, want)
			}
			if c.Agrees != tc.agrees || !strings.Contains(output(th), tc.says) {
				t.Errorf("agrees %v, want %v; output:\n%s", c.Agrees, tc.agrees, output(th))
			}
			// The values behind each verdict, and how many runs made it.
			line := regexp.MustCompile(`=550ms  missed_precommits_rate\(hsm\): [0-9.]+ [0-9.]+ held \(2 of 2 runs held\) on \w+, [0-9.]+ [0-9.]+ (held|failed) \([0-2] of 2 runs held\) on inprocess`)
			if !line.MatchString(output(th)) {
				t.Errorf("the confirm line lacks the values:\n%s", output(th))
			}
			if _, err := os.Stat(filepath.Join(out, "confirm-inprocess", "600ms", "r2", "fake-run.json")); err != nil {
				t.Errorf("confirming run not under confirm-inprocess: %v", err)
			}
			back, err := ReadThreshold(out)
			if err != nil || back.Confirm == nil || back.Confirm.Agrees != tc.agrees {
				t.Errorf("threshold.json confirm: %+v, %v", back.Confirm, err)
			}
		})
	}
}

// A rate over N heights moves in steps of 1/N: a target finer than that
// is said before the search, with what it then means.
func TestResolutionWarnings(t *testing.T) {
	for _, tc := range []struct {
		target  string
		heights int64
		want    string // "" = no warning
	}{
		{"missed_precommits_rate(hsm) <= 0.05", 15, "at 15 heights a rate moves in steps of 1/15 = 0.06667, so missed_precommits_rate <= 0.05 holds only with none at all"},
		{"missed_precommits_rate(hsm) >= 0.01", 20, ">= 0.01 holds with a single one"},
		{"missed_precommits_rate(hsm) <= 0.1", 15, ""},
		{"missed_precommits_rate(hsm) <= 0.05", 40, ""},
		{"missed_precommits(hsm) <= 0.5", 15, ""},
		{"missed_precommits_rate(hsm) <= 0", 15, ""},
	} {
		target, err := ParseTarget(tc.target)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(resolutionWarnings(target, tc.heights), "\n")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s at %d heights: %q, want %q", tc.target, tc.heights, got, tc.want)
		}
	}
}
