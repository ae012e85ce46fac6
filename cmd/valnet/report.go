package main

import (
	"github.com/spf13/cobra"

	"github.com/valnet/valnet/runner"
)

func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report RUN_DIR",
		Short: "Rebuild a run's summary.json, report.html, junit.xml, summary.md, heights.csv and missed.csv from its events.jsonl, and print the table",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := runner.Report(args[0])
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			printOutcome(cmd.OutOrStdout(), &runner.Outcome{OutDir: args[0], Summary: s}, false)
			return exitFor(s)
		},
	}
}
