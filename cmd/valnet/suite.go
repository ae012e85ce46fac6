package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/valnet/valnet/runner"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/suite"
)

// stepSummaryEnv is the file GitHub Actions shows as the step's summary:
// a suite appends its suite.md there when it is set.
const stepSummaryEnv = "GITHUB_STEP_SUMMARY"

// suiteFlags are valnet run's flags that a suite takes.
type suiteFlags struct {
	out      string
	seed     *int64
	backend  string
	quiet    bool
	parallel int
}

// runSuite is valnet run with several scenarios (or a directory): every
// file is checked before any runs, each runs into its own directory under
// the suite's, and the exit code is the worst of the runs'.
func runSuite(ctx, force context.Context, cmd *cobra.Command, args []string, f suiteFlags) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if f.parallel < 1 {
		return &exitError{exitBadInput, fmt.Errorf("--parallel %d: give 1 or more runs at once", f.parallel)}
	}
	entries, err := suite.Expand(ctx, args, scenarios.Overrides{Backend: f.backend})
	if err != nil {
		return &exitError{exitBadInput, err}
	}
	if f.out == "" {
		f.out = runner.DefaultOutDir("suite", time.Now())
	}
	// What runners killed earlier left goes first, as before one run.
	l, err := runner.CleanLeftovers(ctx, false)
	l.Notes = nil
	printLeftovers(stderr, l, false)
	if err != nil {
		fmt.Fprintf(stderr, "valnet: leftovers of dead runs: %v\n", err)
	}
	opts := suite.Options{OutDir: f.out, Parallel: f.parallel, Base: runner.Options{Seed: f.seed, Force: force}}
	if !f.quiet {
		opts.Progress = stderr
		if f.parallel == 1 {
			opts.Base.Status = stderr // live status of the one run going; with more, their lines would mix
		}
		fmt.Fprintf(stderr, "valnet: running a suite of %d scenarios (%d at once) into %s\n", len(entries), f.parallel, f.out)
	}
	o, err := suite.Run(ctx, entries, opts)
	if err != nil {
		return &exitError{exitBadInput, err}
	}
	fmt.Fprintf(stdout, "%-4s %-28s %s\n", "exit", "scenario", "result")
	for _, r := range o.Record.Runs {
		code := "-"
		if r.ExitCode != nil {
			code = fmt.Sprint(*r.ExitCode)
		}
		what := r.Result
		if r.Error != "" {
			what = r.Error
		}
		fmt.Fprintf(stdout, "%-4s %-28s %s\n", code, r.Scenario, what)
	}
	fmt.Fprintf(stdout, "\nsuite directory: %s (%s, %s, %s; one run directory each)\n", f.out, suite.RecordFile, suite.JUnitFile, suite.MarkdownFile)
	if path := os.Getenv(stepSummaryEnv); path != "" {
		if err := appendFile(path, filepath.Join(f.out, suite.MarkdownFile)); err != nil {
			fmt.Fprintf(stderr, "valnet: %s: %v\n", stepSummaryEnv, err)
		}
	}
	if code := o.ExitCode(); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// appendFile appends the file src to dst (a CI step summary).
func appendFile(dst, src string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(data, '\n'))
	return errors.Join(err, f.Close())
}
