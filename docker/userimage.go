package docker

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	dc "github.com/ory/dockertest/v3/docker"

	"github.com/valnet/valnet/nodes"
)

// UserImageRepo is the repository of images that run a user's own node
// binary (node.binary), tagged like ImageRepo by the binary's sha256.
const UserImageRepo = "valnet-cometbft"

// userDockerfile runs the user's binary from nothing else: no base image
// to pull. A dynamically linked binary (go install builds cometbft with
// cgo's resolver, so it needs libc) brings its loader and libraries,
// copied from this host at the paths it was linked against.
const userDockerfile = `FROM scratch
COPY rootfs/ /
ENTRYPOINT ["/cometbft"]
`

// ensureUserImage returns the tag of the image that runs binary, building
// it if no image has that tag yet.
func ensureUserImage(ctx context.Context, c *dc.Client, binary string, logf func(string, ...any)) (string, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	_, goarch, err := engineArch(c)
	if err != nil {
		return "", err
	}
	if err := checkArch(binary, goarch); err != nil {
		return "", fmt.Errorf("docker: node binary %s: %w", binary, err)
	}
	libs, err := sharedLibraries(ctx, binary)
	if err != nil {
		return "", fmt.Errorf("docker: node binary %s: %w", binary, err)
	}
	dir, err := nodes.MkRunTempDir("image")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "rootfs")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	if err := copyFile(binary, filepath.Join(root, "cometbft")); err != nil {
		return "", err
	}
	for _, lib := range libs {
		dst := filepath.Join(root, lib)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		real, err := filepath.EvalSymlinks(lib)
		if err != nil {
			return "", fmt.Errorf("docker: library %s of %s: %w", lib, binary, err)
		}
		if err := copyFile(real, dst); err != nil {
			return "", err
		}
	}
	// The tag covers the libraries too: the same binary on a host with
	// another libc is another image.
	sum, err := treeSHA256(root)
	if err != nil {
		return "", err
	}
	tag := UserImageRepo + ":" + sum[:12]
	if _, err := c.InspectImage(tag); err == nil {
		return tag, nil
	} else if !errors.Is(err, dc.ErrNoSuchImage) {
		return "", fmt.Errorf("docker: inspect image %s: %w", tag, err)
	}
	logf("docker: building image %s for %s (%d shared libraries)", tag, binary, len(libs))
	if err := buildImage(ctx, c, dir, userDockerfile, tag, map[string]string{"valnet.image": "user-node", "valnet.binary": binary}, logf); err != nil {
		return "", err
	}
	return tag, nil
}

// checkArch refuses a binary the engine cannot run.
func checkArch(path, goarch string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	if m, ok := want[goarch]; ok && f.Machine != m {
		return fmt.Errorf("built for %v, the engine runs %s", f.Machine, goarch)
	}
	return nil
}

var lddPath = regexp.MustCompile(`(?m)(?:=>\s*|^\s*)(/\S+)\s+\(0x`)

// sharedLibraries lists the absolute paths of binary's loader and
// libraries as this host's ldd resolves them; none for a static binary.
func sharedLibraries(ctx context.Context, binary string) ([]string, error) {
	f, err := elf.Open(binary)
	if err != nil {
		return nil, fmt.Errorf("not an ELF executable: %w", err)
	}
	dynamic := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			dynamic = true
		}
	}
	f.Close()
	if !dynamic {
		return nil, nil
	}
	out, err := exec.CommandContext(ctx, "ldd", binary).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("dynamically linked, and ldd could not list its libraries (%v): %s; build it with CGO_ENABLED=0", err, strings.TrimSpace(string(out)))
	}
	var libs []string
	for _, m := range lddPath.FindAllStringSubmatch(string(out), -1) {
		libs = append(libs, m[1])
	}
	if len(libs) == 0 {
		return nil, fmt.Errorf("ldd listed no libraries: %s", strings.TrimSpace(string(out)))
	}
	return libs, nil
}

// treeSHA256 hashes every file under root, path and content.
func treeSHA256(root string) (string, error) {
	var b strings.Builder
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		sum, err := fileSHA256(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(&b, "%s %s\n", rel, sum)
		return nil
	})
	if err != nil {
		return "", err
	}
	tmp := filepath.Join(filepath.Dir(root), "manifest")
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return "", err
	}
	return fileSHA256(tmp)
}
