package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// `valnet node` is for the process backend: hidden from help, and a node
// that cannot start exits non-zero with the reason on stderr (the runner
// keeps it in node.stderr).
func TestNodeCommand(t *testing.T) {
	if _, out, _ := runCLI(t, "--help"); strings.Contains(out, "node ") {
		t.Errorf("node shows in help:\n%s", out)
	}
	code, _, stderr := runCLI(t, "node")
	if code == 0 || !strings.Contains(stderr, `"home" not set`) {
		t.Errorf("no --home: exit %d, stderr %q", code, stderr)
	}
	home := filepath.Join(t.TempDir(), "missing")
	code, _, stderr = runCLI(t, "node", "--home", home)
	if code != exitBadInput || !strings.Contains(stderr, filepath.Join(home, "config", "config.toml")) {
		t.Errorf("missing home: exit %d, stderr %q", code, stderr)
	}
}
