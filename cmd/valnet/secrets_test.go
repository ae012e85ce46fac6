package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/signers"
)

// Secrets never leave where the user put them (docs/reliability.md): every
// signer type that takes a secret - a key file's passphrase (from an
// environment variable and from a file), a PKCS#11 token's PIN - runs a
// real short run through the CLI, and the run directory (every file,
// whatever its kind), stdout and stderr are searched for each secret, raw
// and as hex and base64. So are the outputs of `valnet signer serve
// --type keyfile`, `valnet pkcs11 list` with the PIN, and of every command
// given a wrong secret.

// secretForms are the ways a secret could be written out.
func secretForms(s []byte) map[string][]byte {
	return map[string][]byte{
		"raw":           s,
		"hex":           []byte(hex.EncodeToString(s)),
		"HEX":           []byte(strings.ToUpper(hex.EncodeToString(s))),
		"base64":        []byte(base64.StdEncoding.EncodeToString(s)),
		"base64 (raw)":  []byte(base64.RawStdEncoding.EncodeToString(s)),
		"base64 (url)":  []byte(base64.RawURLEncoding.EncodeToString(s)),
		"quoted (JSON)": []byte(fmt.Sprintf("%q", s)),
	}
}

type secretScan struct {
	secrets map[string][]byte // name -> secret
	files   int
	bytes   int64
	outputs int
}

// scan fails t for every form of every secret found in data.
func (s *secretScan) scan(t *testing.T, where string, data []byte) {
	t.Helper()
	for name, secret := range s.secrets {
		for form, b := range secretForms(secret) {
			if i := bytes.Index(data, b); i >= 0 {
				t.Errorf("LEAK: the %s (%s) is in %s at byte %d", name, form, where, i)
			}
		}
	}
}

func (s *secretScan) output(t *testing.T, what, stdout, stderr string) {
	t.Helper()
	s.scan(t, what+" stdout", []byte(stdout))
	s.scan(t, what+" stderr", []byte(stderr))
	s.outputs += 2
}

// tree scans every regular file under dir.
func (s *secretScan) tree(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		s.files++
		s.bytes += int64(len(data))
		s.scan(t, path, data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// distinctive is a secret no file would hold by chance.
func distinctive(what string) []byte {
	return []byte("valnet-" + what + "-" + rand.Text())
}

func TestSecretsNeverLeak(t *testing.T) {
	module, pinFile := softHSMToken(t, "scan-token")
	pin := []byte(strings.TrimSpace(readFile(t, pinFile)))
	passEnv, passFile := distinctive("passphrase-env"), distinctive("passphrase-file")
	secretDir := t.TempDir()
	passPath := filepath.Join(secretDir, "pass")
	if err := os.WriteFile(passPath, append(passFile, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VALNET_SCAN_PASS", string(passEnv))
	t.Setenv("VALNET_SCAN_PIN", string(pin))
	s := &secretScan{secrets: map[string][]byte{"passphrase (env)": passEnv, "passphrase (file)": passFile, "PIN": pin}}

	scenario := func(pinEnv string) string {
		return write(t, "scan.yaml", `
name: secret-scan
chain:
  timeouts: {propose: 300ms, prevote: 100ms, precommit: 100ms, commit: 100ms}
run: {heights: 4, max_duration: 2m}
validators:
  - name: kfenv
    signer: {type: keyfile, passphrase_env: VALNET_SCAN_PASS, bcrypt_cost: 4, via: tcp}
  - name: kffile
    signer: {type: keyfile, passphrase_file: `+passPath+`, bcrypt_cost: 4, decrypt: once, via: unix}
  - name: hsm
    signer: {type: pkcs11, module: `+module+`, token: scan-token, key: consensus, pin_env: `+pinEnv+`}
  - name: plain
faults:
  - {action: signer-restart, target: kfenv, at: {height: 2}, duration: 300ms}
expect:
  - {metric: heights_committed, min: 4}
`)
	}

	runDir := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := runCLI(t, "run", scenario("VALNET_SCAN_PIN"), "--out", runDir)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
	}
	s.output(t, "valnet run", stdout, stderr)
	s.tree(t, runDir)

	// Wrong secrets: the error says which secret is wrong, never what was given.
	wrongPIN, wrongPass := distinctive("wrong-pin"), distinctive("wrong-passphrase")
	s.secrets["wrong PIN"], s.secrets["wrong passphrase"] = wrongPIN, wrongPass
	t.Setenv("VALNET_SCAN_WRONG_PIN", string(wrongPIN))
	wrongDir := filepath.Join(t.TempDir(), "wrong")
	code, stdout, stderr = runCLI(t, "run", scenario("VALNET_SCAN_WRONG_PIN"), "--out", wrongDir)
	if code != 2 || !strings.Contains(stderr, "wrong PIN") {
		t.Fatalf("run with a wrong PIN: exit %d\n%s%s", code, stdout, stderr)
	}
	s.output(t, "valnet run (wrong PIN)", stdout, stderr)
	s.tree(t, wrongDir)
	code, stdout, stderr = runCLI(t, "pkcs11", "list", "--module", module, "--token", "scan-token", "--pin-env", "VALNET_SCAN_PIN")
	if code != 0 || !strings.Contains(stdout, "logged in") {
		t.Fatalf("pkcs11 list: exit %d\n%s%s", code, stdout, stderr)
	}
	s.output(t, "valnet pkcs11 list", stdout, stderr)
	code, stdout, stderr = runCLI(t, "pkcs11", "list", "--module", module, "--token", "scan-token", "--pin-env", "VALNET_SCAN_WRONG_PIN")
	if code == 0 {
		t.Fatalf("pkcs11 list with a wrong PIN: exit 0\n%s%s", stdout, stderr)
	}
	s.output(t, "valnet pkcs11 list (wrong PIN)", stdout, stderr)

	// valnet signer serve --type keyfile, signing for a node, then stopped.
	armored := filepath.Join(runDir, "nodes", "kfenv", "config", "priv_validator_key.armor")
	serveDir := t.TempDir()
	stdout, stderr = serveKeyfile(t, armored, filepath.Join(serveDir, "state.json"), "VALNET_SCAN_PASS", true)
	s.output(t, "valnet signer serve", stdout, stderr)
	t.Setenv("VALNET_SCAN_WRONG_PASS", string(wrongPass))
	stdout, stderr = serveKeyfile(t, armored, filepath.Join(serveDir, "state2.json"), "VALNET_SCAN_WRONG_PASS", false)
	s.output(t, "valnet signer serve (wrong passphrase)", stdout, stderr)
	s.tree(t, serveDir)
	// The standalone signer's high-water mark and its lock are its own.
	for _, f := range []string{"state.json", "state.json.lock"} {
		if st, err := os.Stat(filepath.Join(serveDir, f)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("signer serve's %s: %v, want mode 0600", f, statMode(st, err))
		}
	}

	t.Logf("secret scan: %d secrets x %d forms searched in %d files (%d bytes) and %d captured outputs",
		len(s.secrets), len(secretForms(nil)), s.files, s.bytes, s.outputs)
}

// serveKeyfile runs `valnet signer serve --type keyfile` against a node
// end of valnet's remote hop; with ok, it signs one vote and is stopped by
// SIGINT, otherwise it must refuse to start (exit 2).
func serveKeyfile(t *testing.T, armored, state, passEnv string, ok bool) (stdout, stderr string) {
	t.Helper()
	node, err := signers.ListenRemote(signers.ClientConfig{Network: signers.NetTCP, Address: "127.0.0.1:0",
		ChainID: "scan-chain", NodeKey: ed25519.GenPrivKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	var out, errs serveOutput
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"signer", "serve", "--node", "tcp://" + node.Addr(), "--chain-id", "scan-chain",
			"--type", "keyfile", "--key-file", armored, "--passphrase-env", passEnv, "--state-file", state}, &out, &errs)
	}()
	if !ok {
		select {
		case code := <-done:
			if code != exitBadInput || !strings.Contains(errs.String(), "wrong passphrase") {
				t.Fatalf("serve with a wrong passphrase: exit %d\n%s", code, errs.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatal("serve with a wrong passphrase did not stop")
		}
		return out.String(), errs.String()
	}
	if err := node.WaitForSigner(10 * time.Second); err != nil {
		t.Fatalf("signer did not connect: %v\n%s", err, errs.String())
	}
	if err := node.SignVote("scan-chain", &cmtproto.Vote{Type: types.PrevoteType, Height: 1, Timestamp: time.Now()}, false); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("serve: exit %d\n%s", code, errs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop on SIGINT")
	}
	return out.String(), errs.String()
}

func statMode(st os.FileInfo, err error) any {
	if err != nil {
		return err
	}
	return st.Mode().Perm()
}
