package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/valnet/valnet/compare"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/runner"
)

func init() { commands = append(commands, newCompareCmd) }

func newCompareCmd() *cobra.Command {
	var (
		failOn         string
		asJSON         bool
		allowDifferent bool
	)
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B",
		Short: "Compare two runs' metrics side by side; with --fail-on, fail CI on a regression",
		Long: `compare rebuilds both runs' summaries from their events.jsonl (a summary.json
may be stale) and prints chain metrics and per-validator metrics (validators
matched by name) of RUN_A and RUN_B with the change from A to B. Metrics are
named as in a scenario's expect: (valnet validate lists them), rates
included: missed_precommits_rate, missed_blocks_rate, nil_precommits_rate.

--fail-on takes comma-separated entries METRIC OP THRESHOLD: OP is > or <,
THRESHOLD a signed change, absolute (+2) or relative to A (+20%). METRIC is a
chain metric, or a per-validator one for every validator (name), one
validator (name(VALIDATOR)) or a phase (name(VALIDATOR,PHASE), name(*,PHASE)).
A validator the entry names that is in one run only fails it.

Two runs of another scenario (name, or the sha256 of their scenario.yaml)
or another seed are unrelated: compare says so, and refuses --fail-on
unless --allow-different.

Exit codes: 0 no threshold crossed, 1 a threshold was crossed, 2 bad input
(a bad --fail-on entry, a run directory without events.jsonl, --fail-on
on unrelated runs).`,
		Example: `  valnet compare runs/base runs/candidate
  valnet compare runs/base runs/candidate --fail-on 'missed_precommits>+2,block_interval_p95_ms>+20%'
  valnet compare runs/base runs/candidate --fail-on 'missed_precommits_rate(hsm)>+0.05,sign_latency_p99_ms(*,precommit)>+10%'
  valnet compare runs/base runs/candidate --json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ths, err := compare.ParseThresholds(failOn)
			var errs []error
			if err != nil {
				errs = append(errs, err)
			}
			var sums [2]*results.Summary
			var sides [2]compare.Side
			for i, dir := range args {
				s, err := summarizeRun(dir)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				sums[i] = s
				sides[i] = compare.Side{Dir: dir, ScenarioSHA256: fileSHA256(filepath.Join(dir, runner.ScenarioFile))}
			}
			if len(errs) > 0 {
				return &exitError{exitBadInput, errors.Join(errs...)}
			}
			c := compare.Compare(sums[0], sums[1], sides[0], sides[1])
			if len(ths) > 0 && len(c.Different) > 0 && !allowDifferent {
				return &exitError{exitBadInput, fmt.Errorf("--fail-on on unrelated runs: they differ in %s; compare runs of the same scenario and seed, or pass --allow-different",
					strings.Join(c.Different, "; "))}
			}
			crossings := c.Check(ths)

			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				enc.SetEscapeHTML(false)
				doc := struct {
					*compare.Comparison
					Thresholds []compare.Threshold `json:"thresholds"`
					Crossings  []compare.Crossing  `json:"crossings"`
				}{c, nonNil(ths), nonNil(crossings)}
				if err := enc.Encode(doc); err != nil {
					return &exitError{exitBadInput, err}
				}
			} else if err := compare.Write(out, c, ths, crossings); err != nil {
				return &exitError{exitBadInput, err}
			}
			if len(crossings) > 0 {
				return &exitError{exitFailed, fmt.Errorf("%d threshold(s) crossed", len(crossings))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&failOn, "fail-on", "", "exit 1 when a metric changes beyond a threshold, e.g. 'missed_precommits>+2,block_interval_p95_ms>+20%'")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	cmd.Flags().BoolVar(&allowDifferent, "allow-different", false, "judge --fail-on even when the runs are of another scenario or seed")
	return cmd
}

// fileSHA256 is the hex sha256 of a file, "" when it cannot be read.
func fileSHA256(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
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
