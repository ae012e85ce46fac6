package sweep

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/valnet/valnet/runner"
	"github.com/valnet/valnet/scenarios"
)

// ThresholdSpec is a `valnet threshold` command line.
type ThresholdSpec struct {
	Scenario   string // a file, a builtin name or "-"
	Key        string // --vary
	Range      string // --range LO..HI
	Resolution string // --resolution; "" = the range / 32
	Target     string // --target
	Direction  string // --direction; "" = largest
	Repeat     int    // --repeat; runs per probe
	Seed       *int64 // --seed; nil = the scenario's run.seed
	Backend    string // --backend; "" = the scenario's run.backend
	OutDir     string // --out; "" = DefaultThresholdDir
	// Confirm (--confirm) reruns the two values that bracket the
	// threshold on this backend (real nodes after a search on the sim),
	// with the same seeds; "" = none.
	Confirm string
}

// Prepare checks the whole command line before any run: the key is a
// path of the scenario, the range fits its kind, the plans at both ends
// resolve (so the values are accepted) and pass the preflight checks, and
// the target names a metric those plans have. Every problem found is
// returned together. runs runs the probes (RealRunner; a fake in tests).
func (sp ThresholdSpec) Prepare(ctx context.Context, runs Runner, out io.Writer) (*Threshold, error) {
	var errs []error
	bad := func(err error) { errs = append(errs, err) }
	th := &Threshold{Key: sp.Key, OutDir: sp.OutDir, Out: out, Finished: LoadFinished}

	dir := Largest
	if sp.Direction != "" {
		d, err := ParseDirection(sp.Direction)
		if err != nil {
			bad(err)
		}
		dir = d
	}
	th.Direction = dir
	if sp.Repeat < 1 {
		bad(fmt.Errorf("--repeat %d: want at least 1 run per probe", sp.Repeat))
	}
	target, terr := ParseTarget(sp.Target)
	if terr != nil {
		bad(terr)
	}

	if err := checkBackend(sp.Backend); err != nil {
		return nil, errors.Join(append(errs, err)...) // every resolve would report it again
	}
	if err := refuseBackendPath("--vary", sp.Key); err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	// The scenario is read once: every probe resolves from these bytes,
	// the ones the stamp hashes (stdin cannot be read again, and a file
	// edited mid-search must not mix two scenarios).
	src, err := scenarios.ReadSource(sp.Scenario)
	if err != nil {
		return nil, errors.Join(append(errs, err)...) // nothing else can be checked
	}
	th.RunPoint = func(ctx context.Context, key, value string, seed int64, dir string) (Result, error) {
		return RunPoint(ctx, runs, src, []scenarios.Setting{{Path: key, Value: value, Flag: "--vary"}}, sp.Backend, seed, dir)
	}
	if sp.Confirm != "" {
		if err := CheckBackend("--confirm", sp.Confirm); err != nil {
			return nil, errors.Join(append(errs, err)...)
		}
		th.ConfirmBackend = sp.Confirm
		th.ConfirmPoint = func(ctx context.Context, key, value string, seed int64, dir string) (Result, error) {
			return RunPoint(ctx, runs, src, []scenarios.Setting{{Path: key, Value: value, Flag: "--vary"}}, sp.Confirm, seed, dir)
		}
	}
	base, err := src.Resolve(scenarios.Overrides{Backend: sp.Backend})
	if err != nil {
		return nil, errors.Join(append(errs, err)...) // nothing else can be checked
	}
	// Without a usable --vary or --range there are no ends to resolve;
	// the target is then checked on the scenario as written, so that
	// every problem of the command line is said at once.
	unit, err := rangeUnit(sp.Key)
	var grid Grid
	if err != nil {
		bad(fmt.Errorf("--vary %s: %w", sp.Key, err))
	} else if grid, err = ParseGrid(unit, sp.Range, sp.Resolution); err != nil {
		bad(fmt.Errorf("%w (%s takes %ss)", err, sp.Key, unit))
	}
	if len(errs) > 0 {
		if terr == nil {
			if _, err := base.MetricRef(target.Metric); err != nil {
				bad(fmt.Errorf("--target %q: %s", sp.Target, metricProblem(target.Metric, err)))
			}
		}
		return nil, errors.Join(errs...)
	}
	th.Grid = grid

	// The plans at both ends: the values are accepted by the very decoder
	// a run uses, and the target's validator exists at both.
	said := map[string]bool{} // a problem of both ends is said once
	once := func(value string, err error) {
		if msg := strings.ReplaceAll(err.Error(), "="+value, "=VALUE"); !said[msg] {
			said[msg] = true
			bad(err)
		}
	}
	backends := []string{sp.Backend}
	if sp.Confirm != "" {
		backends = append(backends, sp.Confirm) // its runs must be possible too (a real backend runs at most 200 validators)
	}
	type end struct {
		value   string
		backend string
	}
	var ends []end
	for _, b := range backends {
		ends = append(ends, end{grid.Format(grid.Lo), b}, end{grid.Format(grid.Hi), b})
	}
	for _, e := range ends {
		backend, value := e.backend, e.value
		set := []scenarios.Setting{{Path: sp.Key, Value: value, Flag: "--vary"}}
		plan, err := Resolve(src, set, backend)
		if err != nil && backend == sp.Confirm && backend != sp.Backend {
			for _, e := range scenarios.SplitErrors(err) {
				once(value, fmt.Errorf("--confirm %s: %w", backend, e))
			}
			continue
		}
		if err != nil {
			for _, e := range scenarios.SplitErrors(err) {
				if !fromSetting(e) { // the scenario's problem at this end
					e = fmt.Errorf("at %s: %w", settingsString(set), e)
				}
				once(value, e)
			}
			continue
		}
		if ps := runner.Preflight(ctx, plan); len(ps) > 0 {
			once(value, fmt.Errorf("%s=%s: %w", sp.Key, value, ps))
		}
		if terr == nil {
			ref, err := plan.MetricRef(target.Metric)
			if err != nil {
				bad(fmt.Errorf("--target %q at %s=%s: %s", sp.Target, sp.Key, value, metricProblem(target.Metric, err)))
				terr = err // once is enough
			} else {
				target.Metric = ref.String()
			}
		}
	}
	th.Target = target
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	seed := base.Run.Seed
	if sp.Seed != nil {
		seed = *sp.Seed
	}
	th.Seeds = RepeatSeeds(seed, sp.Repeat)
	if th.OutDir == "" {
		th.OutDir = DefaultThresholdDir(base.Name, sp.Key, base.Run.Backend, seed)
	}
	th.Warnings = resolutionWarnings(th.Target, base.Run.Heights)
	sum := sha256.Sum256(base.Text)
	th.Stamp = Stamp{Scenario: sp.Scenario, ScenarioSHA256: hex.EncodeToString(sum[:]),
		Backend: base.Run.Backend, Key: sp.Key, Seed: seed}
	return th, nil
}

// resolutionWarnings says when a target is finer than a run can resolve:
// a rate over N heights moves in steps of 1/N, so at 15 heights
// "missed_precommits_rate(hsm) <= 0.05" holds only with no miss at all.
func resolutionWarnings(t Target, heights int64) []string {
	name, _, _ := strings.Cut(t.Metric, "(")
	if !strings.HasSuffix(name, "_rate") || heights <= 0 || t.Bound <= 0 || t.Bound >= 1 {
		return nil
	}
	step := 1 / float64(heights)
	if t.Bound >= step {
		return nil
	}
	means := "holds only with none at all (a rate of 0)"
	if t.Op == AtLeast {
		means = "holds with a single one (the smallest rate above 0)"
	}
	return []string{fmt.Sprintf("--target %s: at %d heights a rate moves in steps of 1/%d = %.4g, so %s %s %g %s; "+
		"more run.heights resolve it finer", t, heights, heights, step, name, t.Op, t.Bound, means)}
}

// DefaultThresholdDir is where a search goes without --out: the same
// directory for the same scenario, key, backend and base seed, so that the
// same command again resumes it, and another backend or seed goes
// elsewhere (its runs would not be this search's):
// runs/threshold-SCENARIO-KEY-HASH, HASH a short hash of the backend and
// the seed, e.g. runs/threshold-slow-signer-validators_slow_.signer.latency-1a2b3c4d.
func DefaultThresholdDir(scenario, key, backend string, seed int64) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", backend, seed))
	return filepath.Join("runs", "threshold-"+scenario+"-"+safeName(key)+"-"+hex.EncodeToString(sum[:])[:8])
}

// rangeUnit is how a range of the key's values is read: the key must be
// a duration, a latency (a fixed delay), an integer or a number.
func rangeUnit(key string) (Unit, error) {
	kind, err := scenarios.PathKind(key)
	if err != nil {
		return 0, err
	}
	switch kind {
	case scenarios.KindDuration, scenarios.KindLatency:
		return Durations, nil
	case scenarios.KindInteger:
		return Integers, nil
	case scenarios.KindNumber:
		return Numbers, nil
	}
	return 0, fmt.Errorf("its value is a %s; a threshold needs a key whose value is a duration or a number", kind)
}

// RepeatSeeds are the seeds of n repeats from a base seed: base, base+1,
// ... (recorded in every run's summary.json and in threshold.json).
func RepeatSeeds(base int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = RepeatSeed(base, i+1)
	}
	return out
}
