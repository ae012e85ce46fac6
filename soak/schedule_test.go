package soak

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/internal/action"
	"github.com/valnet/valnet/scenarios"
)

func sevenRemote() GenConfig {
	vals := []string{"v-1", "v-2", "v-3", "v-4", "v-5", "v-6", "v-7"}
	return GenConfig{Seed: 1, Start: 15 * time.Second, End: 135 * time.Second, Validators: vals, Remote: vals}
}

func TestGenerateIsAFunctionOfItsConfig(t *testing.T) {
	cfg := sevenRemote()
	a, b := Generate(cfg), Generate(cfg)
	if len(a) == 0 || !reflect.DeepEqual(a, b) {
		t.Fatalf("same config, different schedules:\n%s\n%s", ScheduleYAML(a), ScheduleYAML(b))
	}
	cfg.Seed = 2
	if c := Generate(cfg); reflect.DeepEqual(a, c) {
		t.Fatalf("seeds 1 and 2 gave the same schedule:\n%s", ScheduleYAML(a))
	}
}

func TestGenerateCoversEveryAvailableFamilyAndKeepsItsRules(t *testing.T) {
	for _, c := range []struct {
		name    string
		cfg     GenConfig
		missing []Family
	}{
		{"inprocess, remote signers", sevenRemote(), []Family{action.CosignerDown, action.CosignerSlow, action.NodePause}},
		{"process, threshold signers", func() GenConfig {
			g := sevenRemote()
			g.Pause, g.Cosigners = true, map[string]int{"v-2": 3, "v-5": 5}
			return g
		}(), nil},
		{"direct signers", func() GenConfig { g := sevenRemote(); g.Remote = nil; return g }(),
			[]Family{action.SignerOutage, action.SignerRestart, action.CosignerDown, action.CosignerSlow, action.NodePause}},
	} {
		for seed := int64(1); seed <= 50; seed++ {
			c.cfg.Seed = seed
			fs := Generate(c.cfg)
			seen := map[Family]bool{}
			for i, f := range fs {
				seen[f.Action] = true
				if f.start < c.cfg.Start || f.start+f.dur > c.cfg.End {
					t.Errorf("%s seed %d: %s outside [%v, %v]", c.name, seed, f.YAML(), c.cfg.Start, c.cfg.End)
				}
				for _, g := range fs[:i] {
					overlap := g.start+g.dur > f.start
					if overlap && f.Target != "" && f.Target == g.Target {
						t.Errorf("%s seed %d: %s overlaps %s on the same validator", c.name, seed, f.YAML(), g.YAML())
					}
					if overlap && isNetwork(f.Action) && isNetwork(g.Action) {
						t.Errorf("%s seed %d: network faults overlap: %s, %s", c.name, seed, f.YAML(), g.YAML())
					}
				}
				if (f.Action == action.SignerOutage || f.Action == action.SignerRestart) && !slices.Contains(c.cfg.Remote, f.Target) {
					t.Errorf("%s seed %d: %s on a direct signer", c.name, seed, f.YAML())
				}
				if f.Action == action.CosignerDown || f.Action == action.CosignerSlow {
					v, k, ok := scenarios.ParseCosignerEndpoint(f.Target)
					if n := c.cfg.Cosigners[v]; !ok || k < 1 || k > n {
						t.Errorf("%s seed %d: %s is not a cosigner of a threshold signer", c.name, seed, f.YAML())
					}
				}
			}
			for _, fam := range Families {
				want := !slices.Contains(c.missing, fam)
				if seen[fam] != want {
					t.Errorf("%s seed %d: family %s drawn %v, want %v:\n%s", c.name, seed, fam, seen[fam], want, ScheduleYAML(fs))
				}
			}
		}
	}
}

func isNetwork(a string) bool {
	return a == action.Partition || a == action.Isolate || a == action.NetworkLatency
}

// Every drawn schedule goes through the scenario decoder and validation,
// as a scenario's own faults; the YAML printed for a failure is a
// scenario's faults: section that decodes to the same plan.
func TestPreparedSchedulesValidate(t *testing.T) {
	src, err := scenarios.ReadSource("baseline")
	if err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{"inprocess", "process", "docker"} {
		for seed := int64(1); seed <= 20; seed++ {
			p, err := Prepare(Config{Source: src, Backend: backend, Seed: seed, Duration: 3 * time.Minute, Validators: DefaultValidators})
			if err != nil {
				t.Fatalf("%s seed %d: %v", backend, seed, err)
			}
			if len(p.Plan.Faults) != len(p.Schedule) || len(p.Plan.Validators) != DefaultValidators {
				t.Fatalf("%s seed %d: plan has %d faults and %d validators; schedule %d", backend, seed, len(p.Plan.Faults), len(p.Plan.Validators), len(p.Schedule))
			}
			if seed == 1 {
				pasted := "name: pasted\nrun: {heights: 1000000000, max_duration: 3m, backend: " + backend + "}\n" +
					"validators:\n  - {name: v, count: 7, signer: {type: local, via: unix}}\n" + ScheduleYAML(p.Schedule)
				plan, err := scenarios.Parse("pasted.yaml", []byte(pasted))
				if err != nil {
					t.Fatalf("the printed schedule does not parse as a scenario: %v\n%s", err, pasted)
				}
				if !reflect.DeepEqual(stripPos(plan.Faults), stripPos(p.Plan.Faults)) {
					t.Fatalf("the printed schedule is another schedule:\n%s", pasted)
				}
			}
		}
	}
}

// A scenario with threshold signers gets cosigner faults, on its
// threshold validators' cosigners, and they validate as its own would.
func TestPreparedCosignerFaultsValidate(t *testing.T) {
	src, err := scenarios.ReadSource("testdata/threshold.yaml")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for seed := int64(1); seed <= 10; seed++ {
		p, err := Prepare(Config{Source: src, Seed: seed, Duration: 10 * time.Minute})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, f := range p.Plan.Faults {
			if f.Action == action.CosignerDown || f.Action == action.CosignerSlow {
				seen[f.Action] = true
				if !strings.HasPrefix(f.Target, "th.cosigner-") && !strings.HasPrefix(f.Target, "th5.cosigner-") {
					t.Errorf("seed %d: %s on %s", seed, f.Action, f.Target)
				}
			}
		}
	}
	if !seen[action.CosignerDown] || !seen[action.CosignerSlow] {
		t.Errorf("cosigner families drawn: %v, want both", seen)
	}
}

func stripPos(fs []scenarios.FaultPlan) []scenarios.FaultPlan {
	out := slices.Clone(fs)
	for i := range out {
		out[i].Pos = scenarios.Pos{}
	}
	return out
}

func TestPrepareRefusesBadInput(t *testing.T) {
	src, err := scenarios.ReadSource("baseline")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Duration: 0}, "--duration 0s: must be greater than 0"},
		{Config{Duration: 100 * time.Second}, "leaves no time for faults"},
		{Config{Duration: 10 * time.Minute, Quiet: 30 * time.Second}, "--resume-within 1m0s does not fit in the fault-free tail (--tail 30s)"},
		{Config{Duration: 10 * time.Minute, Validators: -1}, "--validators -1"},
		{Config{Duration: 10 * time.Minute, Backend: "sim"}, "sim backend"},
	} {
		c.cfg.Source = src
		_, err := Prepare(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v; want %q", c.cfg, err, c.want)
		}
	}
}
