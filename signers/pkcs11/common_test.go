package pkcs11

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// These tests need neither cgo nor SoftHSM.

func TestDefaultTokenLabel(t *testing.T) {
	if got := DefaultTokenLabel("hsm"); got != "valnet-hsm" {
		t.Errorf("DefaultTokenLabel(hsm) = %q", got)
	}
	long := strings.Repeat("a", 48) // the longest validator name
	a, b := DefaultTokenLabel(long), DefaultTokenLabel(long[:47]+"b")
	if len(a) != MaxTokenLabel || a == b || !strings.HasPrefix(a, "valnet-aaaa") {
		t.Errorf("long names: %q and %q; want distinct %d-byte labels", a, b, MaxTokenLabel)
	}
	for _, l := range []string{a, "valnet-hsm", DefaultTokenLabel("x-1")} {
		if err := CheckProvisionLabel(l); err != nil {
			t.Errorf("default label %q refused: %v", l, err)
		}
	}
	for _, bad := range []string{"", "-x", "a/b", "../x", "a b", strings.Repeat("x", 33)} {
		if CheckProvisionLabel(bad) == nil {
			t.Errorf("CheckProvisionLabel(%q) accepted it", bad)
		}
	}
}

func TestParseECPoint(t *testing.T) {
	raw := bytes.Repeat([]byte{7}, 32)
	for _, v := range [][]byte{append([]byte{0x04, 0x20}, raw...), raw} {
		pub, err := ParseECPoint(v)
		if err != nil || !bytes.Equal(pub.Bytes(), raw) || pub.Type() != "ed25519" {
			t.Errorf("ParseECPoint(%x) = %v, %v", v, pub, err)
		}
	}
	for _, v := range [][]byte{nil, {0x04, 0x21}, append([]byte{0x03, 0x20}, raw...), append([]byte{0x04, 0x41}, raw...)} {
		if _, err := ParseECPoint(v); err == nil || !strings.Contains(err.Error(), "OCTET STRING") {
			t.Errorf("ParseECPoint(%x): err %v", v, err)
		}
	}
}

func TestReadPIN(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "pin")
	open := filepath.Join(dir, "open")
	empty := filepath.Join(dir, "empty")
	os.WriteFile(good, []byte("1234\n"), 0o600)
	os.WriteFile(open, []byte("1234"), 0o644)
	os.WriteFile(empty, []byte("\n"), 0o600)
	t.Setenv("VALNET_TEST_PIN", "5678")
	for _, c := range []struct{ env, file, want, err string }{
		{file: good, want: "1234"},
		{env: "VALNET_TEST_PIN", want: "5678"},
		{env: "VALNET_TEST_UNSET_PIN", err: "pin_env VALNET_TEST_UNSET_PIN is not set"},
		{file: open, err: "readable by others"},
		{file: empty, err: "is empty"},
		{file: filepath.Join(dir, "none"), err: "no such file"},
		{env: "A", file: good, err: "not both"},
		{err: "give pin_env or pin_file"},
	} {
		got, err := ReadPIN(c.env, c.file)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ReadPIN(%q, %q) err %v, want %q", c.env, c.file, err, c.err)
			}
		} else if err != nil || string(got) != c.want {
			t.Errorf("ReadPIN(%q, %q) = %q, %v", c.env, c.file, got, err)
		}
	}
}

func TestConfigName(t *testing.T) {
	if n := (Config{Token: "t"}).Name(); n != "t" {
		t.Errorf("Name = %q", n)
	}
	if n := (Config{Slot: 3, HasSlot: true}).Name(); n != "slot 3" {
		t.Errorf("Name = %q", n)
	}
}
