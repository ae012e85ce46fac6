package sweep

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/valnet/valnet/internal/atomicfile"
)

// ThresholdFile is the search's record under its out dir.
const ThresholdFile = "threshold.json"

// Stamp is what a search's runs depend on besides the probed value: a
// rerun with the same stamp reuses finished runs (the target, range,
// resolution, direction and repeat count may change); another stamp is
// refused rather than mixing runs of two searches.
type Stamp struct {
	Scenario       string `json:"scenario"`
	ScenarioSHA256 string `json:"scenario_sha256"` // of the scenario text
	Backend        string `json:"backend"`
	Key            string `json:"key"`
	Seed           int64  `json:"seed"` // the base seed; repeat seeds derive from it
}

// ThresholdReport is threshold.json. Keys are a contract (issue 12): add
// keys, never rename them.
type ThresholdReport struct {
	Stamp
	Target     string `json:"target"`
	Direction  string `json:"direction"`
	Range      string `json:"range"`
	Resolution string `json:"resolution"`
	Repeat     int    `json:"repeat"`
	Rule       string `json:"rule"` // HoldRule
	// The interval, for verdict found. Direction largest: holds_up_to is
	// the largest value that held, fails_from the next grid value, which
	// failed. Direction smallest: holds_from and fails_up_to instead. Null
	// (or absent) otherwise: no threshold is invented.
	HoldsUpTo *string          `json:"holds_up_to"`
	FailsFrom *string          `json:"fails_from"`
	HoldsFrom *string          `json:"holds_from,omitempty"`
	FailsUpTo *string          `json:"fails_up_to,omitempty"`
	Probes    []ThresholdProbe `json:"probes"` // in the order probed
	Verdict   Verdict          `json:"verdict"`
	// Summary is the result line without the key ("holds up to 550ms,
	// fails from 600ms"); for not-monotone it names the two probes.
	Summary string `json:"summary"`
	// MixedProbes counts probes whose runs disagreed.
	MixedProbes int `json:"mixed_probes"`
	// OverloadedRuns counts runs on an overloaded host: their values
	// reflect the machine, and so may the threshold.
	OverloadedRuns int `json:"overloaded_runs"`
	// Error says why an incomplete search stopped.
	Error string `json:"error,omitempty"`
	// Confirm is --confirm's rerun of the bracketing values on another
	// backend; absent without it.
	Confirm *Confirmation `json:"confirm,omitempty"`
}

func (t *Threshold) newReport() *ThresholdReport {
	return &ThresholdReport{
		Stamp:      t.Stamp,
		Target:     t.Target.String(),
		Direction:  string(t.Direction),
		Range:      t.Grid.Format(t.Grid.Lo) + ".." + t.Grid.Format(t.Grid.Hi),
		Resolution: t.Grid.Format(t.Grid.Resolution),
		Repeat:     len(t.Seeds),
		Rule:       HoldRule,
		Probes:     []ThresholdProbe{},
		Verdict:    Incomplete,
	}
}

// conclude fills in what the search found.
func (r *ThresholdReport) conclude(t *Threshold, s Search, err error) {
	r.Verdict = s.Verdict
	r.Summary = s.Describe(t.Grid, t.Direction)
	if err != nil {
		r.Verdict = Incomplete
		r.Error = err.Error()
	}
	r.MixedProbes, r.OverloadedRuns = 0, 0
	for _, p := range r.Probes {
		if p.Mixed {
			r.MixedProbes++
		}
		for _, run := range p.Runs {
			if run.HostOverloaded {
				r.OverloadedRuns++
			}
		}
	}
	if r.Verdict != Found {
		return
	}
	held, failed := t.Grid.Format(s.Probes[s.Held].Value), t.Grid.Format(s.Probes[s.Failed].Value)
	if t.Direction == Smallest {
		r.HoldsFrom, r.FailsUpTo = &held, &failed
	} else {
		r.HoldsUpTo, r.FailsFrom = &held, &failed
	}
}

// Line is the result as printed: "validators[hsm].signer.latency: holds
// up to 550ms, fails from 600ms (resolution 50ms, 3 runs per probe)".
func (r *ThresholdReport) Line(key string) string {
	runs := "1 run per probe"
	if r.Repeat != 1 {
		runs = fmt.Sprintf("%d runs per probe", r.Repeat)
	}
	line := fmt.Sprintf("%s: %s (resolution %s, %s, %d probes)", key, r.Summary, r.Resolution, runs, len(r.Probes))
	if r.MixedProbes > 0 {
		line += fmt.Sprintf("; %d probe(s) mixed: their runs disagreed, so each counts as failed and the threshold lies within the run-to-run noise there", r.MixedProbes)
	}
	if r.OverloadedRuns > 0 {
		line += fmt.Sprintf("; %d run(s) on an overloaded host: their values, and so the threshold, reflect this machine", r.OverloadedRuns)
	}
	if r.Error != "" {
		line += "; stopped: " + r.Error
	}
	return line
}

func (r *ThresholdReport) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return atomicfile.WriteJSON(filepath.Join(dir, ThresholdFile), 0o644, r)
}

// ReadThreshold reads dir's threshold.json.
func ReadThreshold(dir string) (*ThresholdReport, error) {
	data, err := os.ReadFile(filepath.Join(dir, ThresholdFile))
	if err != nil {
		return nil, err
	}
	var r ThresholdReport
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ThresholdFile), err)
	}
	return &r, nil
}

// claim makes dir this search's: a new or empty dir, or one holding a
// threshold.json with the same stamp (its finished runs are reused).
func (st Stamp) claim(dir string) error {
	var old *ThresholdReport
	found, err := ClaimOutDir(dir, ThresholdFile, "threshold search", func(data []byte) (string, error) {
		old = &ThresholdReport{}
		if err := json.Unmarshal(data, old); err != nil {
			return "", err
		}
		return st.diff(old.Stamp), nil
	})
	if err != nil {
		return err
	}
	// Written at once, so that a search interrupted in its first probe is
	// still recognised as this one's.
	r := &ThresholdReport{Stamp: st, Probes: []ThresholdProbe{}, Verdict: Incomplete}
	if found {
		r = old
	}
	return r.write(dir)
}

// diff names what differs between two stamps.
func (st Stamp) diff(old Stamp) string {
	var d []string
	add := func(what, was, now string) {
		if was != now {
			d = append(d, fmt.Sprintf("%s %s, now %s", what, was, now))
		}
	}
	add("scenario", old.Scenario, st.Scenario)
	if old.Scenario == st.Scenario && old.ScenarioSHA256 != st.ScenarioSHA256 {
		d = append(d, "the scenario's text changed")
	}
	add("backend", old.Backend, st.Backend)
	add("key", old.Key, st.Key)
	add("seed", fmt.Sprint(old.Seed), fmt.Sprint(st.Seed))
	return strings.Join(d, "; ")
}
