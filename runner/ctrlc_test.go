package runner

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/valnet/valnet/nodes"
)

// processesUnder lists live processes whose command line mentions dir.
func processesUnder(t *testing.T, dir string) []string {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var found []string
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if cmd := string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})); strings.Contains(cmd, dir) {
			found = append(found, filepath.Base(filepath.Dir(p))+": "+cmd)
		}
	}
	return found
}

// TestCtrlCLeavesNoChildProcess interrupts `valnet run` with the process
// backend once its nodes are up: it must exit with code 2, write its
// summary, and leave no node process behind.
func TestCtrlCLeavesNoChildProcess(t *testing.T) {
	bin := valnetBinary(t)
	work := t.TempDir()
	scenario := filepath.Join(work, "s.yaml")
	yaml := strings.Replace(processYAML, "heights: 14", "heights: 100000", 1)
	yaml = yaml[:strings.Index(yaml, "faults:")] + "expect:\n  - {metric: double_signs, max: 0}\n"
	if err := os.WriteFile(scenario, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(work, "run")
	showLogsOnFailure(t, dir)
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "run", scenario, "--out", dir)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !until(2*time.Minute, 100*time.Millisecond, func() bool {
		_, err := os.Stat(filepath.Join(dir, NetworkFile))
		return err == nil
	}) {
		cmd.Process.Kill()
		t.Fatalf("network never came up:\n%s", stderr.String())
	}
	if n := len(processesUnder(t, filepath.Join(dir, NodesDir))); n != 4 {
		t.Errorf("%d node processes running, want 4", n)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Errorf("exit after Ctrl-C: %v, want code 2\n%s", err, stderr.String())
	}
	if left := processesUnder(t, dir); len(left) > 0 {
		t.Errorf("processes left after Ctrl-C:\n%s", strings.Join(left, "\n"))
	}
	if _, err := os.Stat(filepath.Join(dir, SummaryFile)); err != nil {
		t.Errorf("no summary after Ctrl-C: %v", err)
	}
}

// TestKilledRunnerLeavesNoNode kills `valnet run` with SIGKILL: its node
// processes die with it (parent-death signal).
func TestKilledRunnerLeavesNoNode(t *testing.T) {
	bin := valnetBinary(t)
	work := t.TempDir()
	scenario := filepath.Join(work, "s.yaml")
	yaml := strings.Replace(processYAML, "heights: 14", "heights: 100000", 1)
	yaml = yaml[:strings.Index(yaml, "faults:")]
	if err := os.WriteFile(scenario, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(work, "run")
	cmd := exec.Command(bin, "run", scenario, "--out", dir, "--quiet")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !until(2*time.Minute, 100*time.Millisecond, func() bool {
		return len(processesUnder(t, filepath.Join(dir, NodesDir))) >= 4
	}) {
		cmd.Process.Kill()
		t.Fatal("nodes never came up")
	}
	cmd.Process.Kill()
	cmd.Wait()
	// The kernel delivers the parent-death signal; the nodes then exit.
	var left []string
	if !until(30*time.Second, 100*time.Millisecond, func() bool {
		left = processesUnder(t, filepath.Join(dir, NodesDir))
		return len(left) == 0
	}) {
		t.Fatalf("node processes outlived their killed runner:\n%s", strings.Join(left, "\n"))
	}
	// Its socket directories stay until the next run cleans them.
	pattern := filepath.Join(os.TempDir(), fmt.Sprintf("valnet-*-%d-*", cmd.Process.Pid))
	if stale, _ := filepath.Glob(pattern); len(stale) == 0 {
		t.Fatal("expected the killed runner's socket directories (the test checks their cleanup)")
	}
	if _, err := nodes.CleanOrphans(); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(pattern); len(left) > 0 {
		t.Errorf("the next run's cleanup left %v", left)
	}
}
