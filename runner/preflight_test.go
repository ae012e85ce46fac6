package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPreflight(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "pass")
	if err := os.WriteFile(secret, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open-pass")
	if err := os.WriteFile(open, []byte("hunter2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VALNET_PREFLIGHT_SET", "a passphrase")
	keyfile := func(key string) string {
		return `
name: preflight
validators:
  - name: kms
    signer: {type: keyfile, ` + key + `}
`
	}
	tests := []struct {
		name string
		yaml string
		want []string // each problem, "key: message" substring; none: no problem
	}{
		{"passphrase in the environment", keyfile("passphrase_env: VALNET_PREFLIGHT_SET"), nil},
		{"passphrase variable unset", keyfile("passphrase_env: VALNET_PREFLIGHT_UNSET"),
			[]string{"validators[kms].signer.passphrase_env: passphrase_env VALNET_PREFLIGHT_UNSET is not set"}},
		{"passphrase file", keyfile("passphrase_file: " + secret), nil},
		{"passphrase file missing", keyfile("passphrase_file: " + filepath.Join(dir, "nope")),
			[]string{"validators[kms].signer.passphrase_file: passphrase file: "}},
		{"passphrase file others can read", keyfile("passphrase_file: " + open),
			[]string{"validators[kms].signer.passphrase_file: passphrase file " + open + " is readable by others"}},
		{"node binary missing, every problem at once", `
name: preflight
run: {backend: process}
node: {binary: /nonexistent/cometbft}
validators:
  - name: a
  - name: b
    node: {binary: ` + filepath.Join(dir, "nope") + `}
`, []string{"node.binary: node binary /nonexistent/cometbft: no such file or directory", "validators[b].node.binary: node binary " + filepath.Join(dir, "nope") + ": no such file"}},
		{"node binary not executable", `
name: preflight
run: {backend: process}
node: {binary: ` + secret + `}
validators:
  - name: a
`, []string{"node.binary: node binary " + secret + " is not executable"}},
		{"app command not on PATH", `
name: preflight
app: {command: [valnet-no-such-abci-app, --address, '{addr}']}
validators:
  - name: a
`, []string{"app.command: app command valnet-no-such-abci-app: not found on PATH"}},
		{"app command path missing", `
name: preflight
app: {command: [/nonexistent/app, '{addr}'], transport: grpc}
validators:
  - name: a
`, []string{"app.command: app command /nonexistent/app: no such file or directory"}},
		{"app command on PATH", `
name: preflight
app: {command: [sh, -c, 'exec sleep 1 {addr}']}
validators:
  - name: a
`, nil},
		{"pkcs11 module missing and PIN unset", `
name: preflight
validators:
  - name: hsm
    signer: {type: pkcs11, module: /nonexistent/libhsm.so, token: t, key: k, pin_env: VALNET_PREFLIGHT_UNSET}
`, []string{"validators[hsm].signer.module: PKCS#11 module /nonexistent/libhsm.so: no such file or directory",
			"validators[hsm].signer.pin_env: pin_env VALNET_PREFLIGHT_UNSET is not set"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := Preflight(context.Background(), parse(t, tt.yaml))
			if len(ps) != len(tt.want) {
				t.Fatalf("got %d problems %v, want %d %v", len(ps), ps, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(ps[i].String(), w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, ps[i], w)
				}
			}
		})
	}
}

// A run that cannot start says why and leaves no run directory behind
// (so the same --out can be used once the problem is fixed).
func TestRunRefusesBeforeTheRunDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	_, err := Run(context.Background(), parse(t, `
name: preflight
validators:
  - name: kms
    signer: {type: keyfile, passphrase_env: VALNET_PREFLIGHT_UNSET}
`), Options{OutDir: dir})
	if err == nil || !strings.Contains(err.Error(), "passphrase_env VALNET_PREFLIGHT_UNSET is not set") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("run directory exists after a refused run: %v", err)
	}
}
