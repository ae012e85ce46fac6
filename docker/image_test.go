//go:build integ

package docker

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// nodeBinaryTarget is the test's own node binary and its sha256, and the
// engine's OS and architecture that a resolved binary must be built for.
func nodeBinaryTarget(t *testing.T) (bin, sha, goos, goarch string) {
	t.Helper()
	bin = engine(t)
	sha, err := fileSHA256(bin)
	if err != nil {
		t.Fatal(err)
	}
	c, err := connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if goos, goarch, err = engineArch(c); err != nil {
		t.Fatal(err)
	}
	return bin, sha, goos, goarch
}

// An installed valnet run outside its source tree still finds a node
// binary: it builds one from the tree it was built from (SourceDir, set by
// make build), the same bytes as a build in the tree; without that tree it
// says what to do.
func TestIntegResolveBinaryOutsideTheSourceTree(t *testing.T) {
	_, want, goos, goarch := nodeBinaryTarget(t)
	ctx := context.Background()
	root, err := valnetModuleRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(BinaryEnv, "")
	t.Chdir(t.TempDir())
	old := SourceDir
	t.Cleanup(func() { SourceDir = old })

	SourceDir = root
	dst := filepath.Join(t.TempDir(), "valnet")
	if err := resolveBinary(ctx, "", dst, goos, goarch, t.Logf); err != nil {
		t.Fatal(err)
	}
	if got, _ := fileSHA256(dst); got != want {
		t.Errorf("built from SourceDir: %s, want %s (a build in the tree)", got[:12], want[:12])
	}

	if err := checkBinarySource(ctx, goarch); err != nil {
		t.Errorf("preflight refuses what resolveBinary builds: %v", err)
	}
	SourceDir = ""
	if err := checkBinarySource(ctx, goarch); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Errorf("preflight outside any tree: %v", err)
	}
	err = resolveBinary(ctx, "", filepath.Join(t.TempDir(), "valnet"), goos, goarch, t.Logf)
	if err == nil || !strings.Contains(err.Error(), "make build") || !strings.Contains(err.Error(), BinaryEnv) {
		t.Fatalf("outside any tree: %v", err)
	}
}
