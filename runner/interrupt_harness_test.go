//go:build integ

package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valnet/valnet/docker"
	"github.com/valnet/valnet/internal/testbin"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
)

// The interrupt harness: `valnet run` (a static build, so that the docker
// backend takes it into its image as it is) on a small scenario with
// faults, on each backend, signalled at chosen moments; then everything
// the run may have left on the host is looked for. The integ sample and
// make torture (interrupt_integ_test.go) drive it.

// harnessYAML: four validators, one signing over a unix socket, a node
// killed and a validator isolated (the link fabric's proxies listen on
// ports) while the chain runs.
const harnessYAML = `
name: interrupt-harness
chain:
  timeouts: {propose: 300ms, propose_delta: 100ms, prevote: 100ms, prevote_delta: 50ms,
             precommit: 100ms, precommit_delta: 50ms, commit: 100ms}
run: {backend: BACKEND, heights: HEIGHTS, max_duration: 3m}
network:
  latency: 1ms
validators:
  - name: v
    count: 3
  - name: kms
    signer: {type: local, via: unix}
faults:
  - {action: isolate, target: v-2, at: {height: 3}, duration: 3s}
  - {action: node-kill, target: v-3, at: {height: 5}, duration: 2s}
expect:
  - {metric: double_signs, max: 0}
`

// harnessScenario is harnessYAML on backend, to heights.
func harnessScenario(backend string, heights int) string {
	return strings.NewReplacer("BACKEND", backend, "HEIGHTS", strconv.Itoa(heights)).Replace(harnessYAML)
}

// harnessBackends are the backends the harness runs on, with what each
// needs to be there. everyMoment: make integ's sample interrupts it at
// every observed moment; the others skip the runner-side ones (see
// moment.runnerSide), which make torture still tries on every backend.
var harnessBackends = []struct {
	name        string
	need        func(t *testing.T)
	everyMoment bool
}{
	{"inprocess", func(*testing.T) {}, true},
	{"process", func(*testing.T) {}, false},
	{"docker", needDocker, false},
}

// harnessTempBase makes a short private TMPDIR for the runs of a test, so
// that every temp dir and socket they create can be told apart from those
// of other runs on the host (unix socket paths need it short).
func harnessTempBase(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/tmp", "vh-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// valnetProc is one valnet command the harness started.
type valnetProc struct {
	cmd     *exec.Cmd
	dir     string // run directory (--out), "" for other commands
	stderr  *interopBuffer
	started time.Time
	done    chan struct{}
	err     error
	exited  time.Time
	lines   chan string // stderr lines as they come
}

// startValnet starts bin with args, TMPDIR set to tmp.
func startValnet(t *testing.T, bin, tmp, dir string, env []string, args ...string) *valnetProc {
	t.Helper()
	p := &valnetProc{dir: dir, stderr: &interopBuffer{}, done: make(chan struct{}), lines: make(chan string, 1024)}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(append(os.Environ(), "TMPDIR="+tmp), env...)
	pr, pw := io.Pipe()
	p.cmd.Stderr = io.MultiWriter(p.stderr, pw)
	p.cmd.Stdout = io.Discard
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.started = time.Now()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
	}()
	go func() {
		p.err = p.cmd.Wait()
		p.exited = time.Now()
		pw.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *valnetProc) exitCode() int {
	if ee, ok := p.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if p.err != nil {
		return -1
	}
	return 0
}

func (p *valnetProc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// wait waits for the command to exit, at most d.
func (p *valnetProc) wait(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

// moment is when the harness interrupts a run. With trigger set, at that
// observed point of the run: "rundir" (the run directory exists: the
// earliest moment of a run), "node_up" (the first node is up, the others
// still starting), "fault" (the first fault has started), "stop" and
// "report" (the run, ended by itself, holds at the start of that stage,
// see HoldEnv). Otherwise at after,
// measured from the run directory's appearance.
type moment struct {
	name    string
	trigger string
	after   time.Duration
	// second: > 0, a second SIGINT once the run holds at the start of its
	// stop after the first (HoldEnv=stop, a slow stop of holdFor), which
	// it must force; 0: none.
	second time.Duration
	// runnerSide: the moment falls where no backend process or container
	// is up yet (the run directory appears before the backend's Start) or
	// any longer (the report is written after its Stop returned), so what
	// it tests is the runner's, the same on every backend.
	runnerSide bool
}

// interruptResult is what one interrupt did.
type interruptResult struct {
	backend, moment string
	exit            int
	stopReason      string
	stage           string // interrupted_stage, or the CLI's "interrupted during" stage
	sinceSignal     time.Duration
	sinceSecond     time.Duration // exit after the second SIGINT
	leaks           []string
	skipped         string // the run ended before the moment came
}

// runEvents is events.jsonl of dir as text ("" while there is none).
func runEvents(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, EventsFile))
	return string(b)
}

// reached reports whether the run in p has reached trigger.
func reached(p *valnetProc, trigger string) bool {
	switch trigger {
	case "rundir":
		_, err := os.Stat(filepath.Join(p.dir, ScenarioFile))
		return err == nil
	case "node_up":
		return strings.Contains(runEvents(p.dir), `"kind":"node_up"`)
	case "fault":
		ev := runEvents(p.dir)
		return strings.Contains(ev, `"kind":"fault"`) && strings.Contains(ev, `"state":"start"`)
	case eventlog.StageStop, eventlog.StageReport:
		return strings.Contains(p.stderr.String(), HoldEnv+"="+trigger)
	}
	return false
}

// interruptAt runs the harness scenario on backend and interrupts it at m,
// then checks the exit, the summary, valnet report and what was left.
func interruptAt(t *testing.T, bin, backend string, heights int, m moment) interruptResult {
	t.Helper()
	res := interruptResult{backend: backend, moment: m.name}
	var env []string
	switch {
	case m.trigger == eventlog.StageReport || m.trigger == eventlog.StageStop:
		env = append(env, HoldEnv+"="+m.trigger)
	case m.second > 0:
		env = append(env, HoldEnv+"=stop")
	}
	p, tmp, before := startHarnessRun(t, bin, backend, heights, env)
	dir := p.dir
	if awaitMoment(t, p, m).IsZero() {
		t.Fatalf("%s %s: the run directory never appeared: valnet ended (%v) after %v:\n%s",
			backend, m.name, p.err, p.exited.Sub(p.started).Round(time.Millisecond), p.stderr.String())
	}
	if !p.running() {
		res.skipped = "the run ended before the moment"
		res.leaks = leaksOf(t, p, tmp, before)
		return res
	}
	signalled := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var second time.Time
	if m.second > 0 {
		// The stop the first Ctrl-C began is the slow one to force: the
		// run says on stderr when it holds there.
		if !until(2*time.Minute, 20*time.Millisecond, func() bool { return reached(p, eventlog.StageStop) || !p.running() }) {
			t.Fatalf("%s %s: the run never held in its stop after SIGINT:\n%s", backend, m.name, p.stderr.String())
		}
		second = time.Now()
		_ = p.cmd.Process.Signal(syscall.SIGINT)
	}
	if !p.wait(2 * time.Minute) {
		t.Fatalf("%s %s: still running 2 min after SIGINT:\n%s", backend, m.name, p.stderr.String())
	}
	res.sinceSignal = p.exited.Sub(signalled)
	if m.second > 0 {
		res.sinceSecond = p.exited.Sub(second)
		// The slow stop holds holdFor: only the second Ctrl-C ends it
		// sooner.
		if !strings.Contains(p.stderr.String(), "second interrupt") || res.sinceSignal >= holdFor {
			t.Errorf("%s %s: the second Ctrl-C did not force the stop: exit %v after the first, %v after the second\n%s",
				backend, m.name, res.sinceSignal, res.sinceSecond, p.stderr.String())
		}
	}
	res.exit = p.exitCode()
	if res.exit != 2 {
		t.Errorf("%s %s: exit %d after SIGINT, want 2\n%s", backend, m.name, res.exit, p.stderr.String())
	}
	s, raw := readSummary(t, dir)
	if s != nil {
		res.stopReason, res.stage = s.StopReason, s.InterruptedStage
		switch {
		case s.StopReason == eventlog.StopInterrupted && s.InterruptedStage != "":
		case s.StopReason != eventlog.StopInterrupted && strings.Contains(p.stderr.String(), "valnet: interrupted during "):
			// The run had ended by itself; the CLI says where the
			// interrupt came (stopping, writing the report).
			if res.stage == "" {
				res.stage = stageInStderr(p.stderr.String())
			}
		default:
			t.Errorf("%s %s: stop_reason %q, interrupted_stage %q: not an honest interrupt\n%s", backend, m.name,
				s.StopReason, s.InterruptedStage, p.stderr.String())
		}
		// Where each observed moment falls: a fault runs only while the
		// network runs; the run directory exists from setup on, before
		// any node; a node is up from start on.
		wantStages := map[string][]string{
			eventlog.StageReport: {eventlog.StageReport},
			eventlog.StageStop:   {eventlog.StageStop},
			"fault":              {eventlog.StageRun},
			"rundir":             {eventlog.StageSetup, eventlog.StageStart},
			"node_up":            {eventlog.StageStart, eventlog.StageRun},
		}[m.trigger]
		if wantStages != nil && !slices.Contains(wantStages, res.stage) {
			t.Errorf("%s %s: interrupted during %q, want one of %q", backend, m.name, res.stage, wantStages)
		}
		// valnet report rebuilds the same summary from events.jsonl.
		rep := exec.Command(bin, "report", dir)
		rep.Env = append(os.Environ(), "TMPDIR="+tmp)
		out, _ := rep.CombinedOutput()
		if rebuilt, err := os.ReadFile(filepath.Join(dir, SummaryFile)); err != nil || !bytes.Equal(rebuilt, raw) {
			t.Errorf("%s %s: valnet report rebuilt a different summary (%v):\n%s", backend, m.name, err, out)
		}
	} else {
		t.Errorf("%s %s: no readable summary:\n%s", backend, m.name, p.stderr.String())
	}
	res.leaks = leaksOf(t, p, tmp, before)
	return res
}

// startHarnessRun starts `valnet run` of the harness scenario on backend
// in a private TMPDIR, and returns it with that dir and the listeners
// before it.
func startHarnessRun(t *testing.T, bin, backend string, heights int, env []string) (*valnetProc, string, map[uint64]int) {
	t.Helper()
	tmp := harnessTempBase(t)
	work := t.TempDir()
	scenario := filepath.Join(work, "s.yaml")
	if err := os.WriteFile(scenario, []byte(harnessScenario(backend, heights)), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(work, "run")
	before := listenersNow()
	return startValnet(t, bin, tmp, dir, env, "run", scenario, "--out", dir), tmp, before
}

// awaitMoment waits until the run reaches m or exits (3 min at most) and
// returns when its run directory appeared (zero: never).
func awaitMoment(t *testing.T, p *valnetProc, m moment) time.Time {
	t.Helper()
	var appeared time.Time
	if !until(3*time.Minute, 20*time.Millisecond, func() bool {
		if !p.running() {
			return true
		}
		if appeared.IsZero() && reached(p, "rundir") {
			appeared = time.Now()
		}
		return m.trigger != "" && reached(p, m.trigger) || m.trigger == "" && !appeared.IsZero() && time.Since(appeared) >= m.after
	}) {
		t.Fatalf("%s: never reached the moment:\n%s", m.name, p.stderr.String())
	}
	return appeared
}

func stageInStderr(s string) string {
	const k = "valnet: interrupted during "
	i := strings.Index(s, k)
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+len(k):])
	if len(f) == 0 {
		return ""
	}
	return strings.TrimSuffix(f[0], ",")
}

// readSummary reads and decodes summary.json of dir.
func readSummary(t *testing.T, dir string) (*results.Summary, []byte) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		return nil, nil
	}
	var s results.Summary
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Errorf("summary.json: %v", err)
		return nil, raw
	}
	return &s, raw
}

// leaksOf lists what the valnet command p left on the host, waiting up to
// 15 s for it to go (a killed process group is reaped asynchronously):
// processes, docker containers and networks labelled with its pid,
// listeners and unix sockets of the run, entries in its private TMPDIR.
func leaksOf(t *testing.T, p *valnetProc, tmp string, before map[uint64]int) []string {
	t.Helper()
	var left []string
	until(15*time.Second, 200*time.Millisecond, func() bool {
		left = leftNow(t, p, tmp, before)
		return len(left) == 0
	})
	return left
}

func leftNow(t *testing.T, p *valnetProc, tmp string, before map[uint64]int) []string {
	var left []string
	pid := p.cmd.Process.Pid
	if p.dir != "" {
		for _, proc := range processesUnder(t, p.dir) {
			left = append(left, "process "+proc)
		}
	}
	for _, proc := range processesUnder(t, tmp) {
		left = append(left, "process "+proc)
	}
	if dockerAvailable() {
		for _, what := range [][]string{
			{"ps", "-aq", "--filter", "label=" + docker.LabelRunnerPID + "=" + strconv.Itoa(pid)},
			{"network", "ls", "-q", "--filter", "label=" + docker.LabelRunnerPID + "=" + strconv.Itoa(pid)},
		} {
			out, _ := exec.Command("docker", what...).Output()
			for _, id := range strings.Fields(string(out)) {
				left = append(left, "docker "+what[0]+" "+id)
			}
		}
	}
	ports := runPorts(p.dir)
	for inode, port := range listenersNow() {
		if _, old := before[inode]; old {
			continue
		}
		if ports[port] {
			left = append(left, fmt.Sprintf("listener on port %d (recorded by the run)", port))
			continue
		}
		if owner := socketOwner(inode); owner != "" && (strings.Contains(owner, tmp) || p.dir != "" && strings.Contains(owner, p.dir)) {
			left = append(left, fmt.Sprintf("listener on port %d of %s", port, owner))
		}
	}
	for _, path := range unixSocketsUnder(tmp) {
		left = append(left, "unix socket "+path)
	}
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		if e.Name() == "valnet-pids" {
			if regs, _ := os.ReadDir(filepath.Join(tmp, e.Name())); len(regs) == 0 {
				continue // the registry itself, empty
			}
		}
		left = append(left, "temp "+filepath.Join(tmp, e.Name()))
	}
	return left
}

var (
	dockerOnce sync.Once
	dockerOK   bool
)

func dockerAvailable() bool {
	dockerOnce.Do(func() { dockerOK = exec.Command("docker", "version").Run() == nil })
	return dockerOK
}

// runPorts are the ports the run in dir recorded (node_up events).
func runPorts(dir string) map[int]bool {
	ports := map[int]bool{}
	if dir == "" {
		return ports
	}
	_ = eventlog.StreamFile(filepath.Join(dir, EventsFile), func(ev *eventlog.Event) {
		if ev.Kind != eventlog.KindNodeUp {
			return
		}
		for _, a := range []string{ev.RPC, ev.P2P} {
			if i := strings.LastIndexByte(a, ':'); i >= 0 {
				if port, err := strconv.Atoi(a[i+1:]); err == nil {
					ports[port] = true
				}
			}
		}
	})
	return ports
}

// listenersNow maps the inode of every listening TCP socket of the host's
// network namespace to its port (/proc/net/tcp and tcp6).
func listenersNow() map[uint64]int {
	out := map[uint64]int{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 10 || fs[3] != "0A" { // TCP_LISTEN
				continue
			}
			i := strings.LastIndexByte(fs[1], ':')
			port, err1 := strconv.ParseInt(fs[1][i+1:], 16, 32)
			inode, err2 := strconv.ParseUint(fs[9], 10, 64)
			if err1 == nil && err2 == nil {
				out[inode] = int(port)
			}
		}
	}
	return out
}

// socketOwner is the command line of a process holding socket inode.
func socketOwner(inode uint64) string {
	want := fmt.Sprintf("socket:[%d]", inode)
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && l == want {
			pidDir := filepath.Dir(filepath.Dir(fd))
			b, _ := os.ReadFile(filepath.Join(pidDir, "cmdline"))
			return filepath.Base(pidDir) + ": " + string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		}
	}
	return ""
}

// unixSocketsUnder lists bound unix sockets (/proc/net/unix) and socket
// files under dir.
func unixSocketsUnder(dir string) []string {
	var out []string
	b, _ := os.ReadFile("/proc/net/unix")
	for _, line := range strings.Split(string(b), "\n") {
		fs := strings.Fields(line)
		if len(fs) >= 8 && strings.HasPrefix(fs[7], dir+"/") {
			out = append(out, fs[7]+" (bound)")
		}
	}
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type()&os.ModeSocket != 0 {
			out = append(out, path)
		}
		return nil
	})
	return out
}

// harnessBinary is the static valnet the harness runs, built once.
func harnessBinary(t *testing.T) string { return testbin.ValnetStatic(t) }

// spreadMoments are n moments spread evenly from 0 to span, and the
// triggered ones: the earliest, a node starting, a fault, the stop after
// the heights, the report, and a second Ctrl-C during the fault.
func spreadMoments(n int, span time.Duration) []moment {
	ms := []moment{
		{name: "run dir appears", trigger: "rundir", runnerSide: true},
		{name: "first node up (start)", trigger: "node_up"},
		{name: "fault started", trigger: "fault"},
		{name: "stopping, after the heights", trigger: "stop"},
		{name: "report writing", trigger: "report", runnerSide: true},
		{name: "fault + second Ctrl-C", trigger: "fault", second: time.Second},
	}
	for i := 0; i < n; i++ {
		at := span * time.Duration(i) / time.Duration(n)
		ms = append(ms, moment{name: fmt.Sprintf("t+%v", at.Round(10*time.Millisecond)), after: at})
	}
	return ms
}

// baselineSpan runs the scenario uninterrupted once and returns the time
// from the run directory's appearance to the exit.
func baselineSpan(t *testing.T, bin, backend string, heights int) time.Duration {
	t.Helper()
	p, tmp, before := startHarnessRun(t, bin, backend, heights, nil)
	appeared := awaitMoment(t, p, moment{name: "the end", trigger: "none"})
	<-p.done
	if p.exitCode() > 1 || appeared.IsZero() {
		t.Fatalf("%s: baseline run: exit %d\n%s", backend, p.exitCode(), p.stderr.String())
	}
	if left := leaksOf(t, p, tmp, before); len(left) > 0 {
		t.Errorf("%s: the uninterrupted run left:\n%s", backend, strings.Join(left, "\n"))
	}
	return p.exited.Sub(appeared)
}

// interruptMatrix runs the moments on every backend and logs the table;
// it returns the results. out, when set, gets the table in Markdown.
func interruptMatrix(t *testing.T, n, heights int) []interruptResult {
	bin := harnessBinary(t)
	var all []interruptResult
	for _, b := range harnessBackends {
		t.Run(b.name, func(t *testing.T) {
			b.need(t)
			start := time.Now()
			span := baselineSpan(t, bin, b.name, heights)
			if n > 0 {
				// A second, warm run (the first may build the docker
				// image): the spread ends where runs end.
				span = min(span, baselineSpan(t, bin, b.name, heights))
			}
			t.Logf("%s: uninterrupted run %v", b.name, span.Round(time.Millisecond))
			moments := spreadMoments(n, span)
			if n == 0 && !b.everyMoment {
				// make integ's sample: CI's time goes to what differs
				// between backends.
				moments = slices.DeleteFunc(moments, func(m moment) bool { return m.runnerSide })
			}
			for _, m := range moments {
				r := interruptAt(t, bin, b.name, heights, m)
				if len(r.leaks) > 0 {
					t.Errorf("%s, %s: left behind:\n%s", b.name, m.name, strings.Join(r.leaks, "\n"))
				}
				if m.second > 0 && r.skipped == "" && r.sinceSecond > 5*time.Second {
					t.Errorf("%s: exit %v after the second Ctrl-C, want under 5 s", b.name, r.sinceSecond)
				}
				t.Logf("%-10s %-24s exit %d  stop_reason %-11s stage %-6s exited %6v after SIGINT (%v after the second)  leaks %d %s",
					b.name, m.name, r.exit, r.stopReason, r.stage, r.sinceSignal.Round(time.Millisecond), r.sinceSecond.Round(time.Millisecond), len(r.leaks), r.skipped)
				all = append(all, r)
			}
			t.Logf("%s: %d moments in %v", b.name, len(moments), time.Since(start).Round(time.Second))
		})
	}
	if f := os.Getenv("VALNET_TORTURE_TABLE"); f != "" {
		writeInterruptTable(t, f, all)
	}
	return all
}

// writeInterruptTable writes the results as a Markdown table.
func writeInterruptTable(t *testing.T, path string, rs []interruptResult) {
	var b strings.Builder
	fmt.Fprintln(&b, "| backend | moment | exit | stop_reason | stage | exit after SIGINT | after the 2nd | leaks |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		if r.skipped != "" {
			fmt.Fprintf(&b, "| %s | %s | — | (%s) | | | | %d |\n", r.backend, r.moment, r.skipped, len(r.leaks))
			continue
		}
		second := ""
		if r.sinceSecond > 0 {
			second = r.sinceSecond.Round(10 * time.Millisecond).String()
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %v | %s | %d |\n", r.backend, r.moment, r.exit, r.stopReason, r.stage,
			r.sinceSignal.Round(10*time.Millisecond), second, len(r.leaks))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Error(err)
	}
}
