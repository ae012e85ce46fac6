package nodes

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Run temp dirs sit on a short base, whatever TMPDIR is, and carry the
// runner's pid; CleanStaleTempDirs removes those of runners that are gone
// and nothing else.
func TestRunTempDirs(t *testing.T) {
	if !processSupported {
		t.Skip("needs /proc")
	}
	base, err := os.MkdirTemp("/tmp", "vt")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)

	t.Setenv("TMPDIR", filepath.Join(base, strings.Repeat("d", maxTempBase)))
	if got := shortTempBase(); got != "/tmp" {
		t.Errorf("a deep TMPDIR: base %s, want /tmp", got)
	}
	t.Setenv("TMPDIR", base)
	own, err := MkRunTempDir("dk")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("valnet-dk-%d-", os.Getpid()); filepath.Dir(own) != base || !strings.HasPrefix(filepath.Base(own), want) {
		t.Fatalf("MkRunTempDir: %s, want %s/%s*", own, base, want)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dirs := []struct {
		name string
		kept bool
	}{
		{filepath.Base(own), true},
		{fmt.Sprintf("valnet-ev-%d-123", os.Getppid()), true}, // a live runner
		{fmt.Sprintf("valnet-sock-%d-123", dead.Process.Pid), false},
		{"valnet-dk-123", true},      // not a run temp dir
		{"valnet-x-nopid-123", true}, // nor this
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(base, d.name), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if ProcessAlive(dead.Process.Pid, 0) {
		t.Skipf("pid %d was reused at once", dead.Process.Pid)
	}
	if err := CleanStaleTempDirs(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range dirs {
		_, err := os.Stat(filepath.Join(base, tc.name))
		if kept := err == nil; kept != tc.kept {
			t.Errorf("%s: kept %v, want %v", tc.name, kept, tc.kept)
		}
	}
}
