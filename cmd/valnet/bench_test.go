package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/valnet/valnet/signers/signerbench"
)

func TestBenchSignersJSON(t *testing.T) {
	code, stdout, stderr := runCLI(t, "bench", "signers", "--only", "ed25519,local", "--iterations", "20", "--json",
		"--dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var rep signerbench.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	var got []string
	for _, r := range rep.Rows {
		got = append(got, r.Name+" "+r.Op)
		if r.N != 20 || r.P50US <= 0 || r.P50US > r.P99US {
			t.Errorf("row %+v", r)
		}
	}
	if want := "ed25519 keygen,ed25519 sign,ed25519 verify,local sign-vote"; strings.Join(got, ",") != want {
		t.Errorf("rows %v, want %s", got, want)
	}
	if rep.Schema != signerbench.Schema || rep.Host.NumCPU < 1 || rep.Host.GOOS == "" {
		t.Errorf("header %+v", rep)
	}
}

func TestBenchSignersTable(t *testing.T) {
	code, stdout, stderr := runCLI(t, "bench", "signers", "--only", "ml-dsa-44", "--iterations", "3", "--quiet")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d stderr %q", code, stderr)
	}
	for _, s := range []string{"valnet bench signers", "host: ", "| algorithm | ml-dsa-44 | sign ", " p50 | ", " p99 | "} {
		if !strings.Contains(stdout, s) {
			t.Errorf("table lacks %q:\n%s", s, stdout)
		}
	}
}

func TestBenchSignersBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--only", "ed25519,ed448"}, []string{`"ed448"`, "allowed:", "ed25519", "keyfile-once", "remote-unix", "slh-dsa-sha2-128s"}},
		{[]string{"--iterations", "0"}, []string{"--iterations"}},
		{[]string{"--duration", "-1s"}, []string{"--duration"}},
		{[]string{"--keyfile-cost", "3"}, []string{"--keyfile-cost"}},
	}
	for _, tc := range tests {
		code, stdout, stderr := runCLI(t, append([]string{"bench", "signers"}, tc.args...)...)
		if code != 2 || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q", tc.args, code, stdout)
		}
		for _, s := range tc.want {
			if !strings.Contains(stderr, s) {
				t.Errorf("%v: stderr lacks %q: %s", tc.args, s, stderr)
			}
		}
	}
}
