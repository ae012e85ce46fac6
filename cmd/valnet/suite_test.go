package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// simScenario is a sim run: a real run of the MODEL, in virtual time.
const simScenario = `name: %s
run: {backend: sim, heights: 4}
validators:
  - {name: v, count: 4}
expect:
  - {metric: heights_committed, %s}
`

func simFile(t *testing.T, dir, name, bound string) string {
	t.Helper()
	p := filepath.Join(dir, name+".yaml")
	text := strings.Replace(strings.Replace(simScenario, "%s", name, 1), "%s", bound, 1)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSuiteCommand: valnet run with several scenarios exits with the
// worst run's code, fills the step summary, and refuses a suite with a bad
// file before anything runs, naming every problem.
func TestSuiteCommand(t *testing.T) {
	work := t.TempDir()
	pass := simFile(t, work, "pass", "min: 4")
	fail := simFile(t, work, "fail", "max: 1")
	dir := filepath.Join(work, "dir")
	os.Mkdir(dir, 0o755)
	simFile(t, dir, "in-dir", "min: 4")
	bad := filepath.Join(work, "bad.yaml")
	os.WriteFile(bad, []byte("name: bad\nrun: {heigths: 3}\nvalidators:\n  - {name: v}\n"), 0o644)
	summary := filepath.Join(work, "step-summary.md")
	os.WriteFile(summary, []byte("earlier step\n"), 0o644)
	t.Setenv(stepSummaryEnv, summary)

	tests := []struct {
		name      string
		args      []string
		code      int
		stdoutHas []string
		stderrHas []string
	}{
		{"docs/ci.md's example", []string{"../../docs/examples/ci/"}, 0, []string{"0    ci-partition", "0    ci-signer-budget"}, nil},
		{"all pass", []string{pass, dir}, 0, []string{"0    pass", "0    in-dir", "suite.json, junit.xml, suite.md"}, nil},
		{"worst is a failure", []string{pass, fail, "baseline", "--backend", "sim"}, 1, []string{"1    fail", "0    baseline"}, nil},
		{"a bad file stops all", []string{pass, bad, "no-such-builtin"}, 2, nil,
			[]string{"2 of the suite's scenarios cannot run (nothing ran)", bad + ":2:", "run.heigths", "no-such-builtin"}},
		{"--keep is one scenario's", []string{pass, fail, "--keep"}, 2, nil, []string{"--keep and --metrics take one scenario"}},
		{"--parallel 0", []string{pass, fail, "--parallel", "0"}, 2, nil, []string{"--parallel 0"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(work, "suite", string(rune('a'+i)))
			code, stdout, stderr := runCLI(t, append([]string{"run", "--out", out}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			for _, s := range tc.stdoutHas {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, s := range tc.stderrHas {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			if tc.code == 2 {
				if _, err := os.Stat(out); err == nil {
					t.Errorf("a refused suite made its directory %s", out)
				}
			}
		})
	}
	data, _ := os.ReadFile(summary)
	s := string(data)
	if !strings.HasPrefix(s, "earlier step\n") || strings.Count(s, "valnet suite:") != 3 || !strings.Contains(s, "❌ valnet suite: 3 scenarios, 2 passed, 1 failed") {
		t.Errorf("step summary: appended three times (three suites ran)? got:\n%s", s)
	}
}

// TestValidateDirectory: valnet validate checks a directory's scenarios,
// as a suite would run them.
func TestValidateDirectory(t *testing.T) {
	code, stdout, stderr := runCLI(t, "validate", "../../docs/examples/ci/")
	if code != 0 || strings.Count(stdout, ": ok (") != 2 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	empty := t.TempDir()
	if code, _, stderr := runCLI(t, "validate", empty); code != 2 || !strings.Contains(stderr, "no scenario files") {
		t.Fatalf("empty dir: exit %d: %s", code, stderr)
	}
}
