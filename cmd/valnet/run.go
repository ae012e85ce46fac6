package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/runner"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/suite"
)

func newRunCmd() *cobra.Command {
	var (
		out      string
		keep     bool
		seed     int64
		quiet    bool
		metrics  string
		backend  string
		parallel int
		asSuite  bool
	)
	cmd := &cobra.Command{
		Use:   "run SCENARIO [SCENARIO|DIR ...]",
		Short: "Run a scenario (a file, or a built-in name from 'valnet list'), or several as a suite",
		Long: `Run a scenario: a file, or a built-in name from 'valnet list'.

Several scenarios, or a directory of them (its *.yaml and *.yml), run as
a suite: every file is checked first (a bad one stops the suite before
anything runs, with every problem of every file), then each runs into
its own directory under the suite's (--out), which gets suite.json,
junit.xml (a testsuite per scenario) and suite.md. The exit code is the
worst of the runs' (2 > 1 > 0). With GITHUB_STEP_SUMMARY set, suite.md
is appended to it. See docs/ci.md.`,
		Example: `  valnet run quickstart
  valnet run my-scenario.yaml --out runs/x
  valnet run slow-signer --seed 7 --keep
  valnet run crash-restart --backend process
  valnet run scenarios/ci/ baseline --out runs/ci      # a suite`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Ctrl-C from the first moment: before the run directory
			// exists it only stops what is being checked.
			ctx, force, stop := interrupts(cmd.Context(), cmd.ErrOrStderr())
			defer stop()
			if asSuite || suite.IsSuite(args) {
				if keep || metrics != "" {
					return &exitError{exitBadInput, errors.New("--keep and --metrics take one scenario, not a suite")}
				}
				f := suiteFlags{out: out, backend: backend, quiet: quiet, parallel: parallel}
				if cmd.Flags().Changed("seed") {
					f.seed = &seed
				}
				return runSuite(ctx, force, cmd, args, f)
			}
			plan, err := scenarios.ResolveWith(args[0], scenarios.Overrides{Backend: backend})
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			if ps := runner.Preflight(ctx, plan); len(ps) > 0 {
				return &exitError{exitBadInput, ps}
			}
			if out == "" {
				out = runner.DefaultOutDir(plan.Name, time.Now())
			}
			// What runners killed earlier left goes first, said on stderr
			// (what could not be checked is not: valnet clean says it).
			l, err := runner.CleanLeftovers(ctx, false)
			l.Notes = nil
			printLeftovers(cmd.ErrOrStderr(), l, false)
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "valnet: leftovers of dead runs: %v\n", err)
			}
			opts := runner.Options{OutDir: out, Metrics: metrics}
			if cmd.Flags().Changed("seed") {
				opts.Seed = &seed
			}
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if !quiet {
				opts.Status = stderr
				if f, ok := stderr.(*os.File); ok {
					opts.Terminal = term.IsTerminal(int(f.Fd()))
				}
			}
			opts.Keep = keep
			opts.OnMetrics = func(addr string) {
				if !quiet {
					fmt.Fprintf(stderr, "valnet: live metrics on http://%s/metrics\n", addr)
				}
			}
			opts.OnKeep = func(o *runner.Outcome, n runner.NetworkInfo) {
				printOutcome(stdout, o, quiet)
				fmt.Fprintf(stdout, "\n--keep: the network stays up; press Ctrl-C to stop it.\n")
				for _, v := range n.Validators {
					fmt.Fprintf(stdout, "  %-12s rpc %s  p2p %s\n", v.Name, v.RPC, v.P2P)
				}
				if n.Cleanup != "" {
					fmt.Fprintf(stdout, "Should valnet be killed, remove the containers with:\n  %s\n", n.Cleanup)
				}
			}
			opts.Force = force
			if keep && plan.Run.Backend == scenarios.BackendSim {
				return &exitError{exitBadInput, errors.New("--keep: the sim backend runs no network to keep (it is a model in virtual time)")}
			}
			// A directory holding a run is refused before anything is
			// announced.
			if err := runner.CheckOutDir(out); err != nil {
				return &exitError{exitBadInput, err}
			}
			if !quiet {
				what := "backend " + plan.Run.Backend
				if plan.Run.Backend == scenarios.BackendSim {
					what += ": a MODEL in virtual time, no real nodes"
				}
				fmt.Fprintf(stderr, "valnet: running %s (%d validators, %s) into %s\n",
					plan.Name, len(plan.Validators), what, out)
			}
			outcome, err := runner.Run(ctx, plan, opts)
			if err != nil {
				if outcome != nil {
					fmt.Fprintf(stderr, "valnet: results so far are in %s\n", outcome.OutDir)
				}
				return &exitError{exitBadInput, err}
			}
			if !keep {
				printOutcome(stdout, outcome, quiet)
			}
			if at := outcome.Interrupted; at != "" && outcome.Summary.StopReason != eventlog.StopInterrupted {
				// The run had ended by itself (its summary says how); the
				// interrupt came while it stopped or wrote its report.
				fmt.Fprintf(stderr, "valnet: interrupted during %s, after the run had ended (stop_reason %s); its files are complete in %s\n",
					at, outcome.Summary.StopReason, outcome.OutDir)
				return &exitError{code: exitBadInput}
			}
			return exitFor(outcome.Summary)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "run directory, or a suite's directory (default runs/<scenario>-<timestamp>, runs/suite-<timestamp>)")
	cmd.Flags().BoolVar(&asSuite, "suite", false, "run as a suite even with one scenario (suite.json, junit.xml, suite.md, the step summary)")
	cmd.Flags().IntVar(&parallel, "parallel", 1, "a suite's runs at once (real nodes share this host's cores: more than 1 can overload it)")
	cmd.Flags().BoolVar(&keep, "keep", false, "leave the network running after the run, print RPC addresses, stop on Ctrl-C")
	cmd.Flags().Int64Var(&seed, "seed", 0, "seed for keys and random models (default: the scenario's run.seed)")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "no live status and no table; print only the result line")
	cmd.Flags().StringVar(&backend, "backend", "", "run on this backend instead of the scenario's run.backend ("+strings.Join(scenarios.Backends(), ", ")+")")
	cmd.Flags().StringVar(&metrics, "metrics", "", "serve live Prometheus metrics on this address while running, e.g. 127.0.0.1:9100")
	return cmd
}

func printOutcome(w io.Writer, o *runner.Outcome, quiet bool) {
	if o == nil || o.Summary == nil {
		return
	}
	if quiet {
		fmt.Fprintln(w, results.ResultLine(o.Summary))
		return
	}
	results.WriteTable(w, o.Summary)
	fmt.Fprintf(w, "\nrun directory: %s (%s)\n", o.OutDir, runDirContents(o.OutDir))
}

// secondInterruptNote is what the first Ctrl-C prints.
const secondInterruptNote = "valnet: interrupted: stopping the nodes and writing the summary (Ctrl-C again to kill the nodes and exit at once)"

// interrupts returns a context that ends at the first Ctrl-C (SIGINT or
// SIGTERM) and one that ends at the second: the runner then kills its
// nodes instead of stopping them, and still cleans up. stop releases the
// signals.
func interrupts(parent context.Context, stderr io.Writer) (ctx, force context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	force, forceNow := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			fmt.Fprintln(stderr, secondInterruptNote)
			cancel()
		case <-done:
			return
		}
		select {
		case <-sigs:
			fmt.Fprintln(stderr, "valnet: second interrupt: killing the nodes; cleaning up and exiting")
			forceNow()
		case <-done:
		}
	}()
	return ctx, force, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
		forceNow()
	}
}

// exitFor maps a summary to the exit code CI reads.
func exitFor(s *results.Summary) error {
	switch {
	case s.StopReason == eventlog.StopInterrupted || s.StopReason == eventlog.StopError || s.InterruptedStage != "":
		return &exitError{code: exitBadInput}
	case !s.OK:
		return &exitError{code: exitFailed}
	}
	return nil
}

// runDirContents lists what a run directory holds, as it is: a sim run
// has no network.json and no node homes.
func runDirContents(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err.Error()
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() {
			n += "/"
		}
		names = append(names, n)
	}
	return strings.Join(names, ", ")
}
