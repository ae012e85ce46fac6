package runner

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/valnet/valnet/internal/nettest"
)

// CleanLeftovers removes a dead runner's temp dir and its unix socket and
// says so, one line per kind; a dry run only lists; a live runner's dir
// stays. The Docker engine here is one that does not answer: noted, not
// an error.
func TestCleanLeftovers(t *testing.T) {
	_, deadDir, liveDir := nettest.DeadRunnerDirs(t, "sock")
	l, err := net.Listen("unix", filepath.Join(deadDir, "v-1.sock"))
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()

	for _, dry := range []bool{true, false} {
		got, err := CleanLeftovers(context.Background(), dry)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.TempDirs, []string{deadDir}) || got.Sockets != 1 || len(got.Processes) != 0 || got.Containers != 0 {
			t.Fatalf("dry %v: %+v, want the dead runner's dir with its socket", dry, got)
		}
		verb := "removed"
		if dry {
			verb = "would remove"
		}
		want := []string{
			"leftovers of dead runs: " + verb + " 1 unix socket",
			"leftovers of dead runs: " + verb + " 1 temp dir (" + deadDir + ")",
		}
		if lines := got.Lines(dry); !slices.Equal(lines, want) {
			t.Errorf("dry %v: lines\n%s\nwant\n%s", dry, strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
		if len(got.Notes) != 1 || !strings.HasPrefix(got.Notes[0], "docker: not checked") {
			t.Errorf("notes %q, want docker not checked", got.Notes)
		}
		if _, err := os.Stat(deadDir); (err == nil) != dry {
			t.Errorf("dry %v: dead runner's dir exists: %v", dry, err == nil)
		}
		if _, err := os.Stat(liveDir); err != nil {
			t.Errorf("dry %v: a live runner's dir was removed", dry)
		}
	}
	if got, _ := CleanLeftovers(context.Background(), false); !got.Empty() {
		t.Errorf("a second cleanup found %+v", got)
	}
}
