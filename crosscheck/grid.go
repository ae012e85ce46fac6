// Package crosscheck runs the same scenarios on two backends (valnet
// crosscheck: the sim MODEL against real nodes, or two real backends) and
// compares what they report against agreement goals. Each case is a base
// scenario with settings, resolved and run by sweep (cmd → crosscheck →
// sweep → runner); the comparison reads the two runs' summaries.
package crosscheck

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/valnet/valnet/scenarios"
)

// Grid is a crosscheck grid file: the cases to run on both backends and
// the goals they are judged by.
type Grid struct {
	Name        string
	Description string
	File        string // the name in messages: a path, or builtin:default
	Text        []byte // the file as read (hashed into the identity)
	Goals       Goals
	Cases       []Case
}

// Case is one scenario with its settings, run on both backends.
type Case struct {
	Name        string
	Description string
	// Scenario is a builtin name or a file (joined to the grid's
	// directory), as scenarios.ReadSource takes it.
	Scenario string
	// Set is the grid's set, then the case's own, in order.
	Set []scenarios.Setting
	// Repeat is the case's runs per side; 0: the check's (--repeat).
	Repeat int
	Pos    scenarios.Pos // where the case starts in the grid file
}

// Goals are the tolerances of the comparison, each symmetric (±).
type Goals struct {
	MissedRatePP      float64 `json:"missed_precommits_rate_pp"`
	RoundChangesPer20 float64 `json:"round_changes_per_20_heights"`
	BlockIntervalPct  float64 `json:"block_interval_pct"`
	HaltDurationPct   float64 `json:"halt_duration_pct"`
}

// DefaultGoals are the issue's: missed-precommit rate per validator within
// ±5 percentage points, heights with a round change within ±1 per 20
// heights, block interval p50 and p95 within ±10 %, halts at the same
// height and their duration within ±15 %.
var DefaultGoals = Goals{MissedRatePP: 5, RoundChangesPer20: 1, BlockIntervalPct: 10, HaltDurationPct: 15}

// rawGrid is the grid file (docs/crosscheck.md lists every key; a test
// checks it).
type rawGrid struct {
	Name        *string   `yaml:"name"`        // default: the file's name without .yaml
	Description *string   `yaml:"description"` // default none
	Goals       *rawGoals `yaml:"goals"`       // default DefaultGoals
	Set         []string  `yaml:"set"`         // default none; PATH=VALUE before every case's own
	Cases       []rawCase `yaml:"cases"`       // required, at least one
}

type rawGoals struct {
	MissedRatePP      *float64 `yaml:"missed_precommits_rate_pp"`    // default 5
	RoundChangesPer20 *float64 `yaml:"round_changes_per_20_heights"` // default 1
	BlockIntervalPct  *float64 `yaml:"block_interval_pct"`           // default 10
	HaltDurationPct   *float64 `yaml:"halt_duration_pct"`            // default 15
}

type rawCase struct {
	Name        *string  `yaml:"name"`        // required; unique; letters, digits, . _ -
	Description *string  `yaml:"description"` // default none
	Scenario    *string  `yaml:"scenario"`    // required; a builtin name, or a .yaml file relative to the grid
	Set         []string `yaml:"set"`         // default none; PATH=VALUE, one value each
	Repeat      *int64   `yaml:"repeat"`      // default: --repeat (1); runs per side of this case, at least 1
}

// DefaultGridName is the built-in grid, valnet crosscheck without --grid.
const DefaultGridName = "default"

//go:embed default.yaml
var defaultGrid []byte

// builtinPrefix names the built-in grid in messages, as builtin
// scenarios are named.
const builtinPrefix = "builtin:"

// ReadGrid reads a grid file, or the built-in grid for "" or "default"
// (a file named default.yaml is a file: give ./default.yaml).
func ReadGrid(path string) (*Grid, error) {
	if path == "" || path == DefaultGridName {
		return ParseGrid(builtinPrefix+DefaultGridName, "", defaultGrid)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--grid: %w", err)
	}
	return ParseGrid(path, filepath.Dir(path), data)
}

var (
	namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	nameAdvice  = "use letters, digits, '.', '_' and '-', starting with a letter or digit"
)

// ParseGrid decodes a grid strictly: every unknown key, wrong type and bad
// value, each at file:line:col, all at once (scenarios.Errors). Scenario
// files are joined to dir ("" keeps them as written).
func ParseGrid(file, dir string, data []byte) (*Grid, error) {
	var raw rawGrid
	doc := scenarios.DecodeStrict(file, "crosscheck grid", data, &raw)
	g := &Grid{File: file, Text: data, Goals: DefaultGoals}
	g.Name = strings.TrimSuffix(strings.TrimSuffix(filepath.Base(file), ".yaml"), ".yml")
	g.Name = strings.TrimPrefix(g.Name, builtinPrefix)
	if raw.Name != nil {
		g.Name = *raw.Name
	}
	if !namePattern.MatchString(g.Name) && !doc.Failed("name") {
		what := fmt.Sprintf("%q", g.Name)
		if raw.Name == nil {
			what = fmt.Sprintf("the file's name %q (write name:)", g.Name)
		}
		doc.Fail("name", fmt.Sprintf("%s cannot name the grid (its output directory is named by it); %s", what, nameAdvice))
	}
	if raw.Description != nil {
		g.Description = *raw.Description
	}
	if rg := raw.Goals; rg != nil {
		for _, f := range []struct {
			key string
			raw *float64
			dst *float64
		}{
			{"goals.missed_precommits_rate_pp", rg.MissedRatePP, &g.Goals.MissedRatePP},
			{"goals.round_changes_per_20_heights", rg.RoundChangesPer20, &g.Goals.RoundChangesPer20},
			{"goals.block_interval_pct", rg.BlockIntervalPct, &g.Goals.BlockIntervalPct},
			{"goals.halt_duration_pct", rg.HaltDurationPct, &g.Goals.HaltDurationPct},
		} {
			if f.raw == nil {
				continue
			}
			if *f.raw < 0 {
				doc.Fail(f.key, fmt.Sprintf("%g: a tolerance is >= 0", *f.raw))
				continue
			}
			*f.dst = *f.raw
		}
	}
	common := settings(doc, "set", raw.Set)
	if len(raw.Cases) == 0 && !doc.Failed("cases") {
		doc.Fail("cases", "required: list at least one case, e.g. cases: [{name: base, scenario: baseline}]")
	}
	first := map[string]int{} // case name -> the line it was first given at
	for i, rc := range raw.Cases {
		at := fmt.Sprintf("cases[%d]", i)
		c := Case{Pos: doc.KeyPos(at), Set: common}
		switch {
		case rc.Name == nil:
			if !doc.Failed(at) {
				doc.Fail(at+".name", "required: give the case a name, e.g. name: slow-1s")
			}
		case !namePattern.MatchString(*rc.Name):
			doc.Fail(at+".name", fmt.Sprintf("%q cannot name a case (its run directories are named by it); %s", *rc.Name, nameAdvice))
		default:
			c.Name = *rc.Name
			if line, dup := first[c.Name]; dup {
				doc.Fail(at+".name", fmt.Sprintf("case %s is given twice (first at line %d); case names are unique", c.Name, line))
			} else {
				first[c.Name] = doc.KeyPos(at + ".name").Line
			}
		}
		if rc.Description != nil {
			c.Description = *rc.Description
		}
		switch {
		case rc.Scenario == nil:
			if !doc.Failed(at) {
				doc.Fail(at+".scenario", "required: a builtin scenario name (baseline, slow-signer, ...) or a .yaml file relative to the grid")
			}
		case *rc.Scenario == "":
			doc.Fail(at+".scenario", "empty; write a builtin scenario name or a .yaml file")
		default:
			c.Scenario = scenarioPath(dir, *rc.Scenario)
		}
		c.Set = append(append([]scenarios.Setting(nil), common...), settings(doc, at+".set", rc.Set)...)
		if rc.Repeat != nil {
			if *rc.Repeat < 1 {
				doc.Fail(at+".repeat", fmt.Sprintf("%d: give at least 1 run per side", *rc.Repeat))
			}
			c.Repeat = int(*rc.Repeat)
		}
		g.Cases = append(g.Cases, c)
	}
	if err := doc.Err(); err != nil {
		return nil, err
	}
	return g, nil
}

// scenarioPath joins a scenario file (a name ending in .yaml or .yml) to
// the grid's directory; a builtin name is kept.
func scenarioPath(dir, s string) string {
	ext := strings.ToLower(filepath.Ext(s))
	if dir == "" || (ext != ".yaml" && ext != ".yml") || filepath.IsAbs(s) {
		return s
	}
	return filepath.Join(dir, s)
}

// backendPath is the key valnet crosscheck sets itself, from --model
// and --real.
const backendPath = "run.backend"

// settings reads a list of PATH=VALUE entries at key: each path is
// checked against the schema (scenarios.ParseSetFlag) and takes one
// value; the values are checked when the case's scenario is resolved.
func settings(doc *scenarios.Document, key string, entries []string) []scenarios.Setting {
	var out []scenarios.Setting
	for j, e := range entries {
		at := fmt.Sprintf("%s[%d]", key, j)
		if doc.Failed(at) {
			continue // not a string: said
		}
		path, values, err := scenarios.ParseSetFlag(e)
		switch {
		case err != nil:
			doc.Fail(at, strings.TrimPrefix(err.Error(), "--set "+e+": "))
		case path == backendPath:
			doc.Fail(at, "the backends are --model and --real (both sides run the same case); remove it")
		case len(values) != 1:
			doc.Fail(at, fmt.Sprintf("%d values; a case is one point: give one value, and write a case per value", len(values)))
		default:
			out = append(out, scenarios.Setting{Path: path, Value: values[0]})
		}
	}
	return out
}
