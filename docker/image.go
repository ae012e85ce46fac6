package docker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	dc "github.com/ory/dockertest/v3/docker"

	"github.com/valnet/valnet/nodes"
)

// ImageRepo is the repository of valnet's node images; the tag is the
// first 12 hex digits of the binary's sha256, so an image is built once
// per binary and reused while that tag exists.
const ImageRepo = "valnet-node"

// BinaryEnv names a static Linux valnet binary for the node image, when
// Options.Binary is empty.
const BinaryEnv = "VALNET_DOCKER_BINARY"

// valnetModule is the module whose ./cmd/valnet is built for the image.
const valnetModule = "github.com/valnet/valnet"

// dockerfile runs `valnet node` from nothing else: no base image to pull.
const dockerfile = `FROM scratch
COPY valnet /valnet
ENTRYPOINT ["/valnet", "node"]
`

// EnsureImage returns the tag of the node image for a valnet binary (as
// Options.Binary; "" finds or builds one), building the image if no image
// has that tag yet; built says whether it did.
func EnsureImage(ctx context.Context, binary string) (tag string, built bool, err error) {
	c, err := connect(ctx, "")
	if err != nil {
		return "", false, err
	}
	return ensureImage(ctx, c, binary, nil)
}

func ensureImage(ctx context.Context, c *dc.Client, binary string, logf func(string, ...any)) (string, bool, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	goos, goarch, err := engineArch(c)
	if err != nil {
		return "", false, err
	}
	// Named by this runner's pid: a killed runner's is cleaned up.
	dir, err := nodes.MkRunTempDir("image")
	if err != nil {
		return "", false, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "valnet")
	if err := resolveBinary(ctx, binary, bin, goos, goarch, logf); err != nil {
		return "", false, err
	}
	sum, err := fileSHA256(bin)
	if err != nil {
		return "", false, err
	}
	tag := ImageRepo + ":" + sum[:12]
	if _, err := c.InspectImage(tag); err == nil {
		return tag, false, nil
	} else if !errors.Is(err, dc.ErrNoSuchImage) {
		return "", false, fmt.Errorf("docker: inspect image %s: %w", tag, err)
	}
	logf("docker: building image %s", tag)
	if err := buildImage(ctx, c, dir, dockerfile, tag, map[string]string{"valnet.image": "node", "valnet.binary.sha256": sum}, logf); err != nil {
		return "", false, err
	}
	pruneImages(c, tag)
	return tag, true, nil
}

// buildImage builds the image tag from dir with dockerfile (written into
// dir) and checks that the engine has it.
func buildImage(ctx context.Context, c *dc.Client, dir, dockerfile, tag string, labels map[string]string, logf func(string, ...any)) error {
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		return err
	}
	start := time.Now()
	var out bytes.Buffer
	err := c.BuildImage(dc.BuildImageOptions{
		Context: ctx, Name: tag, ContextDir: dir, OutputStream: &out,
		RmTmpContainer: true, ForceRmTmpContainer: true, Labels: labels,
	})
	if err != nil {
		return fmt.Errorf("docker: build image %s: %w\n%s", tag, err, tail(out.String(), 2000))
	}
	if _, err := c.InspectImage(tag); err != nil {
		return fmt.Errorf("docker: image %s missing after its build: %w\n%s", tag, err, tail(out.String(), 2000))
	}
	logf("docker: built image %s in %v", tag, time.Since(start).Round(time.Millisecond))
	return nil
}

// engineArch is the OS and architecture of the engine's containers.
func engineArch(c *dc.Client) (goos, goarch string, err error) {
	v, err := c.Version()
	if err != nil {
		return "", "", fmt.Errorf("docker: engine version: %w", err)
	}
	goos, goarch = v.Get("Os"), v.Get("Arch")
	if goos != "linux" {
		return "", "", fmt.Errorf("docker: the engine runs %s containers; valnet's node image is Linux", goos)
	}
	return goos, goarch, nil
}

// SourceDir is the valnet source tree this executable was built from
// (make build sets it with -ldflags -X): an installed valnet run from any
// directory builds the node image's static binary from there.
var SourceDir string

// resolveBinary puts a static valnet binary for goos/goarch at dst: the
// given one, else $VALNET_DOCKER_BINARY, else this executable if it is a
// static Linux valnet, else one built from the valnet module holding the
// working directory or the source tree this executable was built from.
func resolveBinary(ctx context.Context, given, dst, goos, goarch string, logf func(string, ...any)) error {
	if given == "" {
		given = os.Getenv(BinaryEnv)
	}
	if given != "" {
		if err := checkStatic(given, goarch); err != nil {
			return fmt.Errorf("docker: node binary %s: %w", given, err)
		}
		return copyFile(given, dst)
	}
	if exe, err := os.Executable(); err == nil && strings.HasPrefix(filepath.Base(exe), "valnet") && checkStatic(exe, goarch) == nil {
		return copyFile(exe, dst)
	}
	root, modErr := valnetModuleRoot(ctx)
	if modErr != nil && SourceDir != "" {
		var srcErr error
		if root, srcErr = valnetModuleRootAt(ctx, SourceDir); srcErr == nil {
			modErr = nil
		} else {
			modErr = fmt.Errorf("%v; the source tree it was built from: %v", modErr, srcErr)
		}
	}
	if modErr == nil {
		return buildBinary(ctx, root, dst, goos, goarch, logf)
	}
	return fmt.Errorf("docker: no static Linux valnet binary for the node image (%v); run valnet from its source tree "+
		"or build it with make build (it then builds one with CGO_ENABLED=0 from that tree), "+
		"or set %s to a valnet built with CGO_ENABLED=0 GOOS=linux GOARCH=%s", modErr, BinaryEnv, goarch)
}

// checkBinarySource says whether resolveBinary would find a binary, as far
// as that can be told without building one.
func checkBinarySource(ctx context.Context, goarch string) error {
	if given := os.Getenv(BinaryEnv); given != "" {
		if err := checkStatic(given, goarch); err != nil {
			return fmt.Errorf("docker: %s=%s: %w", BinaryEnv, given, err)
		}
		return nil
	}
	if exe, err := os.Executable(); err == nil && strings.HasPrefix(filepath.Base(exe), "valnet") && checkStatic(exe, goarch) == nil {
		return nil
	}
	if _, err := valnetModuleRoot(ctx); err == nil {
		return nil
	}
	if SourceDir != "" {
		if _, err := valnetModuleRootAt(ctx, SourceDir); err == nil {
			return nil
		}
	}
	return fmt.Errorf("docker: no static Linux valnet binary for the node image: run valnet from its source tree or build it with make build, or set %s to a valnet built with CGO_ENABLED=0", BinaryEnv)
}

// valnetModuleRoot is the root of the valnet module holding the working
// directory.
func valnetModuleRoot(ctx context.Context) (string, error) { return valnetModuleRootAt(ctx, "") }

// valnetModuleRootAt is the root of the valnet module holding dir ("": the
// working directory), found as `go env GOMOD` finds it.
func valnetModuleRootAt(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "env", "GOMOD")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("the working directory is in no Go module")
	}
	data, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	first, _, _ := strings.Cut(string(data), "\n")
	if strings.TrimSpace(strings.TrimPrefix(first, "module")) != valnetModule {
		return "", fmt.Errorf("%s is not valnet's module", gomod)
	}
	return filepath.Dir(gomod), nil
}

// buildBinary builds ./cmd/valnet of the module at root, statically (a
// scratch image has no libc). -trimpath keeps the binary, and so the image
// tag, the same from any checkout path.
func buildBinary(ctx context.Context, root, dst, goos, goarch string, logf func(string, ...any)) error {
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", dst, "./cmd/valnet")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("docker: CGO_ENABLED=0 go build ./cmd/valnet in %s: %w\n%s", root, err, tail(string(out), 2000))
	}
	if logf != nil {
		logf("docker: built the node binary in %v", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// checkStatic refuses what cannot run in a scratch image: not a Linux ELF
// of the engine's architecture, or dynamically linked (it has an
// interpreter, which needs a libc the image lacks).
func checkStatic(path, goarch string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386,
		"arm": elf.EM_ARM, "ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV}
	if m, ok := want[goarch]; ok && f.Machine != m {
		return fmt.Errorf("built for %v, the engine runs %s", f.Machine, goarch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked; build it with CGO_ENABLED=0")
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// pruneImageAge is how old another valnet-node image must be before a
// new build removes it.
const pruneImageAge = time.Hour

// pruneImages removes valnet-node images other than keep that are older
// than an hour, so that rebuilding valnet does not pile up 60 MB images.
// Docker refuses to remove an image a container (even a stopped one)
// uses, so no run's image goes; errors are ignored.
func pruneImages(c *dc.Client, keep string) {
	imgs, err := c.ListImages(dc.ListImagesOptions{Filters: map[string][]string{"reference": {ImageRepo}}})
	if err != nil {
		return
	}
	for _, im := range imgs {
		if time.Since(time.Unix(im.Created, 0)) < pruneImageAge {
			continue
		}
		for _, t := range im.RepoTags {
			if t != keep && strings.HasPrefix(t, ImageRepo+":") {
				_ = c.RemoveImage(t)
			}
		}
	}
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}
