// Package testbin builds the valnet command for tests that need a real
// valnet binary (the process backend runs `valnet node`, and a test binary
// is not valnet). It is shared so that every package builds it the same way.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	once sync.Once
	dir  string
	bin  string
	err  error
)

// Valnet builds ./cmd/valnet once per test binary and returns its path.
// Call Cleanup from TestMain after m.Run.
func Valnet(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		out, e := exec.Command("go", "env", "GOMOD").Output()
		if e != nil {
			err = fmt.Errorf("go env GOMOD: %w", e)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		if dir, err = os.MkdirTemp("", "valnet-testbin-"); err != nil {
			return
		}
		bin = filepath.Join(dir, "valnet")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/valnet")
		cmd.Dir = root
		if out, e := cmd.CombinedOutput(); e != nil {
			err = fmt.Errorf("go build ./cmd/valnet: %w\n%s", e, out)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Cleanup removes the built binary, if any.
func Cleanup() {
	if dir != "" {
		os.RemoveAll(dir)
	}
}
