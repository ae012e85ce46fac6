package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// actionYAML is the part of action.yml the tests read.
type actionYAML struct {
	Inputs  map[string]struct{ Default *string } `yaml:"inputs"`
	Outputs map[string]struct{ Value string }    `yaml:"outputs"`
	Runs    struct {
		Using string `yaml:"using"`
		Steps []struct {
			ID  string            `yaml:"id"`
			Env map[string]string `yaml:"env"`
			Run string            `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"runs"`
}

func readAction(t *testing.T) actionYAML {
	t.Helper()
	data, err := os.ReadFile("../../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var a actionYAML
	if err := yaml.Unmarshal(data, &a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	return a
}

// TestActionInputsReachTheScript: every input of action.yml is handed to
// action/run.sh (as VALNET_*) or to setup-go, and docs/ci.md names each
// input and output.
func TestActionInputsReachTheScript(t *testing.T) {
	a := readAction(t)
	if a.Runs.Using != "composite" {
		t.Fatalf("runs.using %q, want composite", a.Runs.Using)
	}
	var env map[string]string
	for _, s := range a.Runs.Steps {
		if s.ID == "run" {
			env = s.Env
			if !strings.Contains(s.Run, "action/run.sh") {
				t.Errorf("the run step runs %q, not action/run.sh", s.Run)
			}
		}
	}
	script, _ := os.ReadFile("../../action/run.sh")
	docs, _ := os.ReadFile("../../docs/ci.md")
	for name := range a.Inputs {
		if name == "setup-go" {
			continue // the setup-go step's condition
		}
		v := "VALNET_" + strings.ToUpper(name)
		if env[v] != "${{ inputs."+name+" }}" {
			t.Errorf("input %s: env %s = %q", name, v, env[v])
		}
		if !strings.Contains(string(script), v) {
			t.Errorf("input %s: action/run.sh does not read %s", name, v)
		}
	}
	for name := range a.Inputs {
		if !strings.Contains(string(docs), "`"+name+"`") {
			t.Errorf("docs/ci.md does not name input %s", name)
		}
	}
	for name := range a.Outputs {
		if !strings.Contains(string(docs), "`"+name+"`") {
			t.Errorf("docs/ci.md does not name output %s", name)
		}
		if !strings.Contains(string(script), name+"=") {
			t.Errorf("action/run.sh does not write output %s", name)
		}
	}
}

// TestActionScript runs action/run.sh in a shell as GitHub would: it
// builds valnet from this checkout (version "action"), runs the suite, and
// writes GITHUB_OUTPUT and GITHUB_STEP_SUMMARY; a bad scenario exits 2 and
// says why in the summary.
func TestActionScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds valnet")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("name: bad\nrun: {heigths: 3}\nvalidators:\n  - {name: v}\n"), 0o644)
	tests := []struct {
		name       string
		scenarios  string
		args       string
		code       int
		outputs    []string
		summaryHas []string
	}{
		{"a suite", "docs/examples/ci/\nbaseline", "--backend sim", 0,
			[]string{"exit-code=0", "suite-dir=runs/s", "junit=runs/s/junit.xml"},
			[]string{"✅ valnet suite: 3 scenarios, 3 passed", "`baseline` | sim (MODEL)"}},
		{"one scenario is a suite too", "baseline", "--backend sim --seed 3", 0,
			[]string{"exit-code=0", "junit=runs/s/junit.xml"}, []string{"✅ valnet suite: 1 scenarios"}},
		{"a bad file", bad + " baseline", "", 2, []string{"exit-code=2", "suite-dir=runs/s"},
			[]string{"⚠️ valnet could not run (exit 2)", "run.heigths: unknown key"}},
		{"no scenarios", " \n", "", 2, []string{"exit-code=2"}, []string{"input scenarios is empty"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			output, summary := filepath.Join(work, "output"), filepath.Join(work, "summary.md")
			cmd := exec.Command("bash", filepath.Join(root, "action", "run.sh"))
			cmd.Dir = work
			// Paths in the scenarios input are the workspace's: run from the
			// checkout's copy of docs/examples.
			os.MkdirAll(filepath.Join(work, "docs", "examples"), 0o755)
			if err := os.Symlink(filepath.Join(root, "docs", "examples", "ci"), filepath.Join(work, "docs", "examples", "ci")); err != nil {
				t.Fatal(err)
			}
			cmd.Env = append(os.Environ(), "VALNET_SCENARIOS="+tc.scenarios, "VALNET_VERSION=action", "VALNET_ARGS="+tc.args,
				"VALNET_OUT=runs/s", "VALNET_ACTION_PATH="+root, "GITHUB_OUTPUT="+output, "GITHUB_STEP_SUMMARY="+summary, "RUNNER_TEMP="+work)
			combined, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tc.code, combined)
			}
			out, _ := os.ReadFile(output)
			for _, want := range tc.outputs {
				if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(want) + `$`).Match(out) {
					t.Errorf("GITHUB_OUTPUT lacks %q:\n%s", want, out)
				}
			}
			sum, _ := os.ReadFile(summary)
			for _, want := range tc.summaryHas {
				if !strings.Contains(string(sum), want) {
					t.Errorf("step summary lacks %q:\n%s", want, sum)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(work, "valnet-bin.*")); len(left) > 0 {
				t.Errorf("the script left %v", left)
			}
		})
	}
}
