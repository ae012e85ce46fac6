package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/sweep"
)

func init() { commands = append(commands, newSweepCmd) }

func newSweepCmd() *cobra.Command {
	var (
		sets    []string
		metrics []string
		repeat  int
		out     string
		backend string
		seed    int64
	)
	cmd := &cobra.Command{
		Use:   "sweep SCENARIO --set PATH=v1,v2,... [--set ...]",
		Short: "Run a scenario at every combination of some keys' values; table and plots of the metrics",
		Long: `sweep runs the scenario at every point of the cross product of its --set
values, each point --repeat times (repeat r with seed S + r - 1, S being
--seed or the scenario's run.seed), through the same runner as valnet run.
Every point is checked before anything runs. The sweep directory holds one
run directory per point and repeat, and sweep.json, sweep.csv, sweep.md and
sweep.html (charts of each metric against the first key, one line per value
of the others, with min-max bands; a heat map for two keys).

PATH is a scenario key: dotted keys (run.heights, chain.timeouts.commit,
network.latency), validators[NAME] picks a validator by the name written
in the file (validators[hsm].signer.latency, validators[v].count),
profiles[NAME] a profile. Values are YAML: 200ms, 4,
{dist: uniform, min: 1ms, max: 5ms}; commas inside braces, brackets and
quotes do not split values. See docs/sweep.md.

Running the same command again resumes: finished runs are kept, the rest
are run. Ctrl-C stops the current run and writes the files for what
finished. Exit codes: 0 every run ran (whether the scenario's expectations
held is reported per point in sweep.md, not in the exit code), 2 bad input,
or a run could not be done or was interrupted.`,
		Example: `  valnet sweep slow-signer --set 'validators[slow].signer.latency=50ms,200ms,500ms,1s'
  valnet sweep hsm-budget.yaml --set 'validators[hsm].signer.latency=50ms,200ms,500ms,1s,2s' \
                               --set 'chain.timeouts.commit=500ms,1s' --repeat 3 --out sweeps/hsm
  valnet sweep quickstart --set 'network.latency=0,20ms,100ms' --metric block_interval_p50_ms
  valnet sweep quickstart --set 'validators[v].signer.latency={dist: uniform, min: 1ms, max: 5ms},50ms'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := sweep.Config{Source: args[0], Backend: backend, Repeat: repeat, OutDir: out, Metrics: metrics}
			var errs []error
			for _, s := range sets {
				path, values, err := scenarios.ParseSetFlag(s)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				cfg.Axes = append(cfg.Axes, sweep.Axis{Path: path, Values: values})
			}
			if len(errs) > 0 {
				return &exitError{exitBadInput, errors.Join(errs...)}
			}
			if cmd.Flags().Changed("seed") {
				cfg.Seed = &seed
			}
			sw, err := sweep.Prepare(cfg)
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			if err := sw.Preflight(cmd.Context()); err != nil {
				return &exitError{exitBadInput, err}
			}
			if sw.OutDir == "" {
				sw.OutDir = defaultSweepDir(sw)
			}
			if err := sw.ClaimDir(); err != nil { // before saying where it goes
				return &exitError{exitBadInput, err}
			}
			stderr := cmd.ErrOrStderr()
			fmt.Fprintf(stderr, "valnet: sweeping %s over %d points × %d repeats (backend %s) into %s\n",
				sw.Points[0].Plan.Name, len(sw.Points), sw.Repeat, sw.Identity.Backend, sw.OutDir)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			o, err := sw.Run(ctx, sweep.RealRunner{}, stderr, time.Now)
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			return sweepResult(cmd, sw, o)
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "PATH=v1,v2,...: a scenario key and the values to sweep it over (repeatable)")
	cmd.Flags().IntVar(&repeat, "repeat", 1, "runs per point, with seeds S, S+1, ...")
	cmd.Flags().StringVar(&out, "out", "", "sweep directory (default sweeps/<scenario>-<hash of the keys and values>, so the same command resumes)")
	cmd.Flags().StringVar(&backend, "backend", "", "run on this backend instead of the scenario's run.backend ("+strings.Join(scenarios.Backends(), ", ")+")")
	cmd.Flags().Int64Var(&seed, "seed", 0, "base seed S (default: the scenario's run.seed)")
	cmd.Flags().StringArrayVar(&metrics, "metric", nil, "a metric to tabulate and plot, e.g. missed_precommits_rate(hsm) (repeatable; default: the scenario's expect metrics, missed_precommits of swept validators, block_interval_p50_ms, heights_with_round_change)")
	return cmd
}

// sweepResult prints the table and where the files are, and maps the
// outcome to the exit code.
func sweepResult(cmd *cobra.Command, sw *sweep.Sweep, o *sweep.Outcome) error {
	stdout := cmd.OutOrStdout()
	if err := sw.WriteMarkdown(stdout, o); err != nil {
		return &exitError{exitBadInput, err}
	}
	fmt.Fprintf(stdout, "\nsweep directory: %s (%s, %s, %s, %s; one run directory per point and repeat)\n",
		sw.OutDir, sweep.HTMLFile, sweep.MarkdownFile, sweep.CSVFile, sweep.JSONFile)
	switch {
	case o.Interrupted:
		return &exitError{exitBadInput, fmt.Errorf("interrupted; the %d finished runs are kept: run the same command again to go on", o.Ran+o.Resumed)}
	case len(o.Failed) > 0:
		return &exitError{exitBadInput, fmt.Errorf("%d runs could not be done (run the same command again to retry them):\n  %w", len(o.Failed), errors.Join(o.Failed...))}
	}
	return nil
}

// defaultSweepDir is sweeps/<scenario>-<hash>: the same command goes to
// the same directory (and resumes), another sweep to another one.
func defaultSweepDir(sw *sweep.Sweep) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", sw.Identity.Scenario, sw.Identity.Backend)
	if sw.Identity.BaseSeed != nil {
		fmt.Fprintf(h, "seed %d\x00", *sw.Identity.BaseSeed)
	}
	for _, a := range sw.Axes {
		fmt.Fprintf(h, "%s=%s\x00", a.Path, strings.Join(a.Values, "\x01"))
	}
	return filepath.Join("sweeps", sw.Points[0].Plan.Name+"-"+hex.EncodeToString(h.Sum(nil))[:8])
}
