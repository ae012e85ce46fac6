package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cometbft/cometbft/abci/example/kvstore"
	cfg "github.com/cometbft/cometbft/config"
	"github.com/cometbft/cometbft/crypto"
	cmtlog "github.com/cometbft/cometbft/libs/log"
	"github.com/cometbft/cometbft/node"
	"github.com/cometbft/cometbft/privval"
	"github.com/cometbft/cometbft/proxy"

	"github.com/valnet/valnet/internal/testbin"
	"github.com/valnet/valnet/nodes"
	"github.com/valnet/valnet/scenarios"
)

// The overhead benchmark runs each network in a child process of this
// test binary, so CPU time and peak RSS are the kernel's figures for that
// network alone (wait4 rusage), not a share of one Go heap.
const (
	overheadChildEnv = "VALNET_OVERHEAD_CHILD" // "bare" or "valnet"
	overheadDirEnv   = "VALNET_OVERHEAD_DIR"
	overheadSizeEnv  = "VALNET_OVERHEAD_N"
	overheadHeapEnv  = "VALNET_OVERHEAD_HEAP" // write heap profiles here every second (for pprof)
	overheadHeights  = 20
)

// heapProfiles overwrites a heap profile at path every second, so the last
// one shows what was in use near the end of the run.
func heapProfiles(ctx context.Context, path string) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if f, err := os.Create(path + ".tmp"); err == nil {
				_ = pprof.WriteHeapProfile(f)
				f.Close()
				_ = os.Rename(path+".tmp", path)
			}
		}
	}
}

// overheadChild runs the child side when this test binary was started as
// one; it reports whether it did.
func overheadChild() bool {
	kind := os.Getenv(overheadChildEnv)
	if kind == "" {
		return false
	}
	n, _ := strconv.Atoi(os.Getenv(overheadSizeEnv))
	dir := os.Getenv(overheadDirEnv)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if path := os.Getenv(overheadHeapEnv); path != "" {
		go heapProfiles(ctx, path)
	}
	var err error
	switch kind {
	case "bare":
		err = bareNetwork(ctx, n, overheadHeights, dir)
	case "valnet":
		var out *Outcome
		if out, err = Run(ctx, overheadPlan(n, overheadHeights), Options{OutDir: dir}); err == nil && !out.Summary.OK {
			err = errors.New("the run's expectations failed")
		}
	default:
		err = fmt.Errorf("unknown child %q", kind)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "overhead child:", err)
		os.Exit(1)
	}
	return true
}

// overheadPlan: n validators at default timeouts, run to `heights`.
func overheadPlan(n, heights int) *scenarios.Plan {
	plan, err := scenarios.Parse("overhead.yaml", overheadYAML(n, heights))
	if err != nil {
		panic(err)
	}
	return plan
}

func overheadYAML(n, heights int) []byte {
	return fmt.Appendf(nil, `
name: overhead-%d
run: {heights: %d, max_duration: 5m}
validators:
  - {name: v, count: %d}
expect:
  - {metric: heights_committed, min: %d}
`, n, heights, n, heights)
}

// bareNetwork starts the same n nodes valnet would (the same homes,
// config, keys, genesis and peers; pebbledb on disk, RPC on, logs to
// node.log) as stock CometBFT nodes: CometBFT's FilePV, its default DB
// provider, no event subscriptions, no signer chain, no recorder. It
// returns when the block after `heights` is committed, as valnet's run
// does.
func bareNetwork(ctx context.Context, n, heights int, dir string) error {
	plan := overheadPlan(n, heights)
	members, err := layoutNetwork(plan, plan.Run.Seed, dir, nil)
	if err != nil {
		return err
	}
	if err := (&run{plan: plan, seed: plan.Run.Seed, members: members}).assignPorts(); err != nil {
		return err
	}
	pvs := make([]*privval.FilePV, len(members))
	pubs := make([]crypto.PubKey, len(members))
	for i, m := range members {
		if err := os.MkdirAll(filepath.Dir(m.config.PrivValidatorStateFile()), 0o700); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(m.config.PrivValidatorKeyFile()), 0o700); err != nil {
			return err
		}
		pvs[i] = privval.NewFilePV(m.key, m.config.PrivValidatorKeyFile(), m.config.PrivValidatorStateFile())
		pvs[i].Save()
		pubs[i] = m.key.PubKey()
	}
	gen, err := makeGenesis(plan, members, pubs)
	if err != nil {
		return err
	}
	var started []*node.Node
	defer func() {
		for _, nd := range started {
			_ = nd.Stop()
			nd.Wait()
		}
	}()
	for i, m := range members {
		if err := nodes.WriteHome(nodes.Spec{Name: m.plan.Name, Config: m.config, Genesis: gen, NodeKey: m.nodeKey}); err != nil {
			return err
		}
		logFile, err := os.Create(filepath.Join(m.config.RootDir, "node.log"))
		if err != nil {
			return err
		}
		defer logFile.Close()
		level, err := cmtlog.AllowLevel(m.config.LogLevel)
		if err != nil {
			return err
		}
		logger := cmtlog.NewFilter(cmtlog.NewTMLogger(cmtlog.NewSyncWriter(logFile)), level)
		nd, err := node.NewNode(ctx, m.config, pvs[i], m.nodeKey,
			proxy.NewLocalClientCreator(kvstore.NewInMemoryApplication()),
			node.DefaultGenesisDocProviderFunc(m.config), cfg.DefaultDBProvider,
			node.DefaultMetricsProvider(m.config.Instrumentation), logger)
		if err != nil {
			return fmt.Errorf("node %s: %w", m.plan.Name, err)
		}
		if err := nd.Start(); err != nil {
			return fmt.Errorf("node %s: %w", m.plan.Name, err)
		}
		started = append(started, nd)
	}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			for _, nd := range started {
				if nd.BlockStore().Height() > int64(heights) {
					return nil
				}
			}
		}
	}
}

// childUsage runs one network in a child process and returns its CPU time
// (user+system) and peak RSS.
func childUsage(b *testing.B, kind string, n int) (cpu time.Duration, rssMB float64) {
	var cmd *exec.Cmd
	if kind == "command" {
		// The whole command a user types, reports and all: the built
		// binary on the same scenario.
		file := filepath.Join(b.TempDir(), "overhead.yaml")
		if err := os.WriteFile(file, overheadYAML(n, overheadHeights), 0o644); err != nil {
			b.Fatal(err)
		}
		cmd = exec.Command(testbin.Valnet(b), "run", file, "--out", filepath.Join(b.TempDir(), kind))
	} else {
		exe, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		cmd = exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), overheadChildEnv+"="+kind, overheadSizeEnv+"="+strconv.Itoa(n),
			overheadDirEnv+"="+filepath.Join(b.TempDir(), kind))
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s network of %d: %v\n%s", kind, n, err, out)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), float64(ru.Maxrss) / 1024
}

// BenchmarkOverhead is valnet's own cost beside the same bare CometBFT
// network: n validators × 20 heights at default timeouts, each in its own
// process, alternating bare and valnet `rounds` times; the medians' ratios
// are reported (cpu-ratio, mem-ratio; goal ≤ 1.05 and ≤ 1.10).
func BenchmarkOverhead(b *testing.B) {
	const rounds = 3
	for _, n := range []int{10} {
		b.Run(fmt.Sprintf("validators-%d", n), func(b *testing.B) {
			for b.Loop() {
				var bareCPU, valCPU, cmdCPU []time.Duration
				var bareMem, valMem, cmdMem []float64
				for range rounds {
					c, m := childUsage(b, "bare", n)
					bareCPU, bareMem = append(bareCPU, c), append(bareMem, m)
					c, m = childUsage(b, "valnet", n)
					valCPU, valMem = append(valCPU, c), append(valMem, m)
					c, m = childUsage(b, "command", n)
					cmdCPU, cmdMem = append(cmdCPU, c), append(cmdMem, m)
				}
				bc, vc, cc := median(bareCPU), median(valCPU), median(cmdCPU)
				bm, vm, cm := median(bareMem), median(valMem), median(cmdMem)
				b.ReportMetric(float64(cc)/float64(bc), "command-cpu-ratio")
				b.ReportMetric(cm/bm, "command-mem-ratio")
				fmt.Printf("overhead %d validators × %d heights, the whole valnet run command (reports included): CPU command/bare %.3f (%.2fs / %.2fs), peak RSS command/bare %.3f (%.0f / %.0f MB); runs %v\n",
					n, overheadHeights, float64(cc)/float64(bc), cc.Seconds(), bc.Seconds(), cm/bm, cm, bm, cmdCPU)
				b.ReportMetric(bc.Seconds(), "bare-cpu-s")
				b.ReportMetric(vc.Seconds(), "valnet-cpu-s")
				b.ReportMetric(bm, "bare-rss-MB")
				b.ReportMetric(vm, "valnet-rss-MB")
				b.ReportMetric(float64(vc)/float64(bc), "cpu-ratio")
				b.ReportMetric(vm/bm, "mem-ratio")
				fmt.Printf("overhead %d validators × %d heights: CPU valnet/bare %.3f (%.2fs / %.2fs), peak RSS valnet/bare %.3f (%.0f / %.0f MB); runs bare %v valnet %v\n",
					n, overheadHeights, float64(vc)/float64(bc), vc.Seconds(), bc.Seconds(), vm/bm, vm, bm, bareCPU, valCPU)
			}
		})
	}
}

func median[T int64 | float64 | time.Duration](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
