package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valnet/valnet/sweep"
)

// Four validators at short timeouts, three heights: a few seconds a run.
const slowFour = `
name: slow-four
chain:
  timeouts: {propose: 300ms, propose_delta: 100ms, prevote: 100ms, prevote_delta: 50ms, precommit: 100ms, precommit_delta: 50ms, commit: 100ms}
run: {heights: 3, max_duration: 2m}
validators:
  - {name: v, count: 3}
  - {name: slow, signer: {latency: 0s}}
`

func TestThresholdBadInput(t *testing.T) {
	scenario := write(t, "slow.yaml", slowFour)
	ok := []string{"threshold", scenario, "--vary", "validators[slow].signer.latency", "--range", "0..1s", "--target", "missed_precommits_rate(slow) <= 0.05"}
	with := func(flag, value string) []string {
		args := append([]string{}, ok...)
		for i := range args {
			if args[i] == flag {
				args[i+1] = value
				return args
			}
		}
		return append(args, flag, value)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown path", with("--vary", "validators[slow].signer.latncy"), `--vary validators[slow].signer.latncy: unknown key "latncy"`},
		{"value of the wrong type", with("--range", "1..5"), `--range "1..5": low end: "1" is not a duration`},
		{"empty range", with("--range", "1s..1s"), "is empty"},
		{"reversed range", with("--range", "2s..1s"), "is reversed"},
		{"unknown metric", with("--target", "missed_rate(slow) <= 1"), `unknown metric "missed_rate"`},
		{"unknown validator", with("--target", "missed_precommits_rate(hsm) <= 1"), `no validator named "hsm"`},
		{"resolution", with("--resolution", "-5ms"), "must be greater than zero"},
		{"no target", append([]string{}, ok[:6]...), `required flag(s) "target" not set`},
	} {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "th")
			code, stdout, stderr := runCLI(t, append(tc.args, "--out", out)...)
			if code != exitBadInput || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q (stdout:\n%s)", code, stderr, tc.want, stdout)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("bad input made the out dir (%v)", err)
			}
		})
	}
	// Every problem of the command line at once, as validate does: a bad
	// range or resolution does not hide the target's typo.
	typo := func(args []string) []string {
		return replaceArg(args, "--target", "missed_precommits_rate(slw) <= 0.1")
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"reversed range and a typo", typo(with("--range", "500ms..0")), []string{"is reversed", `no validator named "slw"`}},
		{"bad resolution and a typo", typo(with("--resolution", "7")), []string{`--resolution "7"`, `no validator named "slw"`}},
		{"bad key and a typo", typo(with("--vary", "validators[slow].count")), []string{`no validator named "slw"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, append(tc.args, "--out", filepath.Join(t.TempDir(), "th"))...)
			for _, w := range tc.want {
				if code != exitBadInput || !strings.Contains(stderr, w) {
					t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr, w)
				}
			}
		})
	}
}

func replaceArg(args []string, flag, value string) []string {
	out := append([]string{}, args...)
	for i := range out {
		if out[i] == flag {
			out[i+1] = value
		}
	}
	return out
}

// A real search of three probes; the same command again reuses them all.
func TestThresholdRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts networks")
	}
	scenario := write(t, "slow.yaml", slowFour)
	out := filepath.Join(t.TempDir(), "th")
	args := []string{"threshold", scenario, "--vary", "validators[slow].signer.latency", "--range", "0..1s",
		"--resolution", "500ms", "--target", "sign_latency_p50_ms(slow) <= 400", "--out", out, "--quiet"}
	code, stdout, stderr := runCLI(t, args...)
	want := "validators[slow].signer.latency: holds up to 0s, fails from 500ms (resolution 500ms, 1 run per probe, 3 probes)"
	if code != exitOK || !strings.Contains(stdout, want) {
		t.Fatalf("exit %d, want 0 and %q\nstdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
	}
	rep, err := sweep.ReadThreshold(out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != sweep.Found || *rep.HoldsUpTo != "0s" || *rep.FailsFrom != "500ms" || len(rep.Probes) != 3 {
		t.Fatalf("threshold.json: %+v", rep)
	}
	for _, p := range rep.Probes {
		if _, err := os.Stat(filepath.Join(out, p.Runs[0].Dir, "summary.json")); err != nil {
			t.Errorf("probe %s: no run directory: %v", p.Value, err)
		}
	}

	code, stdout, stderr = runCLI(t, args...)
	if code != exitOK || strings.Count(stdout, "[1 of 1 runs reused") != 3 || !strings.Contains(stdout, want) {
		t.Errorf("rerun: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	// Another seed is another search: refused, nothing overwritten.
	code, _, stderr = runCLI(t, append(args, "--seed", "9")...)
	if code != exitBadInput || !strings.Contains(stderr, "holds another threshold search (seed 1, now 9)") || strings.Contains(stderr, "resumes") {
		t.Errorf("another seed: exit %d\nstderr:\n%s", code, stderr)
	}
}

// A refused --out is refused before the search is announced.
func TestThresholdRefusedDirNotAnnounced(t *testing.T) {
	scenario := write(t, "slow.yaml", slowFour)
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "stray"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "threshold", scenario, "--vary", "validators[slow].signer.latency", "--range", "0..1s",
		"--target", "missed_precommits_rate(slow) <= 0.05", "--out", out)
	if code != exitBadInput || !strings.Contains(stderr, "is not empty") || strings.Contains(stderr, "threshold of") {
		t.Errorf("exit %d, want 2, the refusal and no announcement:\n%s", code, stderr)
	}
}

// The --seed help says the seeds sweep.RepeatSeed gives.
func TestThresholdSeedHelp(t *testing.T) {
	usage := newThresholdCmd().Flags().Lookup("seed").Usage
	if !strings.Contains(usage, "S + r - 1") || sweep.RepeatSeed(7, 3) != 7+3-1 {
		t.Errorf("--seed help %q does not say S + r - 1", usage)
	}
}
