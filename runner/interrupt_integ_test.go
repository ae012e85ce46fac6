//go:build integ

package runner

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// harnessHeights is the harness scenario's length: both faults fall in it.
const harnessHeights = 8

// TestInterruptInteg is make integ's sample of the interrupt harness:
// Ctrl-C as the run directory appears, while the first node is up and the
// others start, during a fault, while the nodes stop after the last
// height, while the report is written, and a second Ctrl-C during a
// fault. In-process takes all six; process and docker the four where
// their nodes are up (the other two are the runner's alone, before the
// backend's Start and after its Stop). make torture takes every moment on
// every backend and adds moments spread over the whole run
// (TestInterruptTorture).
func TestInterruptInteg(t *testing.T) {
	interruptMatrix(t, 0, harnessHeights)
}

// TestInterruptTorture is make torture: the sample's moments and
// VALNET_TORTURE_MOMENTS (default 20) more, spread from 0 to the end of an
// uninterrupted run, on each backend. VALNET_TORTURE_TABLE names a file
// for the results table (docs/reliability.md).
func TestInterruptTorture(t *testing.T) {
	n := 20
	if v := os.Getenv("VALNET_TORTURE_MOMENTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("VALNET_TORTURE_MOMENTS=%q: want a count >= 1", v)
		}
	}
	rs := interruptMatrix(t, n, harnessHeights)
	leaks, tried := 0, 0
	for _, r := range rs {
		leaks += len(r.leaks)
		if r.skipped == "" {
			tried++
		}
	}
	t.Logf("interrupts: %d moments tried across %d backends (%d interrupted, %d came after the run had exited), %d leaks",
		len(rs), len(harnessBackends), tried, len(rs)-tried, leaks)
}

// TestKilledRunnerInteg kills `valnet run` with SIGKILL mid-run on each
// backend, then: valnet report on the partial run directory says it is
// partial, and says which torn last line of events.jsonl it ignored;
// valnet clean --dry-run lists what the dead run left and removes
// nothing; the next valnet run removes it all and says what it removed;
// valnet clean while that run lives touches nothing of it.
func TestKilledRunnerInteg(t *testing.T) {
	bin := harnessBinary(t)
	for _, b := range harnessBackends {
		t.Run(b.name, func(t *testing.T) {
			b.need(t)
			killedRunner(t, bin, b.name)
		})
	}
}

func killedRunner(t *testing.T, bin, backend string) {
	tmp := harnessTempBase(t)
	work := t.TempDir()
	scenario := filepath.Join(work, "s.yaml")
	if err := os.WriteFile(scenario, []byte(harnessScenario(backend, 100000)), 0o644); err != nil {
		t.Fatal(err)
	}
	before := listenersNow()
	dirK := filepath.Join(work, "killed")
	k := startValnet(t, bin, tmp, dirK, nil, "run", scenario, "--out", dirK)
	waitFor(t, k, "fault", 3*time.Minute)
	if err := k.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-k.done
	// Its node processes die with it (parent-death signal). A dying
	// process's /proc cmdline empties before its sockets close (the
	// kernel's do_exit drops the memory map before the files), so once
	// no process shows, wait for what is left to hold still for a
	// second: otherwise the counts below race the last exits (seen on a
	// loaded CI host: 26 things left, 14 a moment later). A container's
	// published ports stay, and are counted.
	var left, procs []string
	reads := 0
	if !until(30*time.Second, time.Second, func() bool {
		prev := left
		left, procs = leftNow(t, k, tmp, before), processesUnder(t, dirK)
		reads++ // the first read (at once) has nothing to compare with
		return reads > 1 && len(procs) == 0 && slices.Equal(stableSorted(prev), stableSorted(left))
	}) {
		t.Fatalf("what the killed runner left did not settle in 30 s:\n%s", strings.Join(append(procs, left...), "\n"))
	}
	if len(left) == 0 {
		t.Fatal("the killed runner left nothing: nothing for the cleanup to prove")
	}
	t.Logf("%s: the killed runner left:\n%s", backend, strings.Join(left, "\n"))
	want := countLeft(left)

	// valnet report on the partial run: exit 2, partial, said in the text.
	out, code := valnetCmd(t, bin, tmp, "report", dirK)
	s, _ := readSummary(t, dirK)
	if code != 2 || s == nil || !s.Partial || !strings.Contains(out, "PARTIAL") {
		t.Fatalf("valnet report on the killed run: exit %d, summary %+v:\n%s", code, s, out)
	}
	// A torn last line (the runner killed mid-write): tolerated, reported.
	events := filepath.Join(dirK, EventsFile)
	data, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.TrimRight(data, "\n")
	lastStart := bytes.LastIndexByte(data, '\n') + 1
	torn := data[:lastStart+(len(data)-lastStart)/2]
	if err := os.WriteFile(events, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = valnetCmd(t, bin, tmp, "report", dirK)
	s, _ = readSummary(t, dirK)
	wantReason := fmt.Sprintf("events.jsonl: last line truncated at byte %d", lastStart)
	if code != 2 || s == nil || !strings.Contains(strings.Join(s.PartialReasons, "\n"), wantReason) || !strings.Contains(out, wantReason) {
		t.Fatalf("torn last line: exit %d, want %q in partial_reasons %q and in:\n%s", code, wantReason, s.PartialReasons, out)
	}

	// valnet clean --dry-run lists, removes nothing.
	out, code = valnetCmd(t, bin, tmp, "clean", "--dry-run")
	if code != 0 {
		t.Fatalf("valnet clean --dry-run: exit %d\n%s", code, out)
	}
	checkCounts(t, "valnet clean --dry-run", out, "would remove", want)
	if again := leftNow(t, k, tmp, before); len(again) != len(left) {
		t.Fatalf("valnet clean --dry-run removed something: %d left of %d:\n%s", len(again), len(left), strings.Join(again, "\n"))
	}

	// The next run removes it all, says so on stderr.
	dirL := filepath.Join(work, "next")
	l := startValnet(t, bin, tmp, dirL, nil, "run", scenario, "--out", dirL)
	waitFor(t, l, "fault", 3*time.Minute)
	checkCounts(t, "the next valnet run's stderr", l.stderr.String(), "removed", want)
	// What the dead runner left is gone (the live run's own temp dirs
	// and processes are in tmp too: only the dead runner's count).
	var dead []string
	for _, x := range leftNow(t, k, tmp, before) {
		if strings.HasPrefix(x, "docker ") || strings.Contains(x, fmt.Sprintf("-%d-", k.cmd.Process.Pid)) {
			dead = append(dead, x)
		}
	}
	if len(dead) > 0 {
		t.Errorf("the next run left the dead run's:\n%s", strings.Join(dead, "\n"))
	}

	// valnet clean while that run lives: none of it is touched.
	liveBefore := stableOf(leftNow(t, l, tmp, before))
	out, code = valnetCmd(t, bin, tmp, "clean")
	if code != 0 || !strings.Contains(out, "no leftovers of dead runs") && !strings.Contains(out, "removed") {
		t.Fatalf("valnet clean: exit %d\n%s", code, out)
	}
	if len(liveBefore) == 0 {
		t.Fatal("the live run has no temp dir, socket or container to protect: the check proves nothing")
	}
	if liveAfter := stableOf(leftNow(t, l, tmp, before)); !slices.Equal(liveAfter, liveBefore) || !l.running() {
		t.Fatalf("valnet clean touched the live run (running %v): before\n%s\nafter\n%s\nclean said:\n%s",
			l.running(), strings.Join(liveBefore, "\n"), strings.Join(liveAfter, "\n"), out)
	}
	if err := l.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if !l.wait(2 * time.Minute) {
		t.Fatal("the next run did not stop after SIGINT")
	}
	if l.exitCode() != 2 {
		t.Errorf("the next run: exit %d after SIGINT, want 2", l.exitCode())
	}
	for _, p := range []*valnetProc{k, l} {
		if leaks := leaksOf(t, p, tmp, before); len(leaks) > 0 {
			t.Errorf("left at the end:\n%s", strings.Join(leaks, "\n"))
		}
	}
}

// stableSorted is left sorted, for comparing two readings.
func stableSorted(left []string) []string {
	out := slices.Clone(left)
	slices.Sort(out)
	return out
}

// stableOf keeps the resources of a live run that stay put while it runs
// (temp dirs, socket files, containers, networks: not listeners and node
// processes, which a node-kill fault replaces), sorted.
func stableOf(left []string) []string {
	var out []string
	for _, x := range left {
		if strings.HasPrefix(x, "docker ") || strings.HasPrefix(x, "temp ") && !strings.Contains(x, "valnet-pids") ||
			strings.HasPrefix(x, "unix socket ") && !strings.HasSuffix(x, "(bound)") {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

// waitFor waits until p reaches trigger (see reached).
func waitFor(t *testing.T, p *valnetProc, trigger string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !reached(p, trigger) {
		if !p.running() || time.Now().After(deadline) {
			t.Fatalf("never reached %s (running %v):\n%s", trigger, p.running(), p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// valnetCmd runs a short valnet command and returns its output and exit.
func valnetCmd(t *testing.T, bin, tmp string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// leftCounts are leftovers by kind, as leftNow describes them.
type leftCounts struct{ containers, networks, tempDirs, sockets int }

func countLeft(left []string) leftCounts {
	var c leftCounts
	for _, x := range left {
		switch {
		case strings.HasPrefix(x, "docker ps "):
			c.containers++
		case strings.HasPrefix(x, "docker network "):
			c.networks++
		case strings.HasPrefix(x, "temp ") && !strings.Contains(x, "valnet-pids"):
			c.tempDirs++
		case strings.HasPrefix(x, "unix socket ") && !strings.HasSuffix(x, "(bound)"):
			c.sockets++
		}
	}
	return c
}

// checkCounts checks the lines "leftovers of dead runs: VERB N KIND" in
// out against what was left: temp dirs and sockets exactly (the runs'
// TMPDIR is private), containers and networks at least (the engine is
// shared: another runner killed meanwhile counts too).
func checkCounts(t *testing.T, what, out, verb string, want leftCounts) {
	t.Helper()
	got := func(kind string) int {
		re := regexp.MustCompile(`leftovers of dead runs: ` + verb + ` (\d+) ` + kind)
		m := re.FindStringSubmatch(out)
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	for _, c := range []struct {
		kind  string
		n     int
		exact bool
	}{
		{"temp dir", want.tempDirs, true},
		{"unix socket", want.sockets, true},
		{"container", want.containers, false},
		{"docker network", want.networks, false},
	} {
		n := got(c.kind)
		if c.exact && n != c.n || !c.exact && n < c.n {
			t.Errorf("%s: %d %s(s), want %d:\n%s", what, n, c.kind, c.n, out)
		}
	}
}
