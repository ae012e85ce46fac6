// Package testbin builds commands for tests that need real binaries: the
// valnet command (the process backend runs `valnet node`, and a test
// binary is not valnet) and CometBFT's abci-cli (a real ABCI application
// for app: scenarios). It is shared so that every package builds them the
// same way.
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

// build is one binary, built at most once per test binary.
type build struct {
	once sync.Once
	bin  string
	err  error
}

var (
	mu     sync.Mutex
	dir    string
	builds = map[string]*build{}
)

// Valnet builds ./cmd/valnet once per test binary and returns its path.
// Call Cleanup from TestMain after m.Run.
func Valnet(t testing.TB) string { return Build(t, "./cmd/valnet", "valnet") }

// ABCICLI builds CometBFT's abci-cli (the version in go.mod, from the
// module cache) once per test binary and returns its path; `abci-cli
// kvstore --address ADDR` is a real ABCI application.
func ABCICLI(t testing.TB) string {
	return Build(t, "github.com/cometbft/cometbft/abci/cmd/abci-cli", "abci-cli")
}

// Build runs `go build -o NAME PKG` in the module root once per test
// binary and returns the binary's path.
func Build(t testing.TB, pkg, name string) string {
	t.Helper()
	mu.Lock()
	b := builds[pkg]
	if b == nil {
		b = &build{}
		builds[pkg] = b
	}
	mu.Unlock()
	b.once.Do(func() { b.bin, b.err = goBuild(pkg, name) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

func goBuild(pkg, name string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	mu.Lock()
	if dir == "" {
		dir, err = os.MkdirTemp("", "valnet-testbin-")
	}
	d := dir
	mu.Unlock()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(d, name)
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
