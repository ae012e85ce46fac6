package sweep

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valnet/valnet/scenarios"
)

// noRuns is a Runner that must not be called: Prepare checks before any run.
type noRuns struct{ t *testing.T }

var _ Runner = noRuns{}

func (n noRuns) Run(context.Context, *scenarios.Plan, int64, string) (Result, error) {
	n.t.Error("a run started")
	return Result{}, nil
}

func slow4Spec() ThresholdSpec {
	return ThresholdSpec{Scenario: "testdata/slow4.yaml", Key: "validators[slow].signer.latency", Range: "0..1s",
		Target: "missed_precommits_rate( slow ) <= 0.05", Repeat: 2}
}

func TestPrepare(t *testing.T) {
	seed := int64(40)
	sp := slow4Spec()
	sp.Seed = &seed
	th, err := sp.Prepare(context.Background(), noRuns{t}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if th.Grid.Unit != Durations || th.Grid.Format(th.Grid.Resolution) != "31ms" || th.Direction != Largest {
		t.Errorf("grid %+v direction %s", th.Grid, th.Direction)
	}
	if th.Target.String() != "missed_precommits_rate(slow) <= 0.05" {
		t.Errorf("target %q: want the reference as results.MetricValues names it", th.Target)
	}
	if len(th.Seeds) != 2 || th.Seeds[0] != 40 || th.Seeds[1] == 40 {
		t.Errorf("seeds %v", th.Seeds)
	}
	want := DefaultThresholdDir("slow4", "validators[slow].signer.latency", "inprocess", 40)
	if !strings.HasPrefix(th.OutDir, filepath.Join("runs", "threshold-slow4-validators_slow_.signer.latency-")) || th.OutDir != want || th.Stamp.Backend != "inprocess" || th.Stamp.Seed != 40 || len(th.Stamp.ScenarioSHA256) != 64 {
		t.Errorf("out %s stamp %+v", th.OutDir, th.Stamp)
	}

	for _, tc := range []struct {
		key, value string
		unit       Unit
	}{
		{"validators[v].count", "1..20", Integers},
		{"chain.timeouts.commit", "100ms..2s", Durations},
		{"run.heights", "3..30", Integers},
	} {
		sp := slow4Spec()
		sp.Key, sp.Range = tc.key, tc.value
		th, err := sp.Prepare(context.Background(), noRuns{t}, io.Discard)
		if err != nil || th.Grid.Unit != tc.unit {
			t.Errorf("%s %s: %v", tc.key, tc.value, err)
		}
	}
}

// Bad input is reported before any run, every problem at once, each with
// what is allowed.
func TestPrepareBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*ThresholdSpec)
		want []string
	}{
		{"unknown key", func(s *ThresholdSpec) { s.Key = "validators[slow].signer.latncy" },
			[]string{`--vary validators[slow].signer.latncy: `, `unknown key "latncy"`, `did you mean "latency"?`}},
		{"unknown validator", func(s *ThresholdSpec) { s.Key = "validators[slw].signer.latency" },
			[]string{`--vary validators[slw].signer.latency=0s`, `slw`}},
		{"not a number", func(s *ThresholdSpec) { s.Key = "validators[slow].signer.type" },
			[]string{"--vary validators[slow].signer.type: its value is a string; a threshold needs a key whose value is a duration or a number"}},
		{"range of the wrong type", func(s *ThresholdSpec) { s.Range = "1..20" },
			[]string{`--range "1..20": low end: "1" is not a duration`, "(validators[slow].signer.latency takes durations)"}},
		{"integer key, duration range", func(s *ThresholdSpec) { s.Key, s.Range = "validators[v].count", "0..3s" },
			[]string{`"3s" is not an integer`, "takes integers"}},
		{"empty range", func(s *ThresholdSpec) { s.Range = "1s..1s" }, []string{"is empty"}},
		{"reversed range", func(s *ThresholdSpec) { s.Range = "1s..0s" }, []string{"is reversed"}},
		{"value the scenario refuses", func(s *ThresholdSpec) { s.Key, s.Range = "validators[v].count", "0..5" },
			[]string{"--vary validators[v].count=0"}},
		{"unknown metric", func(s *ThresholdSpec) { s.Target = "missed_precommit_rate(slow) <= 0.05" },
			[]string{`unknown metric "missed_precommit_rate"`, `did you mean "missed_precommits_rate"`}},
		{"unknown validator in the target", func(s *ThresholdSpec) { s.Target = "missed_precommits_rate(hsm) <= 0.05" },
			[]string{`no validator named "hsm"`, "validators: v-1, v-2, v-3, slow"}},
		{"validator only at one end", func(s *ThresholdSpec) {
			s.Key, s.Range, s.Target = "validators[v].count", "1..5", "missed_precommits(v-3) <= 1"
		}, []string{"at validators[v].count=1", `no validator named "v-3"`}},
		{"target syntax", func(s *ThresholdSpec) { s.Target = "missed_precommits(slow) < 1" }, []string{"only <= and >="}},
		{"everything at once", func(s *ThresholdSpec) { s.Direction, s.Repeat, s.Target = "up", 0, "halts" },
			[]string{`--direction "up": want largest or smallest`, "--repeat 0: want at least 1", `--target "halts": no comparison`}},
		{"unknown scenario", func(s *ThresholdSpec) { s.Scenario = "no-such-scenario" }, []string{"neither a scenario file nor a builtin"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := slow4Spec()
			tc.edit(&sp)
			_, err := sp.Prepare(context.Background(), noRuns{t}, io.Discard)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// The target's problem is said once, with the flag: no "metric REF:" again.
func TestPrepareTargetMessage(t *testing.T) {
	sp := slow4Spec()
	sp.Target = "missed_rate(slow) <= 1"
	_, err := sp.Prepare(context.Background(), noRuns{t}, io.Discard)
	want := `--target "missed_rate(slow) <= 1" at validators[slow].signer.latency=0s: unknown metric "missed_rate"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Prepare: %v, want %q", err, want)
	}
}

// The default directory is the same for the same command (it resumes)
// and another for another seed or backend.
func TestDefaultThresholdDir(t *testing.T) {
	key := "validators[slow].signer.latency"
	a := DefaultThresholdDir("slow4", key, "inprocess", 1)
	if a != DefaultThresholdDir("slow4", key, "inprocess", 1) {
		t.Error("the same search has two default dirs")
	}
	for _, other := range []string{DefaultThresholdDir("slow4", key, "inprocess", 2), DefaultThresholdDir("slow4", key, "process", 1)} {
		if other == a {
			t.Errorf("another seed or backend shares the default dir %s", a)
		}
	}
	seed := int64(2)
	sp := slow4Spec()
	th1, err := sp.Prepare(context.Background(), noRuns{t}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	sp.Seed = &seed
	th2, err := sp.Prepare(context.Background(), noRuns{t}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if th1.OutDir == th2.OutDir {
		t.Errorf("--seed 2 goes to the default dir of the scenario's seed: %s", th1.OutDir)
	}
}
