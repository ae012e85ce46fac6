package sim_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"

	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/runner"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/sim"
)

// The sim's speed goals on a 2-core machine, at CometBFT's default
// timeouts over a full mesh of plain links (docs/bench.md, "sim"):
// 175 validators x 1,000 heights in 10 s, 1,000 x 100 in 30 s,
// 4 x 10,000 in 2 s. Each size runs at two layers: the model alone
// (Simulate into a sink that encodes every event as eventlog.Writer does,
// or into one that drops them) and end to end (runner.Run into a run
// directory: events.jsonl written, then read back for the summary and
// reports). Reported (measure): wall and CPU seconds a run, events and
// MB a run, peak Go heap, with -benchmem the allocations.
var simSizes = []struct {
	validators int
	heights    int64
	goal       time.Duration
}{
	{175, 1000, 10 * time.Second},
	{1000, 100, 30 * time.Second},
	{4, 10000, 2 * time.Second},
}

func benchPlan(tb testing.TB, validators int, heights int64) *scenarios.Plan {
	tb.Helper()
	plan, err := scenarios.Parse("bench.yaml", fmt.Appendf(nil, `
name: sim-bench-%d
run: {backend: sim, heights: %d, max_duration: 1000h}
validators:
  - {name: v, count: %d}
`, validators, heights, validators))
	if err != nil {
		tb.Fatal(err)
	}
	return plan
}

// simInputs are what the runner hands Simulate: the validators' keys and
// the run_start event.
func simInputs(plan *scenarios.Plan) ([]crypto.PubKey, eventlog.Event) {
	keys := make([]crypto.PubKey, len(plan.Validators))
	infos := make([]eventlog.ValidatorInfo, len(plan.Validators))
	for i, v := range plan.Validators {
		keys[i] = ed25519.GenPrivKeyFromSecret([]byte(v.Name)).PubKey()
		infos[i] = eventlog.ValidatorInfo{Name: v.Name, Address: keys[i].Address().String(), Power: v.Power}
	}
	return keys, eventlog.Event{Kind: eventlog.KindRunStart, Scenario: plan.Name, Backend: sim.Backend{}.Name(),
		ChainID: plan.ChainID, Seed: plan.Run.Seed, Heights: plan.Run.Heights, Validators: infos}
}

// discardSink counts events and drops them.
type discardSink struct{ events int64 }

func (s *discardSink) Emit(eventlog.Event) { s.events++ }

// encodeSink encodes every event as eventlog.Writer does
// (eventlog.EncodeEvent, one line into a buffer handed on at 64 KiB) and
// keeps the bytes when keep is set.
type encodeSink struct {
	events, bytes int64
	buf           []byte
	keep          *bytes.Buffer
}

func (s *encodeSink) Emit(e eventlog.Event) {
	line, err := eventlog.EncodeEvent(&e)
	if err != nil {
		panic(err)
	}
	s.events++
	s.buf = append(append(s.buf, line...), '\n')
	if len(s.buf) >= 64<<10 {
		s.flush()
	}
}

func (s *encodeSink) flush() {
	s.bytes += int64(len(s.buf))
	if s.keep != nil {
		s.keep.Write(s.buf)
	}
	s.buf = s.buf[:0]
}

// heapPeak samples the Go heap's live and not yet swept objects every
// 10 ms until stopped; it returns the largest it saw.
func heapPeak() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	var (
		peak uint64
		done = make(chan struct{})
		quit = make(chan struct{})
		once sync.Once
	)
	go func() {
		defer close(done)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		once.Do(func() { close(quit) })
		<-done
		return max(peak, read())
	}
}

func simulate(tb testing.TB, plan *scenarios.Plan, seed int64, sink interface{ Emit(eventlog.Event) }) string {
	tb.Helper()
	keys, start := simInputs(plan)
	reason, err := sim.Backend{}.Simulate(context.Background(), plan, seed, keys, start, sink)
	if err != nil {
		tb.Fatal(err)
	}
	if reason != eventlog.StopHeights {
		tb.Fatalf("stopped by %q, not by reaching the heights", reason)
	}
	return reason
}

func sizeName(validators int, heights int64) string {
	return fmt.Sprintf("v%d_h%d", validators, heights)
}

// measure runs one b.N loop of run (which returns the events it wrote
// and their bytes, 0 when not encoded) and reports the wall and CPU
// seconds of one run next to the goal's, events and bytes per run and
// the peak Go heap. The CPU time is the process's: on a machine shared
// with other work, wall time above it is time spent waiting for a core.
func measure(b *testing.B, goal time.Duration, run func(i int) (events, size int64)) {
	b.ReportAllocs()
	runtime.GC()
	peak := heapPeak()
	var events, size int64
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := range b.N {
		events, size = run(i)
	}
	b.StopTimer()
	elapsed, cpu := b.Elapsed(), cpuTime()-cpu0
	n := float64(b.N)
	b.ReportMetric(elapsed.Seconds()/n, "s/run")
	b.ReportMetric(cpu.Seconds()/n, "cpu-s/run")
	b.ReportMetric(goal.Seconds(), "goal-s")
	b.ReportMetric(float64(events), "events/run")
	if size > 0 {
		b.ReportMetric(float64(size)/1e6, "MB/run")
	}
	b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MiB")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSimModel is the model alone: Simulate into a sink that
// encodes every event as the writer does (encode; MB/run is the JSON
// written) or drops it (discard).
func BenchmarkSimModel(b *testing.B) {
	for _, sz := range simSizes {
		plan := benchPlan(b, sz.validators, sz.heights)
		for _, mode := range []string{"encode", "discard"} {
			b.Run(sizeName(sz.validators, sz.heights)+"/"+mode, func(b *testing.B) {
				measure(b, sz.goal, func(int) (int64, int64) {
					if mode == "discard" {
						s := &discardSink{}
						simulate(b, plan, plan.Run.Seed, s)
						return s.events, 0
					}
					s := &encodeSink{buf: make([]byte, 0, 64<<10)}
					simulate(b, plan, plan.Run.Seed, s)
					s.flush()
					return s.events, s.bytes
				})
			})
		}
	}
}

// BenchmarkSimEndToEnd is a whole run through runner.Run into a temp run
// directory: the recorder, events.jsonl (MB/run), the summary and every
// report.
func BenchmarkSimEndToEnd(b *testing.B) {
	for _, sz := range simSizes {
		plan := benchPlan(b, sz.validators, sz.heights)
		b.Run(sizeName(sz.validators, sz.heights), func(b *testing.B) {
			measure(b, sz.goal, func(i int) (int64, int64) {
				dir := filepath.Join(b.TempDir(), fmt.Sprint("run", i))
				out, err := runner.Run(context.Background(), plan, runner.Options{OutDir: dir})
				if err != nil {
					b.Fatal(err)
				}
				if out.Summary.StopReason != eventlog.StopHeights {
					b.Fatalf("stopped by %q", out.Summary.StopReason)
				}
				b.StopTimer()
				defer b.StartTimer()
				data, err := os.ReadFile(filepath.Join(dir, runner.EventsFile))
				if err != nil {
					b.Fatal(err)
				}
				defer os.RemoveAll(dir)
				return int64(bytes.Count(data, []byte{'\n'})), int64(len(data))
			})
		})
	}
}

// BenchmarkSimMemoryFlat checks that the model's memory does not grow
// with heights: the live heap (after a GC, the model still running) at
// height 1,000 and at 10,000 of one 4-validator run. flat-ratio is the
// second over the first; about 1 means flat.
func BenchmarkSimMemoryFlat(b *testing.B) {
	plan := benchPlan(b, 4, 10000)
	for range b.N {
		s := &heapAtHeights{at: map[int64]uint64{1000: 0, 10000: 0}}
		simulate(b, plan, plan.Run.Seed, s)
		b.ReportMetric(float64(s.at[1000])/(1<<10), "live-KiB@h1000")
		b.ReportMetric(float64(s.at[10000])/(1<<10), "live-KiB@h10000")
		b.ReportMetric(float64(s.at[10000])/float64(s.at[1000]), "flat-ratio")
	}
}

// heapAtHeights drops events and, when the block of a height in at is
// emitted, collects garbage and keeps the live heap.
type heapAtHeights struct {
	at map[int64]uint64
}

func (s *heapAtHeights) Emit(e eventlog.Event) {
	if e.Kind != eventlog.KindBlock {
		return
	}
	if _, ok := s.at[e.Height]; ok {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s.at[e.Height] = ms.HeapAlloc
	}
}
