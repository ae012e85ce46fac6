package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valnet/valnet/signers"
)

func TestSignerKeygen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kms", "key.json")
	code, stdout, stderr := runCLI(t, "signer", "keygen", path)
	if code != 0 || !strings.Contains(stdout, "wrote "+path+": ed25519 key, address ") {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	k1, err := signers.LoadPrivValidatorKey(path)
	if err != nil {
		t.Fatal(err)
	}
	// Never over an existing key.
	if code, _, stderr := runCLI(t, "signer", "keygen", path); code != 2 || !strings.Contains(stderr, "exists: keygen never overwrites a key") {
		t.Errorf("second keygen: exit %d: %s", code, stderr)
	}
	// A second key is another key.
	other := filepath.Join(t.TempDir(), "k.json")
	if code, _, stderr := runCLI(t, "signer", "keygen", "--key-type", "secp256k1", other); code != 0 {
		t.Fatalf("secp256k1: %s", stderr)
	}
	k2, err := signers.LoadPrivValidatorKey(other)
	if err != nil || string(k1.PubKey().Bytes()) == string(k2.PubKey().Bytes()) || k2.Type() != "secp256k1" {
		t.Errorf("second key: %v, type %s", err, k2.Type())
	}
}
