package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valnet/valnet/scenarios"
)

// TestSignerServeConfigSpeaksTheScenarioDecoder: --config goes through the
// scenario decoder, so a value it refuses in a scenario (a quoted "5" for
// an integer) is refused with the same message, and a misspelt key gets
// the same did-you-mean.
func TestSignerServeConfigSpeaksTheScenarioDecoder(t *testing.T) {
	// No key file: a config that got through would fail on it, not hang
	// dialing port 1.
	keyJSON := filepath.Join(t.TempDir(), "missing-key.json")
	scenarioMsg := func(t *testing.T, yaml string) string {
		t.Helper()
		_, err := scenarios.Parse("s.yaml", []byte("name: x\n"+yaml))
		if err == nil {
			t.Fatalf("the scenario decoder accepted %q", yaml)
		}
		// "s.yaml:3:13: run.seed: expected ..." -> "expected ..."
		parts := strings.SplitN(err.Error(), ": ", 3)
		return parts[len(parts)-1]
	}
	tests := []struct {
		name, config, at, scenario string
	}{
		{"a quoted integer", `seed: "5"`, "1:7: seed", "validators: [{name: v1}]\nrun: {seed: \"5\"}"},
		{"a misspelt key", `cpu_scael: 2`, "1:1: cpu_scael", `validators: [{name: v1, signer: {cpu_scael: 2}}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "signer.yaml")
			if err := os.WriteFile(path, []byte(tc.config+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runCLI(t, "signer", "serve", "--config", path, "--node", "tcp://127.0.0.1:1", "--chain-id", "c", "--key-file", keyJSON)
			if code != exitBadInput {
				t.Fatalf("exit %d, want %d\n%s", code, exitBadInput, stderr)
			}
			msg := scenarioMsg(t, tc.scenario)
			if tc.name == "a misspelt key" {
				// The allowed keys differ by level; the verdict and the guess do not.
				msg, _, _ = strings.Cut(msg, " (allowed:")
			}
			if want := path + ":" + tc.at + ": " + msg; !strings.Contains(stderr, want) {
				t.Errorf("stderr:\n%s\nwant it to contain:\n%s", stderr, want)
			}
		})
	}
}
