package calibrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/valnet/valnet/internal/stats"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/runner"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/sim"
)

// Config is a calibration's grid: real in-process networks of each size,
// full mesh, default timeouts, no injected latency.
type Config struct {
	Validators []int  // network sizes, e.g. 4, 7, 10
	Heights    int64  // heights per real run
	Seed       int64  // run seed
	Name       string // the calibration's name
	OutDir     string // real and fitted runs go here
	// Cores is how many cores the real nodes shared (this host's); the
	// fit runs the sim with run.sim.shared_cores = Cores, so what this
	// host's contention adds is not learnt as per-node cost.
	Cores int
	// Command is how the calibration was asked for, recorded in source.
	Command string
}

// DefaultConfig is the grid the shipped calibration was made with.
func DefaultConfig() Config {
	return Config{Validators: []int{4, 7, 10}, Heights: 25, Seed: 1, Name: "calibrated", Cores: runtime.NumCPU()}
}

// Point is one network size: what the real run showed and what the
// fitted sim shows.
type Point struct {
	Validators     int     `json:"validators"`
	Overloaded     bool    `json:"overloaded"` // the host monitor marked the real run overloaded: left out of the fit
	CPUPerNode     float64 `json:"cpu_per_node"`
	Real, Sim      Stats   `json:"-"`
	RealDir, SimDr string  `json:"-"`
}

// Stats are the figures matched, in ms.
type Stats struct {
	IntervalP50, IntervalP95         float64
	ProposalHop, PrevoteToPrecommit  float64 // p50s
	PrecommitToCommit, RoundToCommit float64
}

func statsOf(s *results.Summary, d Delays) Stats {
	return Stats{IntervalP50: s.BlockIntervalMS.P50, IntervalP95: s.BlockIntervalMS.P95,
		ProposalHop: stats.Percentile(d.ProposalHop, 50), PrevoteToPrecommit: stats.Percentile(d.PrevoteToPrecommit, 50),
		PrecommitToCommit: stats.Percentile(d.PrecommitToCommit, 50), RoundToCommit: stats.Percentile(d.RoundToCommit, 50)}
}

// Result is a fitted calibration with the grid it came from.
type Result struct {
	Params sim.Params
	Points []Point
	Error  float64 // root mean square relative error of the matched figures
	// AtBound: the best fit lies on a bound of the search (fitBounds), so
	// the real optimum may be outside what the model can be given.
	AtBound bool
}

// MaxFitError is the largest RMS relative error a calibration may have and
// still be called a fit: the shipped one's is 0.067; at 0.15 the sim's
// block interval is already ~100 ms off a real one at default timeouts.
const MaxFitError = 0.15

// Poor says why a fit must not be trusted ("" when it may): an error above
// MaxFitError, or an optimum on the search's bound.
func (r *Result) Poor() string {
	var why []string
	if r.Error > MaxFitError {
		why = append(why, fmt.Sprintf("RMS relative error %.3f is above %.2f (the shipped calibration's is 0.067)", r.Error, MaxFitError))
	}
	if r.AtBound {
		why = append(why, fmt.Sprintf("the best fit (gossip_sleep %v, vote_cost %v) is on the bound of what the search may try (%s)", r.Params.GossipSleep, r.Params.VoteCost, fitBounds))
	}
	return strings.Join(why, "; ")
}

// scenario is the YAML of one grid point.
func scenario(n int, heights int64, seed int64, backend, calibration string, cores int) string {
	yaml := fmt.Sprintf("name: calibrate-%d\nrun: {backend: %s, heights: %d, seed: %d, max_duration: 10m", n, backend, heights, seed)
	if backend == scenarios.BackendSim {
		yaml += fmt.Sprintf(", sim: {calibration: %q, shared_cores: %d}", calibration, cores)
	}
	return yaml + fmt.Sprintf("}\nvalidators:\n  - {name: v, count: %d}\n", n)
}

// runOne runs one scenario into dir and reads back its summary and delays.
func runOne(ctx context.Context, yaml, dir string) (*results.Summary, Delays, error) {
	plan, err := scenarios.Parse(filepath.Join(dir, "scenario.yaml"), []byte(yaml))
	if err != nil {
		return nil, Delays{}, err
	}
	out, err := runner.Run(ctx, plan, runner.Options{OutDir: dir})
	if err != nil {
		return nil, Delays{}, err
	}
	events, err := eventlog.ReadFile(filepath.Join(dir, runner.EventsFile))
	if err != nil {
		return nil, Delays{}, err
	}
	return out.Summary, Measure(events), nil
}

// Run runs the real grid, measures, fits and returns the calibration.
func Run(ctx context.Context, cfg Config, progress io.Writer) (*Result, error) {
	if len(cfg.Validators) == 0 || cfg.Heights < 5 {
		return nil, errors.New("calibrate: needs at least one network size and 5 heights")
	}
	res := &Result{}
	var all Delays
	for _, n := range cfg.Validators {
		dir := filepath.Join(cfg.OutDir, fmt.Sprintf("real-%d", n))
		fmt.Fprintf(progress, "valnet: real run, %d validators in-process, %d heights into %s\n", n, cfg.Heights, dir)
		s, d, err := runOne(ctx, scenario(n, cfg.Heights, cfg.Seed, "inprocess", "", 0), dir)
		if err != nil {
			return nil, fmt.Errorf("real run of %d validators: %w", n, err)
		}
		if s.StopReason != eventlog.StopHeights {
			return nil, fmt.Errorf("real run of %d validators stopped early (%s)", n, s.StopReason)
		}
		p := Point{Validators: n, Real: statsOf(s, d), RealDir: dir}
		if s.Host != nil {
			p.Overloaded = s.Host.Overloaded
			p.CPUPerNode = s.Host.CPUBusyP95 * float64(s.Host.Cores) / float64(n)
		}
		if !p.Overloaded {
			all.LocalSign = append(all.LocalSign, d.LocalSign...)
			all.Finalize = append(all.Finalize, d.Finalize...)
			all.Propose = append(all.Propose, d.Propose...)
		}
		res.Points = append(res.Points, p)
	}
	fitted := 0
	for _, p := range res.Points {
		if !p.Overloaded {
			fitted++
		}
	}
	if fitted == 0 {
		return nil, errors.New("calibrate: every real run overloaded this host (summary host.overloaded): its figures are the machine's, not the nodes'; use fewer validators")
	}
	for _, s := range []*[]float64{&all.LocalSign, &all.Finalize, &all.Propose} {
		sortFloats(*s)
	}
	base, err := sim.LoadParams(sim.DefaultCalibration)
	if err != nil {
		return nil, err
	}
	base.Name = cfg.Name
	base.SignLocal = msDur(stats.Percentile(all.LocalSign, 50))
	base.CommitCost = msDur(stats.Percentile(all.Finalize, 50))
	base.ProposeCost = msDur(stats.Percentile(all.Propose, 50))
	objective := func(sleep, vote time.Duration) (float64, error) {
		cand := base
		cand.GossipSleep, cand.VoteCost = sleep, vote
		return fitError(ctx, cfg, cand, res.Points, "")
	}
	f, err := searchFit(ctx, objective)
	if err != nil {
		return nil, err
	}
	best, bestErr := base, f.Error
	best.GossipSleep, best.VoteCost = f.GossipSleep, f.VoteCost
	res.AtBound = f.AtBound
	best.Source = fmt.Sprintf("%s; %d-core host, %s; real in-process runs of %s validators × %d heights (seed %d), full mesh, default timeouts; fit RMS relative error %.3f",
		cfg.Command, cfg.Cores, time.Now().UTC().Format("2006-01-02"), intsText(cfg.Validators), cfg.Heights, cfg.Seed, bestErr)
	res.Params, res.Error = best, bestErr
	if _, err := fitError(ctx, cfg, best, res.Points, "sim"); err != nil {
		return nil, err
	}
	return res, nil
}

// fitError runs the sim with p at every point that was not overloaded and
// returns the RMS relative error against the real figures. keep names the
// run directories to keep (the chosen fit's), "" for throwaway ones.
func fitError(ctx context.Context, cfg Config, p sim.Params, points []Point, keep string) (float64, error) {
	tmp, err := os.MkdirTemp("", "valnet-calibrate-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	data, err := p.Marshal()
	if err != nil {
		return 0, err
	}
	cal := filepath.Join(tmp, "candidate.yaml")
	if err := os.WriteFile(cal, data, 0o644); err != nil {
		return 0, err
	}
	var sum float64
	var n int
	for i := range points {
		pt := &points[i]
		if pt.Overloaded {
			continue
		}
		dir := filepath.Join(tmp, fmt.Sprintf("sim-%d", pt.Validators))
		if keep != "" {
			dir = filepath.Join(cfg.OutDir, fmt.Sprintf("%s-%d", keep, pt.Validators))
			_ = os.RemoveAll(dir)
		}
		s, d, err := runOne(ctx, scenario(pt.Validators, cfg.Heights, cfg.Seed, scenarios.BackendSim, cal, cfg.Cores), dir)
		if err != nil {
			return 0, err
		}
		got := statsOf(s, d)
		if keep != "" {
			pt.Sim, pt.SimDr = got, dir
		}
		for _, pair := range [][2]float64{
			{got.IntervalP50, pt.Real.IntervalP50}, {got.IntervalP95, pt.Real.IntervalP95},
			{got.ProposalHop, pt.Real.ProposalHop}, {got.PrevoteToPrecommit, pt.Real.PrevoteToPrecommit},
			{got.PrecommitToCommit, pt.Real.PrecommitToCommit},
		} {
			if pair[1] <= 0 {
				continue
			}
			// The in-height delays are matched on their own scale, not
			// the block interval's (dominated by timeout_commit).
			r := (pair[0] - pair[1]) / pair[1]
			sum += r * r
			n++
		}
	}
	if n == 0 {
		return 0, errors.New("calibrate: nothing to fit")
	}
	return math.Sqrt(sum / float64(n)), nil
}

func msDur(ms float64) time.Duration {
	return time.Duration(ms * float64(time.Millisecond)).Round(time.Microsecond)
}

func intsText(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ", ")
}
