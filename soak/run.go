package soak

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/valnet/valnet/internal/atomicfile"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/runner"
)

// Files of a soak directory.
const (
	JSONFile     = "soak.json"
	TextFile     = "soak.txt"
	ScheduleFile = "schedule.yaml"
	// GoroutinesFile holds the stacks of goroutines left after the run.
	GoroutinesFile = "goroutines.txt"
	RunDir         = "run" // the run directory runner.Run writes
)

// Options are how a prepared soak runs.
type Options struct {
	OutDir string
	// Status gets a progress line every StatusEvery (nil: none) and each
	// violation as it is found.
	Status      io.Writer
	StatusEvery time.Duration // 0: 30 s
	NodeCommand []string      // runner.Options.NodeCommand (tests)
	// Command is the command line that reproduces the soak, for the report.
	Command string
}

// Settling after the run: goroutines and descriptors of the run may take
// a moment to go (connections closing, a node's last routine returning).
const (
	pollEvery   = time.Second
	sampleEvery = 5 * time.Second
	settleFor   = 15 * time.Second
	// goroutineSlack: goroutines that may still be on their way out after
	// a run without being a leak (a connection's last read, a timer's).
	goroutineSlack = 4
)

// Run runs the soak: runner.Run with the schedule, watched by a monitor
// that stops the run at the first violated invariant. An error is a run
// that could not be done; violations are in the report.
func (p *Prepared) Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.StatusEvery == 0 {
		opts.StatusEvery = 30 * time.Second
	}
	warmNetpoll()
	fdsBefore, _ := openFDs()
	goBefore := runtime.NumGoroutine() - singletonGoroutines()
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(opts.OutDir, ScheduleFile), []byte(p.scheduleHeader()+ScheduleYAML(p.Schedule)), 0o644); err != nil {
		return nil, err
	}
	runDir := filepath.Join(opts.OutDir, RunDir)
	m := newMonitor(filepath.Join(runDir, runner.EventsFile), len(p.Schedule), p.ResumeWithin)
	defer m.close()

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	type result struct {
		out *runner.Outcome
		err error
	}
	done := make(chan result, 1)
	seed := p.Seed
	go func() {
		out, err := runner.Run(runCtx, p.Plan, runner.Options{OutDir: runDir, Seed: &seed, NodeCommand: opts.NodeCommand})
		done <- result{out, err}
	}()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var res result
	lastSample, lastStatus, reported := time.Time{}, time.Now(), 0
	stoppedBy := ""
loop:
	for {
		select {
		case res = <-done:
			break loop
		case now := <-tick.C:
			m.poll(runCtx, now, true)
			if now.Sub(lastSample) >= sampleEvery {
				m.sample(now)
				lastSample = now
			}
			for _, v := range m.violations[reported:] {
				if opts.Status != nil {
					fmt.Fprintf(opts.Status, "valnet soak: VIOLATION: %s\n", v)
				}
			}
			reported = len(m.violations)
			if reported > 0 && stoppedBy == "" {
				stoppedBy = m.violations[0]
				stop() // the run ends at the first violation; its files say what happened
			}
			if opts.Status != nil && now.Sub(lastStatus) >= opts.StatusEvery {
				lastStatus = now
				fmt.Fprintln(opts.Status, m.statusLine(now, p.Duration))
			}
		}
	}
	// What the run wrote after the last poll; the nodes are gone.
	m.poll(context.Background(), time.Now(), false)
	m.endFinal(time.Now(), stoppedBy != "" || res.err != nil)
	m.close()

	rep := p.report(m, opts, runDir)
	rep.StoppedBy = stoppedBy
	if res.out != nil && res.out.Summary != nil {
		s := res.out.Summary
		rep.StopReason, rep.Heights = s.StopReason, s.Heights.Committed
		rep.LongestStallS, rep.Halts = s.BlockIntervalMS.Max/1000, len(s.Halts)
		// The summary's detector, over the whole stream, is the last word.
		rep.DoubleSigns = max(rep.DoubleSigns, s.DoubleSigns)
		if s.DoubleSigns > len(m.doubleSigns) {
			m.violate("double signs: the run's summary counts %d (%v)", s.DoubleSigns, s.DoubleSignDetails)
		}
	}
	rep.Goroutines.BeforeRun = goBefore
	left := settle(func() int { return runtime.NumGoroutine() - upstreamGoroutines() - singletonGoroutines() }, goBefore+goroutineSlack)
	rep.Goroutines.Upstream = upstreamGoroutines()
	rep.Goroutines.AfterRun = left + rep.Goroutines.Upstream
	if left > goBefore+goroutineSlack || rep.Goroutines.Upstream > 0 {
		stacks := writeGoroutines(filepath.Join(opts.OutDir, GoroutinesFile))
		if left > goBefore+goroutineSlack {
			m.violate("goroutines: %d before the run, %d %v after it ended, %d of them not CometBFT's known leak (their stacks: %s)",
				goBefore, rep.Goroutines.AfterRun, settleFor, left, stacks)
		}
	}
	fdsAfter := fdsBefore
	rep.FDs.Before = len(fdsBefore)
	rep.FDs.After = settle(func() int { fdsAfter, _ = openFDs(); return len(fdsAfter) }, len(fdsBefore))
	for fd, target := range fdsAfter {
		if fdsBefore[fd] != target {
			rep.FDs.Leaked = append(rep.FDs.Leaked, fmt.Sprintf("%s -> %s", fd, target))
		}
	}
	sort.Strings(rep.FDs.Leaked)
	if len(rep.FDs.Leaked) > 0 {
		m.violate("file descriptors: %d open before the run, %d after it: %v", rep.FDs.Before, rep.FDs.After, rep.FDs.Leaked)
	}
	rep.Violations = m.violations
	rep.OK = len(rep.Violations) == 0 && res.err == nil && rep.StopReason == eventlog.StopMaxDuration
	if err := rep.write(opts.OutDir); err != nil {
		return rep, err
	}
	if res.err != nil {
		return rep, fmt.Errorf("the run could not be done: %w", res.err)
	}
	return rep, nil
}

// settle polls count until it is at most want or settleFor has passed,
// and returns its last value.
func settle(count func() int, want int) int {
	deadline := time.Now().Add(settleFor)
	n := count()
	for n > want && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		runtime.GC() // finalizers close what was dropped without Close
		n = count()
	}
	return n
}

// warmNetpoll opens the runtime's network poller (an epoll descriptor and
// its wakeup, kept for the life of the process) before descriptors are
// counted, so that it is not taken for a leak of the run.
func warmNetpoll() {
	if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		l.Close()
	}
}

// openFDs lists this process's open descriptors and what they are.
func openFDs() (map[string]string, error) {
	const dir = "/proc/self/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ents))
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // the descriptor ReadDir itself had open
		}
		out[e.Name()] = target
	}
	return out, nil
}

// scheduleHeader introduces schedule.yaml.
func (p *Prepared) scheduleHeader() string {
	return fmt.Sprintf("# valnet soak: the fault schedule of seed %d, %v, validators %v.\n# Paste it into a scenario (faults: replaces the scenario's) to run it again with valnet run.\n",
		p.Seed, p.Duration, genConfig(p.Config, p.Plan).Validators)
}

// writeGoroutines writes every goroutine's stack to path and returns
// path, or what went wrong.
func writeGoroutines(path string) string {
	err := atomicfile.WriteWith(path, 0o644, func(w io.Writer) error { return pprof.Lookup("goroutine").WriteTo(w, 1) })
	if err != nil {
		return err.Error()
	}
	return path
}

// upstreamLeak marks the goroutines CometBFT v1.0.1 itself leaves behind
// each time a node stops: autofile.Group.Close closes its head file but
// not its AutoFile, whose SIGHUP handler and close routine never return
// (internal/autofile/group.go, autofile.go). In-process nodes share this
// process, so a soak sees two per node incarnation; they are counted and
// reported apart, not taken for a leak of valnet.
const upstreamLeak = "github.com/cometbft/cometbft/internal/autofile."

// singletons are goroutines a process starts once, the first time it
// needs them, and keeps: CometBFT's flow-rate clock and os/signal's
// loop. They are left out of both counts, before and after a run.
var singletons = []string{"github.com/cometbft/cometbft/internal/flowrate.runClockUpdates", "os/signal.loop"}

func singletonGoroutines() int {
	n := 0
	for _, fn := range singletons {
		n += countStacks(goroutineProfile(), fn)
	}
	return n
}

func goroutineProfile() string {
	var b strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		return ""
	}
	return b.String()
}

// upstreamGoroutines counts the goroutines whose stack is upstreamLeak's.
func upstreamGoroutines() int { return countStacks(goroutineProfile(), upstreamLeak) }

// countStacks counts the goroutines of a goroutine profile (debug=1: a
// "goroutine profile: total N" line, then blocks of "COUNT @ PCS" and
// "#\tPC\tFUNC\tFILE:LINE" lines) whose stack mentions fn.
func countStacks(profile, fn string) int {
	_, body, _ := strings.Cut(profile, "\n")
	n := 0
	for _, block := range strings.Split(body, "\n\n") {
		head, _, _ := strings.Cut(block, "\n")
		count, _, ok := strings.Cut(head, " @ ")
		if !ok || !strings.Contains(block, fn) {
			continue
		}
		if c, err := strconv.Atoi(count); err == nil {
			n += c
		}
	}
	return n
}
