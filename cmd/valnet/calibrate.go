package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/valnet/valnet/calibrate"
)

func init() { commands = append(commands, newCalibrateCmd) }

func newCalibrateCmd() *cobra.Command {
	cfg := calibrate.DefaultConfig()
	var (
		out, dir      string
		acceptPoorFit bool
	)
	cmd := &cobra.Command{
		Use:   "calibrate [--validators 4,7,10] [--heights N] [--out FILE]",
		Short: "Fit the sim's processing costs to real in-process runs on this host; write a calibration file",
		Long: `calibrate runs real in-process networks of each --validators size (full
mesh, default timeouts, no injected latency) on this host, then fits the
sim backend's MODEL parameters so the sim shows the same block intervals
and phase delays:

  measured directly: a local signature (sign_local), building a proposal
  (propose_cost), applying a block (commit_cost), each the p50 over the
  real runs' events;
  fitted by a search (a coarse grid, then a compass search that walks as
  far as the fit improves, within gossip_sleep 1ms..2s and vote_cost
  0..50ms): the gossip routines' effective sleep (gossip_sleep) and a
  vote's processing (vote_cost), matching block interval p50/p95 and the
  p50 of the proposal hop, prevote-to-precommit and precommit-to-commit
  delays.

The fit runs the sim with run.sim.shared_cores set to this host's cores,
so the contention of all nodes on one machine is the model's, not learnt
as per-node cost; a run the host monitor marks overloaded is left out of
the fit. The file names what produced it; point run.sim.calibration at it.

A fit whose RMS relative error is above 0.15 (the shipped calibration's
is 0.067), or whose best point is on the search's bound, is poor: the
file is written, with a loud warning, and valnet exits 1 unless
--accept-poor-fit. More heights or other sizes usually fit better.
Exit codes: 0 written, 1 written but a poor fit, 2 bad input or a run
could not be done.`,
		Example: `  valnet calibrate --out my-host.yaml
  valnet calibrate --validators 4,10 --heights 40 --out calib.yaml
  valnet run zones-global --backend sim   # with run.sim.calibration: my-host.yaml in the scenario`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stderr := cmd.ErrOrStderr()
			if dir == "" {
				dir = filepath.Join("runs", "calibrate-"+time.Now().UTC().Format("20060102-150405"))
			}
			cfg.OutDir = dir
			cfg.Command = "valnet calibrate " + strings.Join(os.Args[2:], " ")
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := calibrate.Run(ctx, cfg, stderr)
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			data, err := res.Params.Marshal()
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			if err := os.WriteFile(out, data, 0o644); err != nil {
				return &exitError{exitBadInput, err}
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "validators\tinterval p50 real/sim\tp95 real/sim\tproposal hop\tprevote->precommit\tprecommit->commit\thost")
			for _, p := range res.Points {
				host := "ok"
				if p.Overloaded {
					host = "overloaded (not fitted)"
				}
				fmt.Fprintf(w, "%d\t%.0f / %.0f ms\t%.0f / %.0f ms\t%.1f / %.1f ms\t%.1f / %.1f ms\t%.1f / %.1f ms\t%s, %.2f cores per node\n", p.Validators,
					p.Real.IntervalP50, p.Sim.IntervalP50, p.Real.IntervalP95, p.Sim.IntervalP95,
					p.Real.ProposalHop, p.Sim.ProposalHop, p.Real.PrevoteToPrecommit, p.Sim.PrevoteToPrecommit,
					p.Real.PrecommitToCommit, p.Sim.PrecommitToCommit, host, p.CPUPerNode)
			}
			w.Flush()
			fmt.Fprintf(cmd.OutOrStdout(), "\nfit: gossip_sleep %v, vote_cost %v, sign_local %v, propose_cost %v, commit_cost %v (RMS relative error %.3f)\nwrote %s; runs in %s\n",
				res.Params.GossipSleep, res.Params.VoteCost, res.Params.SignLocal, res.Params.ProposeCost, res.Params.CommitCost, res.Error, out, dir)
			return poorFit(stderr, res, acceptPoorFit)
		},
	}
	f := cmd.Flags()
	f.IntSliceVar(&cfg.Validators, "validators", cfg.Validators, "network sizes of the real runs")
	f.Int64Var(&cfg.Heights, "heights", cfg.Heights, "heights per real run (>= 5)")
	f.Int64Var(&cfg.Seed, "seed", cfg.Seed, "run seed")
	f.StringVar(&cfg.Name, "name", cfg.Name, "the calibration's name (recorded in every sim run)")
	f.IntVar(&cfg.Cores, "cores", runtime.NumCPU(), "cores the real nodes share (this host's)")
	f.StringVar(&out, "out", "calibration.yaml", "calibration file to write")
	f.StringVar(&dir, "dir", "", "where the real and fitted runs go (default runs/calibrate-<time>)")
	f.BoolVar(&acceptPoorFit, "accept-poor-fit", false, "exit 0 even when the fit is poor (error above 0.15 or on the search's bound)")
	return cmd
}

// poorFit warns about a poor fit, and is exit 1 unless it is accepted.
func poorFit(stderr io.Writer, res *calibrate.Result, accept bool) error {
	why := res.Poor()
	if why == "" {
		return nil
	}
	fmt.Fprintf(stderr, "\nvalnet: WARNING: POOR FIT: %s.\nThe sim with this calibration will not show what real runs on this host show (compare the real/sim columns above); try more --heights or other --validators sizes.\n", why)
	if accept {
		fmt.Fprintln(stderr, "valnet: --accept-poor-fit: written anyway, exit 0")
		return nil
	}
	return &exitError{code: exitFailed, err: errors.New("poor fit (--accept-poor-fit to accept it)")}
}
