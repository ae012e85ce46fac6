package sim_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
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
			measure(b, sz.goal, func(i int) (int64, int64) { return endToEnd(b, plan, i) })
		})
	}
}

// The sim's speed on the shapes of real chains (docs/bench.md, "sim"):
// not a full mesh of plain links, where every vote takes the quiet path
// (quiet.go), but a random topology of ~20 peers a node over the 13
// regions of CometBFT's latency matrix (1-161 ms one way, 5 % jitter),
// and a network with faults. Each runs at the same two layers as
// simSizes: the model alone (encode, discard) and end to end.
var simShapes = []struct {
	name string
	plan func(testing.TB) *scenarios.Plan
	goal time.Duration
}{
	// the built-in, at 1,000 heights instead of its 300
	{"global175_h1000", func(tb testing.TB) *scenarios.Plan {
		return builtinPlan(tb, "sim-global-175", scenarios.Setting{Path: "run.heights", Value: "1000"})
	}, 10 * time.Second},
	{"random1000_zones_h100", func(tb testing.TB) *scenarios.Plan {
		return parsePlan(tb, "random1000.yaml", shapeYAML("sim-random-1000", 1000, 100, "topology: {random: 10}", "", ""))
	}, 60 * time.Second},
	// a full mesh over the regions: faults keep the quiet path off. A
	// slow signer throughout, and a partition of the Americas from the
	// rest at height 300 (neither side holds +2/3: the chain halts
	// until the heal 20 s later).
	{"partition_slow175_zones_h1000", func(tb testing.TB) *scenarios.Plan {
		return parsePlan(tb, "partition175.yaml", shapeYAML("sim-partition-175", 175, 1000, "",
			"  - name: slow\n    signer: {latency: 300ms}\n",
			"faults:\n  - {action: partition, at: {height: 300}, duration: 20s, groups: "+partitionGroups(175)+"}\n"))
	}, 15 * time.Second},
}

func builtinPlan(tb testing.TB, name string, set ...scenarios.Setting) *scenarios.Plan {
	tb.Helper()
	plan, err := scenarios.ResolveWith(name, scenarios.Overrides{Set: set})
	if err != nil {
		tb.Fatal(err)
	}
	return plan
}

func parsePlan(tb testing.TB, name, text string) *scenarios.Plan {
	tb.Helper()
	plan, err := scenarios.Parse(name, []byte(text))
	if err != nil {
		tb.Fatal(err)
	}
	return plan
}

// shapeRegions are the matrix's 13 regions; shapeYAML puts the
// validators into them in contiguous blocks, as sim-global-175 does.
var shapeRegions = []string{"us-east-1", "ca-central-1", "us-west-1", "eu-west-2", "us-west-2", "eu-west-1",
	"eu-central-1", "sa-east-1", "ap-northeast-1", "ap-south-1", "ap-southeast-2", "ap-northeast-2", "ap-southeast-1"}

// shapeNames are the validators of a shape of n: slow (when first is
// given) and v-1 .. v-(n-1), or v-1 .. v-n.
func shapeNames(n int, slow bool) []string {
	var names []string
	k := n
	if slow {
		names, k = append(names, "slow"), n-1
	}
	for i := 1; i <= k; i++ {
		names = append(names, fmt.Sprint("v-", i))
	}
	return names
}

// shapeYAML is a scenario of n validators over shapeRegions; topology
// is a network: line ("" a full mesh), first a validators: entry put
// before the others, faults a faults: block.
func shapeYAML(name string, n int, heights int64, topology, first, faults string) string {
	names := shapeNames(n, first != "")
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nrun: {backend: sim, heights: %d, max_duration: 1000h}\nnetwork:\n", name, heights)
	if topology != "" {
		fmt.Fprintf(&b, "  %s\n", topology)
	}
	b.WriteString("  zones:\n")
	for r, region := range shapeRegions {
		lo, hi := r*len(names)/len(shapeRegions), (r+1)*len(names)/len(shapeRegions)
		fmt.Fprintf(&b, "    %s: [%s]\n", region, strings.Join(names[lo:hi], ", "))
	}
	b.WriteString("validators:\n" + first)
	fmt.Fprintf(&b, "  - {name: v, count: %d}\n", len(names)-boolInt(first != ""))
	b.WriteString(faults)
	return b.String()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// partitionGroups cuts the Americas (the first three regions, Oregon
// and Sao Paulo) of a shape of n (with slow) from the rest.
func partitionGroups(n int) string {
	names := shapeNames(n, true)
	var west, rest []string
	for r := range shapeRegions {
		lo, hi := r*n/len(shapeRegions), (r+1)*n/len(shapeRegions)
		switch r {
		case 0, 1, 2, 4, 7:
			west = append(west, names[lo:hi]...)
		default:
			rest = append(rest, names[lo:hi]...)
		}
	}
	return "[[" + strings.Join(west, ", ") + "], [" + strings.Join(rest, ", ") + "]]"
}

// BenchmarkSimShapes runs simShapes: the model alone (encode, discard)
// and end to end (runner.Run, as BenchmarkSimEndToEnd).
func BenchmarkSimShapes(b *testing.B) {
	for _, sh := range simShapes {
		plan := sh.plan(b)
		for _, mode := range []string{"model-encode", "model-discard", "end-to-end"} {
			b.Run(sh.name+"/"+mode, func(b *testing.B) {
				measure(b, sh.goal, func(i int) (int64, int64) {
					switch mode {
					case "model-discard":
						s := &discardSink{}
						simulate(b, plan, plan.Run.Seed, s)
						return s.events, 0
					case "model-encode":
						s := &encodeSink{buf: make([]byte, 0, 64<<10)}
						simulate(b, plan, plan.Run.Seed, s)
						s.flush()
						return s.events, s.bytes
					}
					return endToEnd(b, plan, i)
				})
			})
		}
	}
}

// endToEnd is run i of plan through runner.Run into a temp run
// directory; it returns the events and bytes of events.jsonl (counted
// off the clock).
func endToEnd(b *testing.B, plan *scenarios.Plan, i int) (int64, int64) {
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
}

// BenchmarkSimMemoryFlat checks that the model's memory does not grow
// with heights: the live heap (after a GC, the model still running) at
// height 1,000 and at 10,000 of one run, a 4-validator mesh and 40
// validators over the 13 regions on a random topology (the gossip
// routines' state, gossip.go). flat-ratio is the second over the first;
// about 1 means flat.
func BenchmarkSimMemoryFlat(b *testing.B) {
	for _, tc := range []struct {
		name string
		plan *scenarios.Plan
	}{
		{"mesh4", benchPlan(b, 4, 10000)},
		{"random40_zones", parsePlan(b, "random40.yaml", shapeYAML("sim-random-40", 40, 10000, "topology: {random: 5}", "", ""))},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				s := &heapAtHeights{at: map[int64]uint64{1000: 0, 10000: 0}}
				simulate(b, tc.plan, tc.plan.Run.Seed, s)
				b.ReportMetric(float64(s.at[1000])/(1<<10), "live-KiB@h1000")
				b.ReportMetric(float64(s.at[10000])/(1<<10), "live-KiB@h10000")
				b.ReportMetric(float64(s.at[10000])/float64(s.at[1000]), "flat-ratio")
			}
		})
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
