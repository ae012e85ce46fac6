package sweep

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/scenarios"
)

// FuzzSetFlags drives two --set arguments of valnet sweep through what
// the command does with them before anything runs: scenarios.ParseSetFlag
// (path grammar, value splitting), then Prepare (every point's scenario
// resolved with its settings, the metrics checked). No panic, no hang, and
// every problem names where it is: a flag (--set PATH=VALUE) or a
// file:line:col in the scenario.
func FuzzSetFlags(f *testing.F) {
	for _, s := range [][2]string{
		{"validators[hsm].signer.latency=50ms,200ms", "chain.timeouts.commit=500ms,1s"},
		{"validators[v].signer.latency={dist: uniform, min: 1ms, max: 5ms},50ms", "run.heights=3"},
		{"validators[v].count=1,2", "network.latency=0,20ms"},
		{"profiles[fast].latency=1ms", "validators[hsm].signer.profile=fast"},
		{"validators[hsm]={name: hsm, power: 3}", "run.seed=1,2"},
		{"validators[nobody].count=3", "run.heights=-1"},
		{"run.heights=[1,2", "x"},
		{"validators[hsm].signer={type: &a keyfile, path: *a}", "faults=[{action: signer-drop, target: hsm, at: {height: 2}}]"},
		{"network.zones={us: [hsm], eu: [v]}", "network.topology=ring"},
		{"run.backend=sim", "run.max_duration=1000h"},
		{"chain.timeouts=", "=,"},
	} {
		f.Add(s[0], s[1])
	}
	src := filepath.Join(f.TempDir(), "sweep-fuzz.yaml")
	writeFile(f, src, testScenario)
	fromFile := regexp.MustCompile(regexp.QuoteMeta(src) + `:\d+:\d+: `)
	f.Fuzz(func(t *testing.T, set1, set2 string) {
		cfg := Config{Source: src, Repeat: 1}
		points := 1
		for _, arg := range []string{set1, set2} {
			path, values, err := scenarios.ParseSetFlag(arg)
			if err != nil {
				if !strings.HasPrefix(err.Error(), "--set ") {
					t.Fatalf("ParseSetFlag(%q): the error does not name the flag: %v", arg, err)
				}
				return
			}
			if len(values) == 0 {
				t.Fatalf("ParseSetFlag(%q) gave no values", arg)
			}
			points *= len(values)
			cfg.Axes = append(cfg.Axes, Axis{Path: path, Values: values})
		}
		if points > 64 {
			return // a big grid is many resolves of the same checks
		}
		var (
			s   *Sweep
			err error
		)
		done := make(chan struct{})
		go func() {
			defer close(done)
			s, err = Prepare(cfg)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("Prepare(%q, %q) did not return within 20s", set1, set2)
		}
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.Contains(line, "--set ") && !strings.HasPrefix(line, "--metric ") && !fromFile.MatchString(line) {
					t.Errorf("a problem that names neither a flag nor a file position: %q", line)
				}
			}
			return
		}
		if len(s.Points) != points {
			t.Fatalf("%d points, want %d", len(s.Points), points)
		}
		for _, p := range s.Points {
			if p.Plan == nil || len(p.Plan.Validators) == 0 {
				t.Fatalf("point %s has no plan", p.Name)
			}
		}
	})
}
