package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/runner"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func write(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A one-validator network commits a block every few hundred ms at these
// timeouts: the quickest real run there is.
const tinyScenario = `
name: tiny
chain:
  timeouts: {propose: 300ms, prevote: 100ms, precommit: 100ms, commit: 100ms}
run: {heights: 3, max_duration: 2m}
validators:
  - name: solo
expect:
  - {metric: heights_committed, min: %s}
`

func TestExitCodes(t *testing.T) {
	good := write(t, "good.yaml", strings.Replace(tinyScenario, "%s", "3", 1))
	failing := write(t, "failing.yaml", strings.Replace(tinyScenario, "%s", "1000", 1))
	bad := write(t, "bad.yaml", "name: Bad Name\nvalidators: []\nrun: {heights: 0, hieghts: 3}\n")
	tests := []struct {
		name       string
		args       []string
		code       int
		stdoutHas  []string
		stderrLike string
	}{
		{"validate good", []string{"validate", good}, 0, []string{"ok (tiny: 1 validators"}, ""},
		{"validate bad reports every error with position", []string{"validate", bad}, 2, nil,
			`(?s)bad.yaml:1:7: name: .*bad.yaml:2:13: validators: .*bad.yaml:3:16: run.heights: .*bad.yaml:3:19: run.hieghts: unknown key`},
		{"validate builtin", []string{"validate", "quickstart"}, 0, []string{"quickstart: ok"}, ""},
		{"validate unknown", []string{"validate", "no-such-scenario"}, 2, nil, "neither a scenario file nor a builtin"},
		{"run bad input", []string{"run", bad, "--out", filepath.Join(t.TempDir(), "x")}, 2, nil, "run.hieghts"},
		{"run passing", []string{"run", good, "--out", filepath.Join(t.TempDir(), "r"), "--quiet"}, 0, []string{"RESULT: PASS"}, ""},
		{"run failing expectation", []string{"run", failing, "--out", filepath.Join(t.TempDir(), "r")}, 1,
			[]string{"FAIL  heights_committed", "RESULT: FAIL (1 expectation(s) failed)", "solo"}, ""},
		{"unknown flag", []string{"run", good, "--nope"}, 2, nil, "unknown flag"},
		{"list", []string{"list"}, 0, []string{"quickstart", "baseline", "slow-signer", "signer-restart"}, ""},
		{"profiles", []string{"profiles"}, 0, []string{"yubihsm2", "ledger-nano-s-plus", "MODEL"}, ""},
		{"profiles verbose", []string{"profiles", "-v"}, 0, []string{"source:      seeds/000"}, ""},
		{"version", []string{"version"}, 0, []string{"valnet ", "CometBFT v1.0"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			for _, s := range tc.stdoutHas {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			if tc.stderrLike != "" && !regexp.MustCompile(tc.stderrLike).MatchString(stderr) {
				t.Errorf("stderr does not match %q:\n%s", tc.stderrLike, stderr)
			}
		})
	}
}

func TestQuietPrintsOnlyTheResult(t *testing.T) {
	good := write(t, "good.yaml", strings.Replace(tinyScenario, "%s", "3", 1))
	code, stdout, stderr := runCLI(t, "run", good, "--quiet", "--out", filepath.Join(t.TempDir(), "r"))
	if code != 0 || strings.TrimSpace(stdout) != "RESULT: PASS" || stderr != "" {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
}

func TestInitWritesAValidStarterAndKeepsExistingFiles(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.yaml")
	if code, _, stderr := runCLI(t, "init", p); code != 0 {
		t.Fatalf("init: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "validate", p); code != 0 {
		t.Fatalf("starter does not validate: %s", stderr)
	}
	if code, _, stderr := runCLI(t, "init", p); code != 2 || !strings.Contains(stderr, "--force") {
		t.Fatalf("init over an existing file: exit %d: %s", code, stderr)
	}
	if code, _, _ := runCLI(t, "init", p, "--force"); code != 0 {
		t.Fatal("init --force failed")
	}
}

func TestReportRebuildsARun(t *testing.T) {
	good := write(t, "good.yaml", strings.Replace(tinyScenario, "%s", "3", 1))
	dir := filepath.Join(t.TempDir(), "r")
	if code, _, stderr := runCLI(t, "run", good, "--quiet", "--out", dir); code != 0 {
		t.Fatalf("run: %s", stderr)
	}
	if err := os.Remove(filepath.Join(dir, "summary.json")); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "report", dir)
	if code != 0 || !strings.Contains(stdout, "RESULT: PASS") {
		t.Fatalf("report: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err != nil {
		t.Fatal(err)
	}
}

// --backend replaces run.backend before the scenario is checked: one file
// runs on any backend, and a backend that does not exist is bad input.
func TestRunBackendOverride(t *testing.T) {
	onDocker := write(t, "docker.yaml", strings.Replace(strings.Replace(tinyScenario, "%s", "3", 1),
		"run: {heights: 3,", "run: {backend: docker, heights: 3,", 1))
	tests := []struct {
		name       string
		args       []string
		code       int
		stdoutHas  string
		stderrLike string
	}{
		{"a docker scenario runs in-process", []string{"run", onDocker, "--backend", "inprocess", "--quiet", "--out", filepath.Join(t.TempDir(), "r")}, 0, "RESULT: PASS", ""},
		// The flag is to blame, not the scenario's line.
		{"unknown backend", []string{"run", onDocker, "--backend", "kubernetes"}, 2, "", `^valnet: --backend kubernetes: unknown backend \(one of inprocess, process, docker, sim\)\n$`},
		{"a near miss", []string{"run", "quickstart", "--backend", "simm"}, 2, "", `^valnet: --backend simm: unknown backend; did you mean "sim"\? \(one of inprocess, process, docker, sim\)\n$`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			if !strings.Contains(stdout, tt.stdoutHas) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdoutHas, stdout)
			}
			if tt.stderrLike != "" && !regexp.MustCompile(tt.stderrLike).MatchString(stderr) {
				t.Errorf("stderr does not match %q:\n%s", tt.stderrLike, stderr)
			}
		})
	}
}

// What the scenario cannot say (an unset passphrase variable) is a
// warning for validate and bad input for run, which then creates no run
// directory.
func TestPreflightWarnsAndRefuses(t *testing.T) {
	file := write(t, "kms.yaml", `
name: kms
validators:
  - name: kms
    signer: {type: keyfile, passphrase_env: VALNET_TEST_UNSET_PASSPHRASE}
`)
	code, stdout, stderr := runCLI(t, "validate", file)
	if code != 0 || !strings.Contains(stdout, "ok (kms") ||
		!strings.Contains(stderr, "warning: validators[kms].signer.passphrase_env: passphrase_env VALNET_TEST_UNSET_PASSPHRASE is not set") {
		t.Fatalf("validate: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	out := filepath.Join(t.TempDir(), "run")
	code, _, stderr = runCLI(t, "run", file, "--out", out)
	if code != 2 || !strings.Contains(stderr, "the run cannot start") || !strings.Contains(stderr, "VALNET_TEST_UNSET_PASSPHRASE is not set") {
		t.Fatalf("run: exit %d, stderr: %s", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("run left %s: %v", out, err)
	}
}

// A run directory whose events.jsonl holds no run is nothing to report:
// the report says so, exits 2 and writes no summary of a run that never was.
func TestReportOfNothing(t *testing.T) {
	for _, content := range []string{"", "\n"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runCLI(t, "report", dir)
		if code != 2 || !strings.Contains(stderr, "nothing to report") || strings.Contains(stdout, "Run -") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "summary.json")); !os.IsNotExist(err) {
			t.Fatalf("summary.json written for nothing: %v", err)
		}
	}
}

func TestScenarioArguments(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		stdin      string
		code       int
		stdoutHas  string
		stderrLike string
	}{
		{"validate reads standard input", []string{"validate", "-"}, "name: piped\nvalidators: [{name: a}]\n", 0, "-: ok (piped: 1 validators", ""},
		{"errors from standard input name it", []string{"validate", "-"}, "name: piped\nvalidators: [{name: a}]\nrun: {hieghts: 3}\n", 2, "", `<stdin>:3:7: run.hieghts: unknown key; did you mean "heights"\?`},
		{"a directory without scenarios", []string{"validate", t.TempDir()}, "", 2, "", `no scenario files \(\*\.yaml, \*\.yml\) in it`},
		{"a misspelt builtin", []string{"run", "basline"}, "", 2, "", `"basline" is neither a scenario file nor a builtin scenario; did you mean "baseline"\?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			go func() { w.WriteString(tt.stdin); w.Close() }()
			old := os.Stdin
			os.Stdin = r
			defer func() { os.Stdin = old; r.Close() }()
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != tt.code || !strings.Contains(stdout, tt.stdoutHas) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			if tt.stderrLike != "" && !regexp.MustCompile(tt.stderrLike).MatchString(stderr) {
				t.Errorf("stderr does not match %q:\n%s", tt.stderrLike, stderr)
			}
		})
	}
}

// TestBadInputThroughTheCLI runs valnet validate on a sample of the
// scenarios package's bad-input corpus (scenarios/testdata/*.bad.yaml,
// whose exact messages TestBadScenarios checks): each exits 2, and every
// line it prints names the file with a line and a column.
func TestBadInputThroughTheCLI(t *testing.T) {
	big := filepath.Join(t.TempDir(), "ten-megabytes.yaml")
	if err := os.WriteFile(big, []byte("name: big\nvalidators:\n  - name: a\ndescription: "+strings.Repeat("x", 10<<20)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file string
		has  string // a part of the message
	}{
		{"empty", "the file is empty"},
		{"binary", "control characters are not allowed"},
		{"directory", "is a directory"},
		{"syntax", "YAML syntax error"},
		{"syntax-tab", "tabs are not allowed"},
		{"syntax-unclosed-mapping", "did not find expected ',' or '}'"},
		{"duplicate-key", "duplicate key (first at line 4)"},
		{"duplicate-key-flow", "duplicate key"},
		{"duration-1000h", "must be at most 24h0m0s on a real backend"},
		{"duration-1000h-timeout", "is not shorter than the whole run"},
		{"alias-unknown", "unknown anchor 'fast' referenced"},
		{"billion-laughs", "YAML aliases here expand to more than 100000 values"},
		{"billion-laughs-classic", "unknown key"},
		{"merge-key", "merge keys are not supported"},
		{"two-documents", "holds one YAML document"},
		{"many-errors", "duplicate validator name"},
		{"", "the file is larger than 2 MiB"}, // big
	}
	for _, tt := range tests {
		file := big
		if tt.file != "" {
			file = filepath.Join("..", "..", "scenarios", "testdata", tt.file+".bad.yaml")
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			start := time.Now()
			code, stdout, stderr := runCLI(t, "validate", file)
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("took %v", took)
			}
			if code != 2 || stdout != "" {
				t.Fatalf("exit %d (want 2)\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			if !strings.Contains(stderr, tt.has) {
				t.Errorf("stderr lacks %q:\n%s", tt.has, stderr)
			}
			at := regexp.MustCompile(`^` + regexp.QuoteMeta(file) + `:[1-9][0-9]*:[1-9][0-9]*: \S`)
			for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
				if !at.MatchString(line) {
					t.Errorf("a line without file:line:col: %q", line)
				}
			}
		})
	}
}

// A run directory that holds a run is refused before anything is
// announced, and the earlier run is untouched; a sim run leaves no
// empty nodes/ among its results.
func TestRunRefusedDirNotAnnouncedAndSimHasNoNodesDir(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r")
	if code, _, stderr := runCLI(t, "run", "baseline", "--backend", "sim", "--quiet", "--out", out); code != 0 {
		t.Fatalf("sim run: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, runner.NodesDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a sim run made %s/ (%v): it has no nodes", runner.NodesDir, err)
	}
	before, err := os.ReadFile(filepath.Join(out, runner.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "run", "baseline", "--backend", "sim", "--out", out)
	if code != exitBadInput || !strings.Contains(stderr, "already holds a run") || strings.Contains(stderr, "running") || stdout != "" {
		t.Errorf("exit %d, want 2, the refusal and no announcement:\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(out, runner.EventsFile)); !bytes.Equal(before, after) {
		t.Error("the earlier run's events.jsonl changed")
	}
}
