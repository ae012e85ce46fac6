// Package sweep runs a scenario at many points (valnet sweep) and holds
// what valnet sweep and valnet threshold share: resolving a scenario with
// command-line settings and running one point through runner.Run, the
// same runner valnet run uses (cmd → sweep → runner).
package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/runner"
	"github.com/valnet/valnet/scenarios"
)

// Result is one finished (or failed) run of a point.
type Result struct {
	Seed int64  `json:"seed"`
	Dir  string `json:"dir"`
	// Metrics is results.MetricValues of the run: every metric by
	// reference (missed_precommits(hsm), ...); values with no samples are
	// left out.
	Metrics map[string]float64 `json:"metrics"`
	// ExpectationsOK says whether every expect: of the scenario held.
	ExpectationsOK bool   `json:"expectations_ok"`
	StopReason     string `json:"stop_reason"`
	// HostOverloaded: the run's summary says the host was overloaded, so
	// its values reflect the machine (results.OverloadedNotice).
	HostOverloaded bool `json:"host_overloaded"`
}

// RepeatSeed is the seed of repeat r (1-based) from a base seed: base + r
// - 1, the same at every point, so that points differ by their settings
// alone. Sweep and threshold both number their repeats by it.
func RepeatSeed(base int64, r int) int64 { return base + int64(r-1) }

// Finished reports whether the run ran to its end (its heights or
// max_duration); an interrupted or failed run is to be run again.
func (r Result) Finished() bool {
	return r.StopReason == eventlog.StopHeights || r.StopReason == eventlog.StopMaxDuration
}

// Runner runs one resolved plan with a seed into a run directory. Runs are
// what sweep and threshold repeat; tests give a fake.
type Runner interface {
	Run(ctx context.Context, plan *scenarios.Plan, seed int64, dir string) (Result, error)
}

// RealRunner runs plans with runner.Run, exactly as valnet run does.
type RealRunner struct {
	Status      io.Writer // the runner's live status; nil: none
	Terminal    bool      // Status is a terminal
	NodeCommand []string  // runner.Options.NodeCommand (tests of the process backend)
}

var _ Runner = RealRunner{}

// Run runs plan. An error means the run could not be done; a run stopped
// by ctx returns its partial result with StopReason interrupted.
func (rr RealRunner) Run(ctx context.Context, plan *scenarios.Plan, seed int64, dir string) (Result, error) {
	out, err := runner.Run(ctx, plan, runner.Options{
		OutDir: dir, Seed: &seed, Status: rr.Status, Terminal: rr.Terminal, NodeCommand: rr.NodeCommand,
	})
	res := Result{Seed: seed, Dir: dir, StopReason: eventlog.StopError}
	if out != nil && out.Summary != nil {
		res = fromSummary(out.Summary, seed, dir)
	}
	return res, err
}

// fromSummary is the Result a run's summary gives.
func fromSummary(s *results.Summary, seed int64, dir string) Result {
	return Result{Seed: seed, Dir: dir, Metrics: results.MetricValues(s), ExpectationsOK: s.OK, StopReason: s.StopReason,
		HostOverloaded: s.Host != nil && s.Host.Overloaded}
}

// Resolve resolves the scenario (read once: every point and probe is
// resolved from the same bytes) with one point's settings and a backend
// ("" keeps the scenario's), checked as valnet run checks a scenario.
func Resolve(src *scenarios.Source, set []scenarios.Setting, backend string) (*scenarios.Plan, error) {
	return src.Resolve(scenarios.Overrides{Backend: backend, Set: set})
}

// checkBackend refuses a --backend that is not a backend, as a flag
// error (the scenario would report it at a file position it is not at).
func checkBackend(backend string) error { return CheckBackend("--backend", backend) }

// CheckBackend refuses a backend flag (--backend, valnet crosscheck's
// --model and --real) that names no backend a scenario may name; "" is
// the scenario's own and passes.
func CheckBackend(flag, backend string) error {
	if backend == "" || slices.Contains(scenarios.Backends(), backend) {
		return nil
	}
	return fmt.Errorf("%s %s: unknown backend; allowed: %s", flag, backend, strings.Join(scenarios.Backends(), ", "))
}

// backendPath is the key --backend sets: one backend per sweep or search
// (recorded in its identity), so it is not a key to vary.
const backendPath = "run.backend"

// refuseBackendPath refuses a flag (--set, --vary) that would vary the
// backend.
func refuseBackendPath(flag, path string) error {
	if strings.TrimSpace(path) != backendPath {
		return nil
	}
	return fmt.Errorf("%s %s: the backend is one per sweep or search and is recorded in its identity; choose it with --backend", flag, path)
}

// RunPoint resolves the scenario at one point and runs it once with seed
// into dir: what a threshold probe does per repeat.
func RunPoint(ctx context.Context, r Runner, src *scenarios.Source, set []scenarios.Setting, backend string, seed int64, dir string) (Result, error) {
	plan, err := Resolve(src, set, backend)
	if err != nil {
		return Result{}, err
	}
	return r.Run(ctx, plan, seed, dir)
}

// LoadFinished reads the result of a run directory whose run finished
// (summary.json with a stop reason of a run that ran to its end). ok is
// false for a directory with no run, or an unfinished one.
func LoadFinished(dir string) (res Result, ok bool, err error) {
	s, err := ReadSummary(dir)
	if s == nil || err != nil {
		return Result{}, false, err
	}
	res = fromSummary(s, s.Seed, dir)
	return res, res.Finished(), nil
}

// ReadSummary reads the summary.json of a run directory: nil and no
// error for a directory with no summary (no run, or one that did not get
// that far).
func ReadSummary(dir string) (*results.Summary, error) {
	data, err := os.ReadFile(filepath.Join(dir, runner.SummaryFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s results.Summary
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, runner.SummaryFile), err)
	}
	return &s, nil
}
