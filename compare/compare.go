// Package compare is `valnet compare`: two runs' metrics side by side and
// the --fail-on thresholds a CI job judges them by. Its metrics are the
// one metric table (scenarios.Metrics, computed by results.MetricValues),
// under the names `expect:` uses; it reads summaries rebuilt from each
// run's events.jsonl.
package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/valnet/valnet/internal/metricref"
	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/scenarios"
)

// Run names one side of a comparison.
type Run struct {
	Dir      string `json:"dir,omitempty"`
	Scenario string `json:"scenario"`
	// ScenarioSHA256 is the sha256 of the run's scenario.yaml ("" when
	// the run directory has none).
	ScenarioSHA256 string `json:"scenario_sha256,omitempty"`
	Seed           int64  `json:"seed"`
	OK             bool   `json:"ok"`
	Result         string `json:"result"` // results.ResultLine
	// Model is results.ModelLabel of a model run ("" for real nodes), so
	// that a model is never compared as if it were a network; Unavailable
	// its summary's (values it cannot tell: "-" in the comparison).
	Model       string   `json:"model,omitempty"`
	Unavailable []string `json:"unavailable,omitempty"`
}

// Delta is one metric in both runs. A and B are nil when a run has no
// value; Delta = B - A when both have one; DeltaPct = Delta / |A| * 100,
// nil as well when A is 0 (a relative change from nothing is undefined).
type Delta struct {
	Metric   string   `json:"metric"`
	Phase    string   `json:"phase,omitempty"` // a phased metric's phase; "" all phases
	A        *float64 `json:"a"`
	B        *float64 `json:"b"`
	Delta    *float64 `json:"delta"`
	DeltaPct *float64 `json:"delta_pct"`
}

// ValidatorDeltas are one validator's metrics in both runs.
type ValidatorDeltas struct {
	Name    string  `json:"name"`
	Metrics []Delta `json:"metrics"`
}

// Comparison is run B against run A: the chain metrics and the metrics of
// every validator present in both (matched by name), the validators found
// in one run only, and how the two runs differ in what they ran
// (Different: another scenario or seed, which makes the comparison one of
// unrelated runs).
type Comparison struct {
	A          Run               `json:"a"`
	B          Run               `json:"b"`
	Different  []string          `json:"different,omitempty"`
	Chain      []Delta           `json:"chain"`
	Validators []ValidatorDeltas `json:"validators"`
	OnlyInA    []string          `json:"only_in_a,omitempty"`
	OnlyInB    []string          `json:"only_in_b,omitempty"`
}

// Side is what Compare needs of one run besides its summary.
type Side struct {
	Dir            string
	ScenarioSHA256 string
}

// Compare compares two summaries (rebuilt from events, never read from a
// summary.json that may be stale).
func Compare(a, b *results.Summary, sa, sb Side) *Comparison {
	info := func(s *results.Summary, side Side) Run {
		return Run{Dir: side.Dir, Scenario: s.Scenario, ScenarioSHA256: side.ScenarioSHA256, Seed: s.Seed, OK: s.OK,
			Result: strings.TrimPrefix(results.ResultLine(s), "RESULT: "), Model: results.ModelLabel(s.Model), Unavailable: s.Unavailable}
	}
	c := &Comparison{A: info(a, sa), B: info(b, sb), Chain: []Delta{}, Validators: []ValidatorDeltas{}}
	switch {
	case c.A.Scenario != c.B.Scenario:
		c.Different = append(c.Different, fmt.Sprintf("scenario: A ran %s, B ran %s", c.A.Scenario, c.B.Scenario))
	case c.A.ScenarioSHA256 != "" && c.B.ScenarioSHA256 != "" && c.A.ScenarioSHA256 != c.B.ScenarioSHA256:
		c.Different = append(c.Different, fmt.Sprintf("scenario %s: its file differs (sha256 %.12s… against %.12s…)", c.A.Scenario, c.A.ScenarioSHA256, c.B.ScenarioSHA256))
	}
	if c.A.Seed != c.B.Seed {
		c.Different = append(c.Different, fmt.Sprintf("seed: A %d, B %d (other keys and latency draws)", c.A.Seed, c.B.Seed))
	}
	va, vb := results.MetricValues(a), results.MetricValues(b)
	for _, m := range scenarios.Metrics {
		if !m.PerValidator {
			c.Chain = append(c.Chain, newDelta(m.Name, "", va, vb, m.Name))
		}
	}
	inB := map[string]bool{}
	for _, v := range b.Validators {
		inB[v.Name] = true
	}
	inA := map[string]bool{}
	for _, v := range a.Validators {
		inA[v.Name] = true
		if !inB[v.Name] {
			c.OnlyInA = append(c.OnlyInA, v.Name)
			continue
		}
		vd := ValidatorDeltas{Name: v.Name}
		for _, m := range scenarios.Metrics {
			if !m.PerValidator {
				continue
			}
			ref := metricref.Ref{Metric: m.Name, Validator: v.Name}
			vd.Metrics = append(vd.Metrics, newDelta(m.Name, "", va, vb, ref.String()))
			if m.Phased {
				for _, p := range phase.All() {
					ref.Phase = p
					vd.Metrics = append(vd.Metrics, newDelta(m.Name, p, va, vb, ref.String()))
				}
			}
		}
		c.Validators = append(c.Validators, vd)
	}
	for _, v := range b.Validators {
		if !inA[v.Name] {
			c.OnlyInB = append(c.OnlyInB, v.Name)
		}
	}
	return c
}

// newDelta is metric (key in MetricValues) of both runs.
func newDelta(metric, ph string, va, vb map[string]float64, key string) Delta {
	d := Delta{Metric: metric, Phase: ph}
	a, oka := va[key]
	b, okb := vb[key]
	if oka {
		d.A = &a
	}
	if okb {
		d.B = &b
	}
	if oka && okb {
		delta := round(b - a)
		d.Delta = &delta
		if a != 0 {
			pct := math.Round((b-a)/math.Abs(a)*100*10) / 10
			d.DeltaPct = &pct
		}
	}
	return d
}

func round(v float64) float64 { return math.Round(v*1000) / 1000 }

// Crossing is a threshold crossed by a chain metric (Validator "") or by
// one validator's metric; Missing says why it could not be judged and so
// fails (a validator the threshold names is in one run only).
type Crossing struct {
	Threshold Threshold `json:"threshold"`
	Validator string    `json:"validator,omitempty"`
	A         float64   `json:"a"`
	B         float64   `json:"b"`
	Delta     float64   `json:"delta"`
	Missing   string    `json:"missing,omitempty"`
}

// String reads like "missed_precommits(v3) 2 -> 5 (+3) crosses >+2".
func (c Crossing) String() string {
	subject := metricref.Ref{Metric: c.Threshold.Ref.Metric, Validator: c.Validator, Phase: c.Threshold.Ref.Phase}.String()
	if c.Missing != "" {
		return fmt.Sprintf("%s cannot be compared: %s", subject, c.Missing)
	}
	change := signed(c.Delta)
	if c.Threshold.Relative {
		change += ", " + formatPct(c.A, c.B)
	}
	return fmt.Sprintf("%s %s -> %s (%s) crosses %s", subject, results.FormatMS(c.A), results.FormatMS(c.B), change, c.Threshold.Op+thresholdText(c.Threshold))
}

// Check returns every threshold crossing: for a chain metric at most one;
// for a per-validator metric one per validator it names (every validator
// for name or name(*,PHASE)) whose change crosses it, and one for each
// such validator found in one run only. A metric without a value in
// either run is not checked. A relative threshold on a metric that is 0
// in A treats any change as infinite (so 0 -> 1 crosses ">+50%"), and no
// change as 0%.
func (c *Comparison) Check(ths []Threshold) []Crossing {
	var out []Crossing
	check := func(t Threshold, validator string, d Delta) {
		if d.A == nil || d.B == nil {
			return
		}
		a, b := *d.A, *d.B
		change := b - a
		if t.Relative {
			switch {
			case a != 0:
				change = (b - a) / math.Abs(a) * 100
			case b > 0:
				change = math.Inf(1)
			case b < 0:
				change = math.Inf(-1)
			}
		}
		if (t.Op == ">" && change > t.Value) || (t.Op == "<" && change < t.Value) {
			out = append(out, Crossing{Threshold: t, Validator: validator, A: a, B: b, Delta: round(b - a)})
		}
	}
	for _, t := range ths {
		r := t.Ref
		if !t.perValidator {
			for _, d := range c.Chain {
				if d.Metric == r.Metric {
					check(t, "", d)
				}
			}
			continue
		}
		every := r.Validator == "" || r.Validator == allValidators
		for _, v := range c.Validators {
			if !every && v.Name != r.Validator {
				continue
			}
			for _, d := range v.Metrics {
				if d.Metric == r.Metric && d.Phase == r.Phase {
					check(t, v.Name, d)
				}
			}
		}
		for _, only := range []struct {
			names []string
			where string
		}{{c.OnlyInA, "A"}, {c.OnlyInB, "B"}} {
			for _, name := range only.names {
				if every || name == r.Validator {
					out = append(out, Crossing{Threshold: t, Validator: name, Missing: name + " is in run " + only.where + " only"})
				}
			}
		}
		if !every && !slices.ContainsFunc(c.Validators, func(v ValidatorDeltas) bool { return v.Name == r.Validator }) &&
			!slices.Contains(c.OnlyInA, r.Validator) && !slices.Contains(c.OnlyInB, r.Validator) {
			out = append(out, Crossing{Threshold: t, Validator: r.Validator, Missing: "no validator " + r.Validator + " in either run"})
		}
	}
	return out
}
