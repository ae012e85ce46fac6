package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A Source is read once: resolved again after its file is gone (or from
// standard input, which cannot be read twice), it gives the same plan,
// with the file's relative paths joined to its directory.
func TestSourceReadOnce(t *testing.T) {
	data, err := os.ReadFile("testdata/keyfile.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "k.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := ReadSource(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		p, err := src.Resolve(Overrides{Set: []Setting{{Path: "run.heights", Value: "7"}}})
		if err != nil {
			t.Fatalf("resolve %d: %v", i, err)
		}
		if p.Run.Heights != 7 || p.Source != file || p.Validators[1].Signer.Keyfile.PassphraseFile != filepath.Join(dir, "secrets/pass.txt") {
			t.Errorf("resolve %d: heights %d source %s passphrase_file %s", i, p.Run.Heights, p.Source, p.Validators[1].Signer.Keyfile.PassphraseFile)
		}
	}
	if string(src.Text()) != string(data) {
		t.Error("Text is not the text read")
	}

	b, err := ReadSource("quickstart")
	if err != nil {
		t.Fatal(err)
	}
	if p, err := b.Resolve(Overrides{}); err != nil || p.Source != "builtin:quickstart" {
		t.Errorf("builtin: %v %v", p, err)
	}
	if _, err := ReadSource("no-such"); err == nil || !strings.Contains(err.Error(), "neither a scenario file nor a builtin") {
		t.Errorf("unknown name: %v", err)
	}
}
