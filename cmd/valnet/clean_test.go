package main

import (
	"os"
	"strings"
	"testing"

	"github.com/valnet/valnet/internal/nettest"
)

// valnet clean --dry-run lists a dead runner's temp dir and keeps it;
// valnet clean removes it; a live runner's stays; then nothing is left.
func TestCleanCommand(t *testing.T) {
	_, deadDir, liveDir := nettest.DeadRunnerDirs(t, "ev")
	steps := []struct {
		args    []string
		want    string
		deadDir bool // still there after
	}{
		{[]string{"clean", "--dry-run"}, "valnet: leftovers of dead runs: would remove 1 temp dir (" + deadDir + ")", true},
		{[]string{"clean"}, "valnet: leftovers of dead runs: removed 1 temp dir (" + deadDir + ")", false},
		{[]string{"clean"}, "valnet: no leftovers of dead runs", false},
	}
	for _, s := range steps {
		code, out, stderr := runCLI(t, s.args...)
		if code != 0 || !strings.Contains(out, s.want) || !strings.Contains(out, "valnet: docker: not checked") {
			t.Errorf("valnet %s: exit %d, stdout\n%s\nwant %q (stderr %s)", strings.Join(s.args, " "), code, out, s.want, stderr)
		}
		if _, err := os.Stat(deadDir); (err == nil) != s.deadDir {
			t.Errorf("valnet %s: dead runner's dir there: %v, want %v", strings.Join(s.args, " "), err == nil, s.deadDir)
		}
		if _, err := os.Stat(liveDir); err != nil {
			t.Errorf("valnet %s: removed the live runner's dir", strings.Join(s.args, " "))
		}
	}
}
