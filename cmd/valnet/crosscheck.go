package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/valnet/valnet/crosscheck"
	"github.com/valnet/valnet/runner"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/sweep"
)

func init() { commands = append(commands, newCrosscheckCmd) }

func newCrosscheckCmd() *cobra.Command {
	var (
		grid, model, real, out, only string
		sharedCores                  int
		repeat                       int
		seed                         int64
	)
	cmd := &cobra.Command{
		Use:   "crosscheck [--grid FILE] [--model BACKEND] [--real BACKEND]",
		Short: "Run the same scenarios on two backends (the sim MODEL and real nodes) and compare them against agreement goals",
		Long: `crosscheck runs every case of a grid on two backends with the same seed, the
--model side (default sim, a MODEL of CometBFT consensus in virtual time)
and the --real side (default inprocess, real CometBFT nodes), through the
same runner as valnet run, and judges each case by the agreement goals:

  missed-precommit rate of every validator   within ±5 percentage points
  heights with a round change                within ±1 per 20 heights
  block interval p50 and p95                 within ±10 % of the real value
  halts                                      after the same heights, durations within ±15 %

Each goal is pass, fail or n.a. (neither side has the value), with both
values. A case whose run ran on an overloaded host says so. A grid is a
YAML file of cases (a builtin scenario or a file, with --set-style
settings) and optional goals; without --grid the built-in default grid
runs (validators 4/10/25, default and short timeouts, a slow signer at
0-2 s, link latency 0-150 ms, a partition, a kill and restart, a load).
See docs/crosscheck.md.

The directory gets one run directory per case, side and repeat
(CASE/model/r1, CASE/real/r1), crosscheck.json and crosscheck.md (the
table, also printed). Running the same command with the same --out
again resumes. Exit codes: 0 every goal met (or n.a.), 1 some goal
failed, 2 bad input, or a run could not be done or was interrupted.`,
		Example: `  valnet crosscheck                                   # the default grid: sim against inprocess
  valnet crosscheck --only '^(base|slow-1s|partition)$' --out runs/cc
  valnet crosscheck --model process --real inprocess  # two real backends: how far apart real runs are
  valnet crosscheck --grid my-grid.yaml --repeat 3 --seed 7`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			g, err := crosscheck.ReadGrid(grid)
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			cfg := crosscheck.Config{Grid: g, Model: model, Real: real, Repeat: repeat, OutDir: out}
			if model == scenarios.BackendSim && sharedCores > 0 {
				// The real side's nodes share this host's cores: so does the model.
				cfg.ModelSet = append(cfg.ModelSet, scenarios.Setting{Path: "run.sim.shared_cores", Value: fmt.Sprint(sharedCores), Flag: "--shared-cores"})
			}
			if cmd.Flags().Changed("seed") {
				cfg.Seed = &seed
			}
			if only != "" {
				re, err := regexp.Compile(only)
				if err != nil {
					return &exitError{exitBadInput, fmt.Errorf("--only %s: %w", only, err)}
				}
				cfg.Only = re
			}
			c, err := crosscheck.Prepare(cfg)
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			if err := c.Preflight(cmd.Context()); err != nil {
				return &exitError{exitBadInput, err}
			}
			if c.OutDir == "" {
				c.OutDir = runner.DefaultOutDir("crosscheck-"+g.Name, time.Now())
			}
			if err := c.ClaimDir(); err != nil {
				return &exitError{exitBadInput, err}
			}
			stderr := cmd.ErrOrStderr()
			fmt.Fprintf(stderr, "valnet: crosscheck of grid %s, %d cases × %d repeats on %s (model) and %s (real) into %s\n",
				g.Name, len(c.Cases), c.Repeat, c.Model, c.Real, c.OutDir)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			o, err := c.Run(ctx, sweep.RealRunner{}, stderr, time.Now)
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			return crosscheckResult(cmd, c, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&grid, "grid", "", "grid file (default: the built-in grid "+crosscheck.DefaultGridName+")")
	f.StringVar(&model, "model", crosscheck.DefaultModel, "backend of the model side ("+strings.Join(scenarios.Backends(), ", ")+")")
	f.StringVar(&real, "real", crosscheck.DefaultReal, "backend of the real side")
	f.IntVar(&repeat, "repeat", 1, "runs per case and side, with seeds S, S+1, ...; the goals compare the means (a case's own repeat: in the grid wins)")
	f.Int64Var(&seed, "seed", 0, "base seed S, the same on both sides (default: each case's run.seed)")
	f.StringVar(&out, "out", "", "crosscheck directory (default runs/crosscheck-<grid>-<time>; give the same --out to resume)")
	f.StringVar(&only, "only", "", "run only the cases whose name matches this regular expression")
	f.IntVar(&sharedCores, "shared-cores", runtime.NumCPU(), "with --model sim: the sim's nodes share this many cores, as the real side's do on this host (run.sim.shared_cores); 0: each node its own CPU")
	return cmd
}

// crosscheckResult prints the table and where the files are, and maps
// the outcome to the exit code.
func crosscheckResult(cmd *cobra.Command, c *crosscheck.Check, o *crosscheck.Outcome) error {
	stdout := cmd.OutOrStdout()
	if err := c.WriteMarkdown(stdout, o); err != nil {
		return &exitError{exitBadInput, err}
	}
	fmt.Fprintf(stdout, "\ncrosscheck directory: %s (%s, %s; one run directory per case, side and repeat)\n",
		c.OutDir, crosscheck.MarkdownFile, crosscheck.JSONFile)
	switch code := o.ExitCode(); {
	case o.Interrupted:
		return &exitError{exitBadInput, fmt.Errorf("interrupted; the %d finished runs are kept: run the same command with --out %s to go on", o.Ran+o.Resumed, c.OutDir)}
	case len(o.Failed) > 0:
		return &exitError{exitBadInput, fmt.Errorf("%d runs could not be done (run the same command with --out %s to retry them):\n  %w", len(o.Failed), c.OutDir, errors.Join(o.Failed...))}
	case code == crosscheck.ExitBadInput:
		return &exitError{exitBadInput, errors.New("some cases are incomplete")}
	case code == crosscheck.ExitFailed:
		return &exitError{exitFailed, nil}
	}
	return nil
}
