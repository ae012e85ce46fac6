package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/valnet/valnet/signers/signerbench"
)

func init() { commands = append(commands, newBenchCmd) }

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure on this host what valnet's building blocks cost",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newBenchSignersCmd())
	return cmd
}

func newBenchSignersCmd() *cobra.Command {
	var (
		opts     signerbench.Options
		only     []string
		asJSON   bool
		quiet    bool
		duration time.Duration
	)
	cmd := &cobra.Command{
		Use:   "signers",
		Short: "Measure signature algorithms and valnet's signer backends on this host",
		Long: `Measures, one op at a time, keygen/sign/verify of the signature schemes a
validator could use, and SignVote through valnet's real signer chains
(double-sign guard and state-file fsync included), directly and over the
remote-signer hop. Prints median, p99 and ops/s per row.

Exit codes: 0 every row measured or skipped, 1 a row failed (e.g. a
signature that did not verify), 2 bad input or interrupted.

Names for --only: ` + strings.Join(signerbench.Names(), ", "),
		Example: `  valnet bench signers
  valnet bench signers --only ed25519,local,remote-unix --iterations 5000
  valnet bench signers --only backends --dir /var/lib/validator --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Iterations < 1 {
				return &exitError{exitBadInput, fmt.Errorf("--iterations must be at least 1, got %d", opts.Iterations)}
			}
			if duration < 0 {
				return &exitError{exitBadInput, fmt.Errorf("--duration must not be negative, got %s", duration)}
			}
			if opts.KeyfileCost < 4 || opts.KeyfileCost > 31 {
				return &exitError{exitBadInput, fmt.Errorf("--keyfile-cost must be within 4..31, got %d", opts.KeyfileCost)}
			}
			// Checked before anything runs, so a typo costs nothing.
			if _, err := signerbench.Select(only); err != nil {
				return &exitError{exitBadInput, fmt.Errorf("--only: %w", err)}
			}
			opts.Only = only
			opts.Duration = duration
			if duration == 0 {
				opts.Duration = -1 // the flag's 0 means no cap; the library's 0 means default
			}
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if !quiet {
				opts.Progress = stderr
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			rep, runErr := signerbench.Run(ctx, opts)
			// Rows measured before an interrupt are still worth printing.
			if err := printBench(stdout, rep, asJSON); err != nil {
				return &exitError{exitBadInput, err}
			}
			switch {
			case runErr != nil && ctx.Err() != nil:
				return &exitError{exitBadInput, fmt.Errorf("interrupted: %w", runErr)}
			case runErr != nil:
				return &exitError{exitBadInput, runErr}
			}
			if failed := rep.Failed(); len(failed) > 0 {
				names := make([]string, len(failed))
				for i, r := range failed {
					names[i] = r.Name + " " + r.Op
				}
				return &exitError{exitFailed, fmt.Errorf("%d row(s) failed: %s", len(failed), strings.Join(names, ", "))}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Iterations, "iterations", signerbench.DefaultIterations, "timed ops per row")
	f.DurationVar(&duration, "duration", signerbench.DefaultDuration, "time cap per row (slow ops stop early, after at least 3 ops); 0: no cap")
	f.BoolVar(&asJSON, "json", false, "print JSON instead of the table")
	f.StringSliceVar(&only, "only", nil, "comma-separated rows or groups to run (default all; see Names above)")
	f.StringVar(&opts.Dir, "dir", "", "directory for the state files and the key file (default: system temp dir); fsync cost depends on its disk")
	f.IntVar(&opts.KeyfileCost, "keyfile-cost", 12, "bcrypt cost of the encrypted key file (12 is gnokey's)")
	f.BoolVar(&quiet, "quiet", false, "no progress lines on stderr")
	return cmd
}

func printBench(w io.Writer, rep signerbench.Report, asJSON bool) error {
	if !asJSON {
		return rep.WriteTable(w)
	}
	b, err := rep.JSON()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
