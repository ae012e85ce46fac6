package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/valnet/valnet/signers/pkcs11"
)

// softHSMToken provisions a SoftHSM2 token for a CLI test (and points
// SOFTHSM2_CONF at it). Without SoftHSM2 the test is skipped, except under
// CI, which installs it.
func softHSMToken(t *testing.T, token string) (module, pinFile string) {
	t.Helper()
	if !pkcs11.Available {
		t.Skip("skipping: PKCS#11 needs cgo")
	}
	module, err := pkcs11.FindSoftHSM()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	dir := t.TempDir()
	if _, err := pkcs11.Provision(dir, token, ""); err != nil {
		t.Fatal(err)
	}
	return module, filepath.Join(dir, token+".pin")
}

func TestPKCS11ListAndKeygen(t *testing.T) {
	module, pinFile := softHSMToken(t, "cli-token")

	code, out, errs := runCLI(t, "pkcs11", "list", "--module", module)
	if code != 0 || !strings.Contains(out, `token "cli-token"`) || !strings.Contains(out, "Ed25519 signing (CKM_EDDSA): yes") ||
		!strings.Contains(out, "public objects only") || strings.Contains(out, `private key  `) || !strings.Contains(out, "token not initialised") {
		t.Errorf("list without a PIN: exit %d\n%s%s", code, out, errs)
	}

	code, out, errs = runCLI(t, "pkcs11", "keygen", "--module", module, "--token", "cli-token", "--key", "validator", "--pin-file", pinFile)
	addr := regexp.MustCompile(`(?m)^address +([0-9A-F]{40})$`).FindStringSubmatch(out)
	if code != 0 || addr == nil || !strings.Contains(out, `generated Ed25519 key pair "validator" on token cli-token`) ||
		!strings.Contains(out, "scenario: signer: {type: pkcs11, module: "+module+", token: cli-token, key: validator, pin_file: "+pinFile+"}") {
		t.Fatalf("keygen: exit %d\n%s%s", code, out, errs)
	}

	t.Setenv("VALNET_TEST_PIN", strings.TrimSpace(readFile(t, pinFile)))
	code, out, errs = runCLI(t, "pkcs11", "list", "--module", module, "--token", "cli-token", "--pin-env", "VALNET_TEST_PIN")
	if code != 0 || !strings.Contains(out, "logged in") || !regexp.MustCompile(`private key +"validator" +EdDSA`).MatchString(out) ||
		!regexp.MustCompile(`public key +"consensus" +Ed25519`).MatchString(out) || !strings.Contains(out, "    address    "+addr[1]) {
		t.Errorf("list with the PIN: exit %d\n%s%s", code, out, errs)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"keygen", "--module", module, "--token", "cli-token", "--key", "validator", "--pin-file", pinFile}, `already has 2 object(s) labelled "validator"`},
		{[]string{"keygen", "--module", module, "--token", "cli-token", "--key", "k", "--pin-env", "VALNET_TEST_NO_SUCH_PIN"}, "--pin-env VALNET_TEST_NO_SUCH_PIN: the variable is not set"},
		{[]string{"keygen", "--module", module, "--token", "cli-token", "--key", "k"}, "the token's PIN is needed"},
		{[]string{"keygen", "--module", module, "--token", "cli-token", "--pin-file", pinFile}, "--key: name the key pair"},
		{[]string{"keygen", "--module", module, "--key", "k", "--pin-file", pinFile}, "name the token"},
		{[]string{"keygen", "--module", module, "--token", "nope", "--key", "k", "--pin-file", pinFile}, `token "nope" not found`},
		{[]string{"list", "--module", filepath.Join(t.TempDir(), "missing.so")}, "missing.so not found"},
		{[]string{"list", "--module", module, "--token", "cli-token", "--slot", "1"}, "not both"},
	} {
		code, out, errs := runCLI(t, append([]string{"pkcs11"}, c.args...)...)
		if code != exitBadInput || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, want 2 and %q\n%s%s", c.args, code, c.want, out, errs)
		}
	}
	t.Setenv("VALNET_TEST_PIN", "wrong-pin")
	if code, _, errs := runCLI(t, "pkcs11", "list", "--module", module, "--token", "cli-token", "--pin-env", "VALNET_TEST_PIN"); code != exitBadInput || !strings.Contains(errs, "wrong PIN") {
		t.Errorf("list with a wrong PIN: exit %d %s", code, errs)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
