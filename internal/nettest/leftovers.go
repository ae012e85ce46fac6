package nettest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// DeadRunnerDirs sets up the leftovers of a killed runner for a cleanup
// test: a short private TMPDIR (set for the test) holding the run temp
// dir of a runner that is gone (deadDir) and one of a live process
// (liveDir, which a cleanup must keep), with DOCKER_HOST pointing at no
// engine so that no cleanup touches the host's Docker. It skips without
// /proc.
func DeadRunnerDirs(t *testing.T, kind string) (tmp, deadDir, liveDir string) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	tmp, err := os.MkdirTemp("/tmp", "vl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(tmp, "no-engine.sock"))
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadDir = filepath.Join(tmp, fmt.Sprintf("valnet-%s-%d-x", kind, dead.Process.Pid))
	liveDir = filepath.Join(tmp, fmt.Sprintf("valnet-%s-%d-x", kind, os.Getppid()))
	for _, d := range []string{deadDir, liveDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return tmp, deadDir, liveDir
}
