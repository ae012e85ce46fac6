package nodes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Short-lived directories of a run (event and signer sockets, the docker
// backend's socket dir) live in the temp dir, since unix socket paths are
// limited to ~108 bytes. Their names carry the runner's pid, so that a
// later run can remove what a killed runner left:
// valnet-<kind>-<pid>-<random>.

// maxTempBase is the longest temp dir a socket path is built on: base,
// /valnet-<kind>-<pid>-<random> (about 30) and a file name of up to 35
// (docker's <hash>.events.sock is 24) stay under the 108 bytes of a unix
// socket address.
const maxTempBase = 40

// shortTempBase is the temp dir, or /tmp when TMPDIR is too deep for a
// socket path.
func shortTempBase() string {
	if base := os.TempDir(); len(base) <= maxTempBase {
		return base
	}
	return "/tmp"
}

// MkRunTempDir creates a directory valnet-<kind>-<pid>-* for this runner.
func MkRunTempDir(kind string) (string, error) {
	return os.MkdirTemp(shortTempBase(), fmt.Sprintf("valnet-%s-%d-", kind, os.Getpid()))
}

// CleanStaleTempDirs removes run temp directories whose runner is gone.
func CleanStaleTempDirs() error {
	dirs, err := StaleTempDirs()
	errs := []error{err}
	for _, dir := range dirs {
		if err := os.RemoveAll(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// StaleTempDirs lists the run temp directories whose runner is gone: no
// process runs under the pid in the name. (A live process under that pid
// keeps the dir, even one that reused the pid: a live run's dir is never
// touched.)
func StaleTempDirs() ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(shortTempBase(), "valnet-*-*-*"))
	if err != nil {
		return nil, err
	}
	var stale []string
	for _, dir := range matches {
		parts := strings.SplitN(filepath.Base(dir), "-", 4)
		if len(parts) != 4 {
			continue
		}
		pid, err := strconv.Atoi(parts[2])
		if err != nil || pid <= 0 || pid == os.Getpid() || ProcessAlive(pid, 0) {
			continue
		}
		stale = append(stale, dir)
	}
	return stale, nil
}
