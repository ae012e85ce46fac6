package scenarios

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestSignerKeysCovered keeps signerTypeKeys in step with rawSigner: each
// type-specific key exists, belongs to one type, and that type exists.
func TestSignerKeysCovered(t *testing.T) {
	keys := keyLevels()["validators[].signer"]
	owner := map[string]string{}
	for typ, list := range signerTypeKeys {
		if !contains(signerTypes, typ) {
			t.Errorf("signerTypeKeys has keys for %q, which is not an available signer type", typ)
		}
		for _, k := range list {
			if !contains(keys, k) {
				t.Errorf("signerTypeKeys[%s] lists %q, which rawSigner does not have", typ, k)
			}
			if o, dup := owner[k]; dup {
				t.Errorf("key %q belongs to both %s and %s", k, o, typ)
			}
			owner[k] = typ
		}
	}
	for _, common := range []string{"type", "key_type", "via", "latency", "cpu_scale"} {
		if _, ok := owner[common]; ok || !contains(keys, common) {
			t.Errorf("%q should be a key every signer type takes", common)
		}
	}
}

func TestBuiltinProfileNames(t *testing.T) {
	names := BuiltinProfileNames()
	if len(names) == 0 {
		t.Fatal("no built-in profiles")
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("built-in profile %q listed twice", n)
		}
		seen[n] = true
		if !namePattern.MatchString(n) || len(n) > maxNameLen {
			t.Errorf("built-in profile %q is not a valid profile name", n)
		}
	}
	names[0] = "changed"
	if BuiltinProfileNames()[0] == "changed" {
		t.Errorf("BuiltinProfileNames returns shared memory")
	}
}

// TestPathsResolution: Load joins relative paths to the scenario's
// directory; Parse (no file) keeps them as written; absolute paths stay.
func TestPathsResolution(t *testing.T) {
	src := []byte(`name: paths
validators:
  - name: a
    signer: {type: keyfile, path: keys/a.armor, passphrase_file: ../pass.txt}
  - name: b
    signer: {type: keyfile, path: /abs/b.armor, passphrase_env: P}
`)
	for _, c := range []struct {
		dir, wantA, wantPass string
	}{
		{"", "keys/a.armor", "../pass.txt"},
		{"scen/x", "scen/x/keys/a.armor", "scen/pass.txt"},
		{".", "keys/a.armor", "../pass.txt"},
	} {
		p, err := parse("t.yaml", "t.yaml", c.dir, src, Overrides{})
		if err != nil {
			t.Fatal(err)
		}
		a, b := p.Validators[0].Signer.Keyfile, p.Validators[1].Signer.Keyfile
		if a.Path != c.wantA || a.PassphraseFile != c.wantPass || b.Path != "/abs/b.armor" {
			t.Errorf("dir %q: a %+v, b %+v", c.dir, a, b)
		}
	}
	p, err := Parse("t.yaml", src)
	if err != nil || p.Validators[0].Signer.Keyfile.Path != "keys/a.armor" {
		t.Errorf("Parse should keep paths as written: %+v, %v", p, err)
	}
}

// TestStarterExamplesParse uncomments the starter's commented examples
// (keyfile, simulated, pkcs11, ledger validators, a node binary, a second
// profile, the network keys, one fault of each action) and checks that
// the result still parses, so that they can be copied as they are. The
// process-only examples need run.backend: process, which the starter
// cannot show beside its default: the test switches it.
func TestStarterExamplesParse(t *testing.T) {
	commentedKey := regexp.MustCompile(`^(\s*)# (\s*(- |[a-z_][a-z0-9_-]*:))`)
	var lines []string
	uncommented := 0
	for _, line := range strings.Split(string(StarterScenario()), "\n") {
		if m := commentedKey.FindStringSubmatchIndex(line); m != nil {
			line = line[:m[3]] + line[m[3]+2:]
			uncommented++
		}
		lines = append(lines, line)
	}
	src := strings.Join(lines, "\n")
	if !strings.Contains(src, "\n  backend: inprocess\n") {
		t.Fatalf("the starter does not show run.backend: inprocess as expected")
	}
	src = strings.Replace(src, "\n  backend: inprocess\n", "\n  backend: process\n", 1)
	p, err := Parse("starter-uncommented.yaml", []byte(src))
	if err != nil {
		t.Fatalf("the starter's commented examples do not parse once uncommented:\n%v", err)
	}
	var types []string
	for _, v := range p.Validators {
		types = append(types, v.Signer.Type)
	}
	for _, want := range []string{SignerKeyfile, SignerSimulated, SignerPKCS11, SignerLedger} {
		if !slices.Contains(types, want) {
			t.Errorf("uncommented starter has no %s signer (uncommented %d lines)", want, uncommented)
		}
	}
	if len(p.Faults) != len(faultActions) {
		t.Errorf("uncommented starter has %d faults, want one per action (%d)", len(p.Faults), len(faultActions))
	}
	n := p.Network
	if p.Node.Binary == "" || p.Run.HaltAfter == 0 || n.Default.Latency == nil || n.Default.Jitter == 0 || n.Default.Bandwidth == 0 || len(n.Links) == 0 || len(n.Zones) == 0 {
		t.Errorf("uncommented starter lacks a node binary, halt_after or network keys: run %+v network %+v", p.Run, n)
	}
}
