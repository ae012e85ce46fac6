package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/runner"
)

func init() { commands = append(commands, newCompareCmd) }

func newCompareCmd() *cobra.Command {
	var (
		failOn string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B",
		Short: "Compare two runs' metrics side by side; with --fail-on, fail CI on a regression",
		Long: `compare rebuilds both runs' summaries from their events.jsonl (a summary.json
may be stale) and prints chain metrics and per-validator metrics (validators
matched by name) of RUN_A and RUN_B with the change from A to B.

--fail-on takes comma-separated entries METRIC OP THRESHOLD: OP is > or <,
THRESHOLD a signed change, absolute (+2) or relative to A (+20%). A
per-validator metric is checked for every validator present in both runs.

Exit codes: 0 no threshold crossed, 1 a threshold was crossed, 2 bad input
(a bad --fail-on entry, a run directory without events.jsonl).`,
		Example: `  valnet compare runs/base runs/candidate
  valnet compare runs/base runs/candidate --fail-on 'missed_precommits>+2,block_interval_ms.p95>+20%'
  valnet compare runs/base runs/candidate --json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ths, err := results.ParseThresholds(failOn)
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			var sums [2]*results.Summary
			for i, dir := range args {
				s, err := summarizeRun(dir)
				if err != nil {
					return &exitError{exitBadInput, err}
				}
				sums[i] = s
			}
			c := results.Compare(sums[0], sums[1])
			c.A.Dir, c.B.Dir = args[0], args[1]
			crossings := c.Check(ths)

			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				enc.SetEscapeHTML(false)
				doc := struct {
					*results.Comparison
					Thresholds []results.Threshold `json:"thresholds"`
					Crossings  []results.Crossing  `json:"crossings"`
				}{c, nonNil(ths), nonNil(crossings)}
				if err := enc.Encode(doc); err != nil {
					return &exitError{exitBadInput, err}
				}
			} else if err := results.WriteComparison(out, c, ths, crossings); err != nil {
				return &exitError{exitBadInput, err}
			}
			if len(crossings) > 0 {
				return &exitError{exitFailed, fmt.Errorf("%d threshold(s) crossed", len(crossings))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&failOn, "fail-on", "", "exit 1 when a metric changes beyond a threshold, e.g. 'missed_precommits>+2,block_interval_ms.p95>+20%'")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	return cmd
}

// summarizeRun summarizes a run directory's events.jsonl as a stream,
// with an error that names what is missing.
func summarizeRun(dir string) (*results.Summary, error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("run directory %s: %w", dir, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a run directory", dir)
	}
	z, err := results.SummarizeFile(filepath.Join(dir, runner.EventsFile))
	if err != nil {
		return nil, fmt.Errorf("run directory %s: %w", dir, err)
	}
	return z.Summary(), nil
}

// nonNil keeps empty lists as [] rather than null in the JSON.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
