package crosscheck

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/sweep"
)

// Side is one of the two backends of a crosscheck.
type Side string

// The sides: --model (default sim, a MODEL of consensus) and --real
// (default inprocess, real CometBFT nodes).
const (
	Model Side = "model"
	Real  Side = "real"
)

// Sides are both, in the order they run and are shown.
var Sides = []Side{Model, Real}

// Default backends of the sides.
const (
	DefaultModel = "sim"
	DefaultReal  = "inprocess"
)

// Config is one valnet crosscheck command.
type Config struct {
	Grid   *Grid
	Model  string         // the backend of the model side
	Real   string         // the backend of the real side
	Repeat int            // runs per case and side, >= 1; goals compare the means
	Seed   *int64         // base seed; nil: each case's run.seed. Repeat r runs with base + r - 1 on both sides
	Only   *regexp.Regexp // the cases to run; nil: all
	OutDir string
	// ModelSet are settings the model side alone gets, after each case's
	// own: run.sim.shared_cores=2 makes the sim share this host's 2 cores
	// as the real side's nodes do.
	ModelSet []scenarios.Setting
}

// Check is a crosscheck ready to run: every selected case resolved on
// both backends.
type Check struct {
	Config
	Cases    []PreparedCase
	Identity Identity
}

// PreparedCase is a case with its plan on each side.
type PreparedCase struct {
	Case
	Plans map[Side]*scenarios.Plan
}

// Repeats is how many runs each side of case pc has: the case's own
// repeat, else the check's.
func (c *Check) Repeats(pc PreparedCase) int {
	if pc.Repeat > 0 {
		return pc.Repeat
	}
	return c.Repeat
}

// Identity is what must match for a rerun to resume into a crosscheck
// directory (sweep.ClaimOutDir): the grid and its cases' scenarios (the
// text of every plan), the backends, the selection and the base seed.
type Identity struct {
	Grid     string `json:"grid"`
	GridFile string `json:"grid_file"`
	Model    string `json:"model_backend"`
	Real     string `json:"real_backend"`
	Only     string `json:"only,omitempty"`
	BaseSeed *int64 `json:"base_seed,omitempty"`
	// SHA256 hashes the grid file and every selected case's resolved
	// scenario on both sides, so an edit between two invocations is
	// noticed.
	SHA256 string `json:"sha256"`
}

// Backend is the backend of a side.
func (c *Check) Backend(s Side) string {
	if s == Model {
		return c.Model
	}
	return c.Real
}

// Prepare checks a crosscheck before anything runs: the flags, then every
// selected case resolved on both backends (each scenario read once).
// Every problem is reported, joined.
func Prepare(cfg Config) (*Check, error) {
	var errs []error
	if cfg.Repeat < 1 {
		errs = append(errs, fmt.Errorf("--repeat %d: give at least 1", cfg.Repeat))
	}
	for _, f := range []struct{ flag, backend string }{{"--model", cfg.Model}, {"--real", cfg.Real}} {
		if f.backend == "" {
			errs = append(errs, fmt.Errorf("%s: give a backend (%s)", f.flag, strings.Join(scenarios.Backends(), ", ")))
		} else if err := sweep.CheckBackend(f.flag, f.backend); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 || cfg.Grid == nil {
		if cfg.Grid == nil {
			errs = append(errs, errors.New("no grid"))
		}
		return nil, errors.Join(errs...)
	}
	c := &Check{Config: cfg}
	var names []string
	for _, gc := range cfg.Grid.Cases {
		names = append(names, gc.Name)
		if cfg.Only == nil || cfg.Only.MatchString(gc.Name) {
			c.Cases = append(c.Cases, PreparedCase{Case: gc, Plans: map[Side]*scenarios.Plan{}})
		}
	}
	if len(c.Cases) == 0 {
		return nil, fmt.Errorf("--only %s matches no case of grid %s (cases: %s)", cfg.Only, cfg.Grid.Name, strings.Join(names, ", "))
	}
	sources := map[string]*scenarios.Source{}
	hash := sha256.New()
	hash.Write(cfg.Grid.Text)
	for i := range c.Cases {
		pc := &c.Cases[i]
		at := fmt.Sprintf("%s: case %s", pc.Pos, pc.Name)
		src, ok := sources[pc.Scenario]
		if !ok {
			var err error
			if src, err = scenarios.ReadSource(pc.Scenario); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", at, err))
				continue
			}
			sources[pc.Scenario] = src
		}
		// A problem of both sides is said once; one of one side names it.
		var order []string
		sides := map[string][]Side{}
		for _, s := range Sides {
			set := pc.Set
			if s == Model {
				set = append(slices.Clone(pc.Set), cfg.ModelSet...)
			}
			plan, err := sweep.Resolve(src, set, c.Backend(s))
			if err != nil {
				for _, e := range scenarios.SplitErrors(err) {
					if sides[e.Error()] == nil {
						order = append(order, e.Error())
					}
					sides[e.Error()] = append(sides[e.Error()], s)
				}
				continue
			}
			pc.Plans[s] = plan
			hash.Write(plan.Text)
			fmt.Fprintf(hash, "\x00%s\x00", plan.Run.Backend)
		}
		for _, msg := range order {
			where := at
			if ss := sides[msg]; len(ss) == 1 {
				where += fmt.Sprintf(" (%s side, backend %s)", ss[0], c.Backend(ss[0]))
			}
			errs = append(errs, fmt.Errorf("%s: %s", where, msg))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for _, st := range cfg.ModelSet {
		fmt.Fprintf(hash, "\x00model:%s=%s", st.Path, st.Value)
	}
	c.Identity = Identity{Grid: cfg.Grid.Name, GridFile: cfg.Grid.File, Model: cfg.Model, Real: cfg.Real,
		BaseSeed: cfg.Seed, SHA256: hex.EncodeToString(hash.Sum(nil))}
	if cfg.Only != nil {
		c.Identity.Only = cfg.Only.String()
	}
	return c, nil
}

// Preflight runs the runner's checks (backend, binaries, signer secrets)
// once per distinct shape of plan, before any run.
func (c *Check) Preflight(ctx context.Context) error {
	var plans []*scenarios.Plan
	for _, pc := range c.Cases {
		for _, s := range Sides {
			plans = append(plans, pc.Plans[s])
		}
	}
	return sweep.PreflightPlans(ctx, plans)
}

// Seed is the seed of repeat r (1-based) of a case, the same on both
// sides.
func (c *Check) Seed(pc PreparedCase, r int) int64 {
	base := pc.Plans[Real].Run.Seed
	if c.Config.Seed != nil {
		base = *c.Config.Seed
	}
	return sweep.RepeatSeed(base, r)
}

// RunDir is the run directory of repeat r of a case on one side, relative
// to the crosscheck directory: CASE/model/r1.
func RunDir(pc PreparedCase, s Side, r int) string {
	return fmt.Sprintf("%s/%s/r%d", pc.Name, s, r)
}

// ClaimDir makes the crosscheck directory, or checks that the one there
// holds this very crosscheck (then it is resumed).
func (c *Check) ClaimDir() error {
	_, err := sweep.ClaimOutDir(c.OutDir, JSONFile, "crosscheck", func(data []byte) (string, error) {
		var old struct {
			Identity Identity `json:"identity"`
		}
		if err := json.Unmarshal(data, &old); err != nil {
			return "", err
		}
		return c.Identity.diff(old.Identity), nil
	})
	return err
}

// diff names what differs between two crosschecks, "" when nothing.
func (id Identity) diff(old Identity) string {
	seed := func(p *int64) string {
		if p == nil {
			return "each case's run.seed"
		}
		return fmt.Sprint(*p)
	}
	switch {
	case id.Grid != old.Grid || id.GridFile != old.GridFile:
		return fmt.Sprintf("grid %s (%s), not %s (%s)", old.Grid, old.GridFile, id.Grid, id.GridFile)
	case id.Model != old.Model:
		return fmt.Sprintf("model backend %s, not %s", old.Model, id.Model)
	case id.Real != old.Real:
		return fmt.Sprintf("real backend %s, not %s", old.Real, id.Real)
	case id.Only != old.Only:
		return fmt.Sprintf("--only %q, not %q", old.Only, id.Only)
	case seed(id.BaseSeed) != seed(old.BaseSeed):
		return fmt.Sprintf("base seed %s, not %s", seed(old.BaseSeed), seed(id.BaseSeed))
	case id.SHA256 != old.SHA256:
		return "the grid or a case's scenario changed since"
	}
	return ""
}
