package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cometbft/cometbft/crypto"
	"github.com/valnet/valnet/nodes"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers"
)

// benchWindow is how long each network runs while CPU and memory are
// measured; long enough for ~15 blocks at default timeouts.
const benchWindow = 20 * time.Second

func benchPlan(b *testing.B, n int) *scenarios.Plan {
	plan, err := scenarios.Parse("bench.yaml", fmt.Appendf(nil, `
name: bench-%d
run: {heights: 100000, max_duration: %s}
validators:
  - {name: v, count: %d}
`, n, benchWindow, n))
	if err != nil {
		b.Fatal(err)
	}
	return plan
}

// usage is what the process spent: CPU seconds and Go memory in use.
type usage struct {
	cpu time.Duration
	mem uint64
}

func sampleUsage() usage {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), mem: ms.HeapInuse + ms.StackInuse}
}

// peakMem samples Go memory in use every 500 ms until stop is closed.
func peakMem(stop <-chan struct{}) func() uint64 {
	var (
		mu   sync.Mutex
		peak uint64
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				u := sampleUsage()
				mu.Lock()
				peak = max(peak, u.mem)
				mu.Unlock()
			}
		}
	}()
	return func() uint64 { <-done; return peak }
}

// BenchmarkNetwork compares a valnet run (recorder, event subscriptions,
// instrumented signers) with a plain CometBFT network of the same size
// (same nodes, FilePV signers, nothing recorded), over benchWindow each.
// Reported: time to the first committed block, CPU cores used, Go memory
// per validator, committed blocks.
func BenchmarkNetwork(b *testing.B) {
	for _, n := range []int{4, 10, 25} {
		b.Run(fmt.Sprintf("plain-%d", n), func(b *testing.B) { benchPlain(b, n) })
		b.Run(fmt.Sprintf("valnet-%d", n), func(b *testing.B) { benchValnet(b, n) })
	}
}

func report(b *testing.B, n int, before, after usage, peak uint64, wall, firstBlock time.Duration, blocks int64) {
	b.ReportMetric(firstBlock.Seconds(), "s-first-block")
	b.ReportMetric(float64(after.cpu-before.cpu)/float64(wall), "cpu-cores")
	b.ReportMetric(float64(peak-min(peak, before.mem))/float64(n)/(1<<20), "MB/validator")
	b.ReportMetric(float64(blocks), "blocks")
}

func benchValnet(b *testing.B, n int) {
	for b.Loop() {
		runtime.GC()
		dir := filepath.Join(b.TempDir(), "run")
		before := sampleUsage()
		stop := make(chan struct{})
		peak := peakMem(stop)
		start := time.Now()
		out, err := Run(context.Background(), benchPlan(b, n), Options{OutDir: dir})
		wall := time.Since(start)
		close(stop)
		if err != nil {
			b.Fatal(err)
		}
		after := sampleUsage()
		events, err := eventlog.ReadFile(filepath.Join(dir, EventsFile))
		if err != nil {
			b.Fatal(err)
		}
		var first time.Duration
		for _, e := range events {
			if e.Kind == eventlog.KindBlock {
				first = e.Time.Sub(start)
				break
			}
		}
		report(b, n, before, after, peak(), wall, first, out.Summary.Heights.Last)
	}
}

func benchPlain(b *testing.B, n int) {
	for b.Loop() {
		runtime.GC()
		dir := filepath.Join(b.TempDir(), "run")
		plan := benchPlan(b, n)
		before := sampleUsage()
		stop := make(chan struct{})
		peak := peakMem(stop)
		start := time.Now()
		members, err := layoutNetwork(plan, 1, dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := (&run{plan: plan, seed: 1, members: members}).assignPorts(); err != nil {
			b.Fatal(err)
		}
		var (
			built []*signers.Built
			pubs  []crypto.PubKey
		)
		for _, m := range members {
			s, err := signers.Build(signers.Spec{Type: "local", Key: m.key,
				KeyFile: m.config.PrivValidatorKeyFile(), StateFile: m.config.PrivValidatorStateFile()})
			if err != nil {
				b.Fatal(err)
			}
			built, pubs = append(built, s), append(pubs, s.PubKey)
		}
		gen, err := makeGenesis(plan, members, pubs)
		if err != nil {
			b.Fatal(err)
		}
		var started []nodes.Node
		for i, m := range members {
			spec := nodes.Spec{Name: m.plan.Name, Config: m.config, Genesis: gen, NodeKey: m.nodeKey, Signer: built[i].Signer}
			if err := nodes.WriteHome(spec); err != nil {
				b.Fatal(err)
			}
			node, err := nodes.InProcess{}.Start(context.Background(), spec)
			if err != nil {
				b.Fatal(err)
			}
			started = append(started, node)
		}
		height := func() int64 {
			h := int64(0)
			for _, nd := range started {
				h = max(h, nd.(nodes.HeightReporter).Height(context.Background()))
			}
			return h
		}
		var first time.Duration
		for time.Since(start) < benchWindow {
			if first == 0 && height() >= 1 {
				first = time.Since(start)
			}
			time.Sleep(50 * time.Millisecond)
		}
		blocks := height()
		for _, nd := range started {
			_ = nd.Stop(context.Background())
		}
		for _, s := range built {
			s.Close()
		}
		wall := time.Since(start)
		close(stop)
		after := sampleUsage()
		for _, m := range members {
			releasePorts(m)
		}
		report(b, n, before, after, peak(), wall, first, blocks)
	}
}
