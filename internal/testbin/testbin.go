// Package testbin builds commands for tests that need a real binary: the
// valnet command (the process backend runs `valnet node`, and a test
// binary is not valnet), its static build (the docker backend's node
// image takes it as it is), and test programs in testdata (a remote
// signer valnet did not write). It is shared so that every package builds
// them the same way.
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

// ValnetStatic is Valnet built with CGO_ENABLED=0: a static Linux binary
// that the docker backend puts into its node image as it is (no second
// build), and that runs every backend but pkcs11. It is built as the
// docker backend builds its own (-trimpath, docker/image.go buildBinary),
// so that one of them, or make prebuild, compiles for both.
func ValnetStatic(t testing.TB) string {
	t.Helper()
	return buildOnce(t, "./cmd/valnet", "static", []string{"-trimpath"}, "CGO_ENABLED=0")
}

// ABCICLI builds CometBFT's abci-cli (the version in go.mod, from the
// module cache) once per test binary and returns its path; `abci-cli
// kvstore --address ADDR` is a real ABCI application.
func ABCICLI(t testing.TB) string {
	t.Helper()
	return Build(t, "github.com/cometbft/cometbft/abci/cmd/abci-cli")
}

// Build builds the main package at pkg (a path relative to the module
// root, e.g. ./runner/testdata/extsigner, or a module's package path)
// once per test binary and returns the binary's path. Call Cleanup from
// TestMain after m.Run. It builds with -trimpath, as make does, so the
// build cache serves any checkout of the same source.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	return buildOnce(t, pkg, "", []string{"-trimpath"})
}

// buildOnce builds pkg with go build's flags and env once per (pkg,
// variant); variant names the build's own subdirectory.
func buildOnce(t testing.TB, pkg, variant string, flags []string, env ...string) string {
	t.Helper()
	key := pkg + "\x00" + variant
	mu.Lock()
	b := builds[key]
	if b == nil {
		b = &built{}
		builds[key] = b
	}
	mu.Unlock()
	b.once.Do(func() { b.bin, b.err = build(pkg, variant, flags, env) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

func build(pkg, variant string, flags, env []string) (string, error) {
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
	if variant != "" {
		d = filepath.Join(d, variant)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	bin := filepath.Join(d, filepath.Base(pkg))
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", bin, pkg)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
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

// CacheEnv names a directory where stock CometBFT builds are kept between
// test runs (CI sets it; default: the user's cache directory).
const CacheEnv = "VALNET_COMETBFT_CACHE"

var cometMu sync.Mutex

// CometBFT returns a stock cometbft of release version (e.g. "v0.38.26"),
// built from the Go module proxy with `go install` outside valnet's module
// (a plain release build, its own go.mod), once per machine: it is kept in
// $VALNET_COMETBFT_CACHE (default <user cache dir>/valnet/cometbft) and
// reused while it is there.
func CometBFT(t testing.TB, version string) string {
	t.Helper()
	bin, err := BuildCometBFT(version)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// BuildCometBFT is CometBFT for a caller without a testing.TB (.ci's
// prebuild, benchmarks' setup).
func BuildCometBFT(version string) (string, error) {
	cometMu.Lock()
	defer cometMu.Unlock()
	dir := os.Getenv(CacheEnv)
	if dir == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache directory for cometbft builds (set %s): %w", CacheEnv, err)
		}
		dir = filepath.Join(c, "valnet", "cometbft")
	}
	gobin := filepath.Join(dir, version)
	bin := filepath.Join(gobin, "cometbft")
	if st, err := os.Stat(bin); err == nil && st.Mode().IsRegular() {
		return bin, nil
	}
	if err := os.MkdirAll(gobin, 0o755); err != nil {
		return "", err
	}
	work, err := os.MkdirTemp("", "valnet-cometbft-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	cmd := exec.Command("go", "install", "github.com/cometbft/cometbft/cmd/cometbft@"+version)
	cmd.Dir = work // outside valnet's module
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install github.com/cometbft/cometbft/cmd/cometbft@%s: %w\n%s", version, err, out)
	}
	return bin, nil
}
