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

	staticOnce sync.Once
	staticDir  string
	staticBin  string
	staticErr  error
)

// Valnet builds ./cmd/valnet once per test binary and returns its path.
// Call Cleanup from TestMain after m.Run.
func Valnet(t testing.TB) string {
	t.Helper()
	build(false)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// ValnetStatic is Valnet built with CGO_ENABLED=0: a static Linux binary
// that the docker backend puts into its node image as it is (no second
// build), and that runs every backend but pkcs11.
func ValnetStatic(t testing.TB) string {
	t.Helper()
	build(true)
	if staticErr != nil {
		t.Fatal(staticErr)
	}
	return staticBin
}

func build(static bool) {
	if static {
		staticOnce.Do(func() {
			d, e := os.MkdirTemp("", "valnet-testbin-static-")
			if e != nil {
				staticErr = e
				return
			}
			staticDir = d
			staticBin = filepath.Join(d, "valnet")
			staticErr = goBuild(staticBin, "CGO_ENABLED=0")
		})
		return
	}
	once.Do(func() {
		if dir, err = os.MkdirTemp("", "valnet-testbin-"); err != nil {
			return
		}
		bin = filepath.Join(dir, "valnet")
		err = goBuild(bin)
	})
}

// goBuild builds ./cmd/valnet of this module into out.
func goBuild(out string, env ...string) error {
	gomod, e := exec.Command("go", "env", "GOMOD").Output()
	if e != nil {
		return fmt.Errorf("go env GOMOD: %w", e)
	}
	cmd := exec.Command("go", "build", "-o", out, "./cmd/valnet")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	cmd.Env = append(os.Environ(), env...)
	if b, e := cmd.CombinedOutput(); e != nil {
		return fmt.Errorf("go build ./cmd/valnet: %w\n%s", e, b)
	}
	return nil
}

// Cleanup removes the built binary, if any.
func Cleanup() {
	if dir != "" {
		os.RemoveAll(dir)
	}
	if staticDir != "" {
		os.RemoveAll(staticDir)
	}
}
