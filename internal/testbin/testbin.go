// Package testbin builds commands for tests that need a real binary: the
// valnet command (the process backend runs `valnet node`, and a test
// binary is not valnet), and test programs in testdata (a remote signer
// valnet did not write). It is shared so that every package builds them
// the same way.
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

type built struct {
	once sync.Once
	bin  string
	err  error
}

var (
	mu     sync.Mutex
	dir    string
	dirErr error
	builds = map[string]*built{}
)

// Valnet builds ./cmd/valnet once per test binary and returns its path.
// Call Cleanup from TestMain after m.Run.
func Valnet(t testing.TB) string {
	t.Helper()
	return Build(t, "./cmd/valnet")
}

// Build builds the main package at pkg (a path relative to the module
// root, e.g. ./runner/testdata/extsigner) once per test binary and
// returns the binary's path. Call Cleanup from TestMain after m.Run.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	mu.Lock()
	b := builds[pkg]
	if b == nil {
		b = &built{}
		builds[pkg] = b
	}
	mu.Unlock()
	b.once.Do(func() { b.bin, b.err = build(pkg) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

func build(pkg string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	mu.Lock()
	if dir == "" && dirErr == nil {
		dir, dirErr = os.MkdirTemp("", "valnet-testbin-")
	}
	d, derr := dir, dirErr
	mu.Unlock()
	if derr != nil {
		return "", derr
	}
	bin := filepath.Join(d, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}

// Cleanup removes the built binaries, if any.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
	}
}
