package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/sweep"
)

func init() { commands = append(commands, newThresholdCmd) }

func newThresholdCmd() *cobra.Command {
	var (
		spec  sweep.ThresholdSpec
		seed  int64
		quiet bool
	)
	cmd := &cobra.Command{
		Use:   "threshold SCENARIO --vary PATH --range LO..HI --target 'METRIC <= X'",
		Short: "Find the largest (or smallest) value of one scenario key for which a target holds, by bisection over real runs",
		Long: `threshold bisects one scenario key over a range, running the scenario at each
probed value (--repeat runs per probe, the same seeds at every value), until
the last value that held and the first that failed are at most --resolution
apart. A probe holds when the target holds in every one of its runs; runs
that disagree make it "mixed" (counted as failed, and reported).

It prints every probe as it finishes and the threshold as an interval, and
writes threshold.json and one run directory per probe and repeat under --out.
The same command again reuses the runs that finished (also after Ctrl-C).

Exit codes: 0 the search completed (whatever its verdict: found,
holds-everywhere, fails-everywhere, not-monotone), 2 bad input, a run could
not be done, or Ctrl-C (threshold.json keeps the probes done).`,
		Example: `  valnet threshold slow-signer --vary 'validators[slow].signer.latency' --range 0..3s \
      --target 'missed_precommits_rate(slow) <= 0.05' --repeat 3 --resolution 50ms
  valnet threshold hsm.yaml --vary chain.timeouts.commit --range 100ms..2s \
      --target 'missed_precommits(hsm) <= 1' --direction smallest
  valnet threshold quickstart --vary 'validators[v].count' --range 4..16 \
      --target 'block_interval_p50_ms <= 1500' --out runs/count`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec.Scenario = args[0]
			if cmd.Flags().Changed("seed") {
				spec.Seed = &seed
			}
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			runs := sweep.RealRunner{}
			if !quiet {
				runs.Status = stderr
				if f, ok := stderr.(*os.File); ok {
					runs.Terminal = term.IsTerminal(int(f.Fd()))
				}
			}
			th, err := spec.Prepare(ctx, runs, stdout)
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			if err := th.Claim(); err != nil { // before saying where it goes
				return &exitError{exitBadInput, err}
			}
			for _, w := range th.Warnings {
				fmt.Fprintf(stderr, "valnet: warning: %s\n", w)
			}
			if !quiet {
				th.Status = stderr
				fmt.Fprintf(stderr, "valnet: threshold of %s over %s..%s (resolution %s, %s) for %s, %d run(s) per probe, into %s\n",
					th.Key, th.Grid.Format(th.Grid.Lo), th.Grid.Format(th.Grid.Hi), th.Grid.Format(th.Grid.Resolution),
					th.Direction, th.Target, len(th.Seeds), th.OutDir)
			}
			rep, err := th.Search(ctx)
			switch {
			case err != nil && rep == nil: // the out dir is not this search's
				return &exitError{exitBadInput, err}
			case err != nil:
				if errors.Is(err, context.Canceled) {
					err = errors.New("interrupted")
				}
				return &exitError{exitBadInput, fmt.Errorf("%w (the probes done are in %s; the same command resumes)", err, filepath.Join(th.OutDir, sweep.ThresholdFile))}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&spec.Key, "vary", "", "the scenario key to vary, as a --set path (e.g. 'validators[hsm].signer.latency')")
	f.StringVar(&spec.Range, "range", "", "the range to search, LO..HI: durations (0..3s) or numbers (1..20)")
	f.StringVar(&spec.Target, "target", "", "what must hold: 'METRIC <= X' or 'METRIC >= X' (e.g. 'missed_precommits_rate(hsm) <= 0.05')")
	f.StringVar(&spec.Resolution, "resolution", "", "stop when the interval is this narrow (default: the range / 32; integers at least 1)")
	f.StringVar(&spec.Direction, "direction", "largest", "largest: the largest value that holds; smallest: the smallest")
	f.IntVar(&spec.Repeat, "repeat", 1, "runs per probe (distinct seeds; a probe holds when every run holds)")
	f.StringVar(&spec.OutDir, "out", "", "search directory (default runs/threshold-<scenario>-<key>-<hash of the backend and seed>: the same command resumes)")
	f.StringVar(&spec.Confirm, "confirm", "", "after the search, rerun the two values that bracket the threshold on this backend (e.g. inprocess after --backend sim), with the same seeds, and print both")
	f.StringVar(&spec.Backend, "backend", "", "run on this backend instead of the scenario's run.backend ("+strings.Join(scenarios.Backends(), ", ")+")")
	f.Int64Var(&seed, "seed", 0, "base seed S; repeat r of every probe runs with seed S + r - 1 (default: the scenario's run.seed)")
	f.BoolVar(&quiet, "quiet", false, "no live status of each run; only the probes and the result")
	for _, name := range []string{"vary", "range", "target"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}
