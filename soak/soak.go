// Package soak runs a long scenario under random faults from every family
// (valnet soak) and checks invariants while it goes: no double sign, no
// two blocks at one height, the chain resumes after the faults stop, the
// runner's heap and goroutines stay flat, no file descriptor leaks. The
// run is runner.Run's, as valnet run's (cmd → soak → runner); the faults
// are a scenario's faults: list, drawn from the seed, so they go through
// the same validation and timeline as a scenario's own.
package soak

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/valnet/valnet/scenarios"
)

// Config is one soak.
type Config struct {
	Source  *scenarios.Source
	Backend string // "" keeps the scenario's run.backend
	Seed    int64
	// Duration is the whole run; faults stop Quiet before its end.
	Duration time.Duration
	// Quiet is the fault-free tail (0: Duration/4, at least 90 s and at
	// most 5 m); the chain must resume within ResumeWithin of the faults'
	// end (0: 60 s), and ResumeWithin must fit in Quiet.
	Quiet, ResumeWithin time.Duration
	// Validators replaces the scenario's validators by this many, v-1 ..
	// v-N, each signing with a local key through a remote (unix) signer,
	// so that every signer fault applies; 0 keeps the scenario's.
	Validators int
	// Warmup is when the first fault may start (0: 15 s).
	Warmup time.Duration
}

// Defaults of Config.
const (
	DefaultValidators   = 7
	DefaultResumeWithin = 60 * time.Second
	defaultWarmup       = 15 * time.Second
	// startSlack: fault times count from the network's start, the run's
	// duration from its own; the tail must hold the bound and this.
	startSlack = 20 * time.Second
	// farHeight stands for "no height target": the run stops at its
	// duration (run.max_duration).
	farHeight = 1_000_000_000
)

// Prepared is a soak ready to run: the plan with its schedule.
type Prepared struct {
	Config
	Plan     *scenarios.Plan
	Schedule []Fault
	// Missing are the families this plan cannot have, and why.
	Missing map[Family]string
	// FaultsEnd is when the last fault has ended (since the network
	// started).
	FaultsEnd time.Duration
}

// Prepare checks cfg, draws the schedule and resolves the scenario with
// it. Every error is bad input.
func Prepare(cfg Config) (*Prepared, error) {
	if cfg.Quiet == 0 {
		cfg.Quiet = min(max(cfg.Duration/4, 90*time.Second), 5*time.Minute)
	}
	if cfg.ResumeWithin == 0 {
		cfg.ResumeWithin = DefaultResumeWithin
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = defaultWarmup
	}
	switch {
	case cfg.Duration <= 0:
		return nil, fmt.Errorf("--duration %v: must be greater than 0, e.g. 30m", cfg.Duration)
	case cfg.Validators < 0:
		return nil, fmt.Errorf("--validators %d: must be 0 (the scenario's) or more", cfg.Validators)
	case cfg.ResumeWithin+startSlack > cfg.Quiet:
		return nil, fmt.Errorf("--resume-within %v does not fit in the fault-free tail (--tail %v) with %v for the network's start: the resumption could not be seen; give --tail %v or more",
			cfg.ResumeWithin, cfg.Quiet, startSlack, cfg.ResumeWithin+startSlack)
	case cfg.Warmup+minFault > cfg.Duration-cfg.Quiet:
		return nil, fmt.Errorf("--duration %v leaves no time for faults: they run from %v to the fault-free tail (--tail %v); give at least %v",
			cfg.Duration, cfg.Warmup, cfg.Quiet, cfg.Warmup+minFault+cfg.Quiet)
	}
	base := []scenarios.Setting{
		{Path: "run.heights", Value: strconv.Itoa(farHeight)},
		{Path: "run.max_duration", Value: cfg.Duration.String()},
		{Path: "expect", Value: "[]"},
	}
	if cfg.Validators > 0 {
		base = append(base, scenarios.Setting{Path: "validators",
			Value: fmt.Sprintf("[{name: v, count: %d, signer: {type: local, via: unix}}]", cfg.Validators)})
	}
	// The scenario's own faults go: the soak's replace them.
	plan, err := cfg.Source.Resolve(scenarios.Overrides{Backend: cfg.Backend, Set: append(base, scenarios.Setting{Path: "faults", Value: "[]"})})
	if err != nil {
		return nil, err
	}
	if plan.Run.Backend == scenarios.BackendSim {
		return nil, errors.New("the sim backend is a model in virtual time: a soak checks real nodes; choose --backend inprocess, process or docker")
	}
	gen := genConfig(cfg, plan)
	p := &Prepared{Config: cfg, Schedule: Generate(gen), FaultsEnd: gen.End}
	_, p.Missing = gen.Available()
	set := append(base, scenarios.Setting{Path: "faults", Value: FlowYAML(p.Schedule)})
	if p.Plan, err = cfg.Source.Resolve(scenarios.Overrides{Backend: cfg.Backend, Set: set}); err != nil {
		// The generator made a schedule the scenario refuses: a soak bug,
		// reported with the schedule that shows it.
		return nil, fmt.Errorf("the generated fault schedule does not validate (seed %d): %w\n%s", cfg.Seed, err, ScheduleYAML(p.Schedule))
	}
	return p, nil
}

// genConfig is the generator's view of a plan.
func genConfig(cfg Config, plan *scenarios.Plan) GenConfig {
	g := GenConfig{Seed: cfg.Seed, Start: cfg.Warmup, End: cfg.Duration - cfg.Quiet,
		Pause: slices.Contains([]string{"process", "docker"}, plan.Run.Backend)}
	for _, v := range plan.Validators {
		g.Validators = append(g.Validators, v.Name)
		if v.Signer.Via != scenarios.ViaDirect {
			g.Remote = append(g.Remote, v.Name)
		}
		if tp := v.Signer.Threshold; tp != nil {
			if g.Cosigners == nil {
				g.Cosigners = map[string]int{}
			}
			g.Cosigners[v.Name] = tp.Cosigners
		}
	}
	return g
}
