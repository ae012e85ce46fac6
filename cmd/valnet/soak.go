package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/soak"
	"github.com/valnet/valnet/sweep"
)

func init() { commands = append(commands, newSoakCmd) }

func newSoakCmd() *cobra.Command {
	var (
		cfg     soak.Config
		out     string
		quietly bool
	)
	cmd := &cobra.Command{
		Use:   "soak SCENARIO --duration 30m --seed N",
		Short: "Run a scenario for long under random faults of every family; check safety, liveness and leaks as it goes",
		Long: `soak runs the scenario (a file or a built-in name) for --duration under a
fault schedule drawn from --seed: signer delay, drop, error, outage and
restart, partitions, isolation, link latency, node kill, stop, restart and
(process and docker backends) pause. By default the scenario's validators
are replaced by --validators 7, each with a remote (unix) signer so that
every signer fault applies; the scenario's faults and expectations are
replaced, its chain, network and backend kept. Faults stop --tail before
the end (default a quarter of the duration, 90s to 5m).

While the run goes, soak checks: no double sign (the run-wide detector
over events.jsonl), no two blocks at one height (every node's RPC block
hashes, and the recorded blocks), the chain and every node past the
height of the last fault's end within --resume-within, and it samples its
heap and goroutines (slopes reported); after the run, no goroutine or file
descriptor is left. The first violation stops the run.

The soak directory holds schedule.yaml (the faults, to paste into a
scenario), soak.json, soak.txt and the run directory (run/). A failure
prints the seed and the schedule that reproduce it. The same seed,
duration and validators always draw the same schedule. Exit codes: 0 every
invariant held, 1 an invariant was violated, 2 bad input or the run could
not be done (interrupted included).`,
		Example: `  valnet soak baseline --duration 30m --seed 1
  valnet soak baseline --duration 3m --seed 7 --out runs/soak-7
  valnet soak crash-restart --backend process --duration 20m --seed 3`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := sweep.CheckBackend("--backend", cfg.Backend); err != nil {
				return &exitError{exitBadInput, err}
			}
			src, err := scenarios.ReadSource(args[0])
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			cfg.Source = src
			p, err := soak.Prepare(cfg)
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			if out == "" {
				out = filepath.Join("runs", fmt.Sprintf("soak-%s-seed%d-%s", p.Plan.Name, cfg.Seed, time.Now().Format("20060102-150405")))
			}
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			fmt.Fprintf(stderr, "valnet: soaking %s for %v on %d validators (backend %s, seed %d): %d faults until %v, then %v without; into %s\n",
				p.Plan.Name, p.Duration, len(p.Plan.Validators), p.Plan.Run.Backend, p.Seed, len(p.Schedule), p.FaultsEnd, p.Quiet, out)
			opts := soak.Options{OutDir: out, Command: reproduce(args[0], cfg)}
			if !quietly {
				opts.Status = stderr
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			rep, err := p.Run(ctx, opts)
			if rep != nil {
				if werr := rep.WriteText(stdout); werr != nil && err == nil {
					err = werr
				}
				fmt.Fprintf(stdout, "soak directory: %s (%s, %s, %s)\n", out, soak.ScheduleFile, soak.JSONFile, soak.TextFile)
			}
			switch {
			case err != nil:
				return &exitError{exitBadInput, err}
			case len(rep.Violations) > 0:
				return &exitError{exitFailed, fmt.Errorf("%d invariant(s) violated; reproduce with seed %d: %s", len(rep.Violations), cfg.Seed, opts.Command)}
			case rep.StopReason != eventlog.StopMaxDuration:
				return &exitError{exitBadInput, fmt.Errorf("the run stopped early (%s): the soak is incomplete", rep.StopReason)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.DurationVar(&cfg.Duration, "duration", 30*time.Minute, "how long the run lasts")
	f.Int64Var(&cfg.Seed, "seed", 1, "seed of the fault schedule and of the run (keys, latency draws)")
	f.IntVar(&cfg.Validators, "validators", soak.DefaultValidators, "replace the scenario's validators by this many (v-1 .. v-N, remote unix signers); 0 keeps the scenario's")
	f.DurationVar(&cfg.Quiet, "tail", 0, "fault-free tail before the end (default: a quarter of --duration, 90s to 5m)")
	f.DurationVar(&cfg.ResumeWithin, "resume-within", soak.DefaultResumeWithin, "every node must be past the last fault's height within this")
	f.StringVar(&cfg.Backend, "backend", "", "run on this backend instead of the scenario's run.backend ("+strings.Join(scenarios.Backends(), ", ")+")")
	f.StringVar(&out, "out", "", "soak directory (default runs/soak-<scenario>-seed<N>-<time>)")
	f.BoolVarP(&quietly, "quiet", "q", false, "no progress lines on stderr")
	return cmd
}

// reproduce is the command line of a soak, for its report.
func reproduce(scenario string, cfg soak.Config) string {
	s := fmt.Sprintf("valnet soak %s --duration %v --seed %d --validators %d", scenario, cfg.Duration, cfg.Seed, cfg.Validators)
	if cfg.Backend != "" {
		s += " --backend " + cfg.Backend
	}
	if cfg.Quiet != 0 {
		s += fmt.Sprintf(" --tail %v", cfg.Quiet)
	}
	if cfg.ResumeWithin != soak.DefaultResumeWithin {
		s += fmt.Sprintf(" --resume-within %v", cfg.ResumeWithin)
	}
	return s
}
