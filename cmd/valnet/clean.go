package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/valnet/valnet/runner"
)

func init() { commands = append(commands, newCleanCmd) }

func newCleanCmd() *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove what killed runs left behind: their processes, containers, docker networks, unix sockets, temp dirs",
		Long: `valnet clean removes the leftovers of runs whose runner is gone (killed
with SIGKILL, or the machine lost power): node processes of the process
backend, containers and networks of the docker backend, and the runs'
temp dirs with their unix sockets. valnet run does the same before each
run. A resource is removed only when its runner is known to be gone (its
pid runs no process, or another one since: the start time tells), so a
live run is never touched. It prints one line per kind with its count.`,
		Example: `  valnet clean --dry-run
  valnet clean`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := runner.CleanLeftovers(cmd.Context(), dryRun)
			out := cmd.OutOrStdout()
			printLeftovers(out, l, dryRun)
			if l.Empty() && err == nil {
				fmt.Fprintln(out, "valnet: no leftovers of dead runs")
			}
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be removed, remove nothing")
	return cmd
}

// printLeftovers prints what a cleanup removed (or would), one line per
// kind, and what it could not check.
func printLeftovers(w io.Writer, l runner.Leftovers, dryRun bool) {
	for _, line := range l.Lines(dryRun) {
		fmt.Fprintln(w, "valnet: "+line)
	}
	for _, n := range l.Notes {
		fmt.Fprintln(w, "valnet: "+n)
	}
}
