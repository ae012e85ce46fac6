package crosscheck

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/valnet/valnet/internal/metricref"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/sweep"
)

// Run is one finished run of one side: its sweep result (metric values by
// results.MetricValues) and its summary.json (halts, the host, the commit
// rounds it could not tell).
type Run struct {
	sweep.RunRecord
	Summary *results.Summary
}

// Values are what the goals compare of one side, over its finished runs:
// each metric is the mean over the runs that have it.
type Values struct {
	Backend                string  `json:"backend"`
	Runs                   int     `json:"runs"`
	HeightsCommitted       float64 `json:"heights_committed"`
	HeightsWithRoundChange float64 `json:"heights_with_round_change"`
	// RoundChangesPer20 is heights_with_round_change per 20 committed
	// heights whose commit round is known; nil when no run has one.
	RoundChangesPer20 *float64 `json:"round_changes_per_20_heights"`
	BlockIntervalP50  *float64 `json:"block_interval_p50_ms"` // nil: no interval (fewer than 2 commits)
	BlockIntervalP95  *float64 `json:"block_interval_p95_ms"`
	// MissedRate is missed_precommits_rate per validator (0..1); a
	// validator with no counted precommit in any run is left out.
	MissedRate map[string]float64 `json:"missed_precommits_rate"`
	Validators []string           `json:"validators"`
	// Halts are each run's halts, in repeat order.
	Halts [][]results.Halt `json:"halts"`
	// HostOverloaded: some run's host was overloaded (results.OverloadedNotice):
	// its values reflect the machine.
	HostOverloaded bool `json:"host_overloaded"`
}

// Goal names, in the order they are judged and shown.
const (
	GoalMissedRate    = "missed_precommits_rate"
	GoalRoundChanges  = "round_changes_per_20_heights"
	GoalIntervalP50   = "block_interval_p50"
	GoalIntervalP95   = "block_interval_p95"
	GoalHalts         = "halts"
	VerdictPass       = "pass"
	VerdictFail       = "fail"
	VerdictNA         = "n.a."
	unitPP            = "pp"
	unitPer20         = "per 20 heights"
	unitPct           = "%"
	roundChangeMetric = "heights_with_round_change"
)

// GoalNames lists the goals, in order.
var GoalNames = []string{GoalMissedRate, GoalRoundChanges, GoalIntervalP50, GoalIntervalP95, GoalHalts}

// GoalResult is one goal judged on one case: pass, fail or n.a. (neither
// side has the value: no halts, no counted precommits), with both values.
type GoalResult struct {
	Goal    string `json:"goal"`
	Verdict string `json:"verdict"`
	// Model and Real are the values compared (for the missed-precommit
	// rate the worst validator's, in %; for halts the durations in s of
	// the halt whose durations differ most); nil where a side has none.
	Model *float64 `json:"model"`
	Real  *float64 `json:"real"`
	// Diff is model - real in Unit: percentage points, round changes per
	// 20 heights, or % of the real value.
	Diff      *float64 `json:"diff"`
	Tolerance float64  `json:"tolerance"`
	Unit      string   `json:"unit"`
	// Validator is the worst validator (missed-precommit rate).
	Validator string `json:"validator,omitempty"`
	// ModelText and RealText are the values as the table shows them.
	ModelText string `json:"model_text"`
	RealText  string `json:"real_text"`
	// Note says why a goal failed other than by its tolerance, or why it
	// is n.a.
	Note string `json:"note,omitempty"`
}

// within reports |diff| <= tol, forgiving the last bits of float
// arithmetic (a difference of exactly the tolerance passes).
func within(diff, tol float64) bool { return math.Abs(diff) <= tol+1e-9*math.Max(1, tol) }

// SideValues reduces a side's finished runs to the values the goals
// compare.
func SideValues(backend string, runs []Run) Values {
	v := Values{Backend: backend, Runs: len(runs), MissedRate: map[string]float64{}, Validators: []string{}, Halts: [][]results.Halt{}}
	recs := make([]sweep.RunRecord, len(runs))
	for i, r := range runs {
		recs[i] = r.RunRecord
	}
	mean := sweep.MetricMeans(recs)
	v.HeightsCommitted = mean["heights_committed"]
	v.HeightsWithRoundChange = mean[roundChangeMetric]
	if m, ok := mean["block_interval_p50_ms"]; ok {
		v.BlockIntervalP50 = &m
	}
	if m, ok := mean["block_interval_p95_ms"]; ok {
		v.BlockIntervalP95 = &m
	}
	var per20 []float64
	for _, r := range runs {
		s := r.Summary
		if known := s.Heights.Committed - s.Rounds.UnknownCommitRound; known > 0 {
			per20 = append(per20, r.Metrics[roundChangeMetric]*20/float64(known))
		}
		for _, val := range s.Validators {
			if !slices.Contains(v.Validators, val.Name) {
				v.Validators = append(v.Validators, val.Name)
			}
		}
		halts := s.Halts
		if halts == nil {
			halts = []results.Halt{}
		}
		v.Halts = append(v.Halts, halts)
		v.HostOverloaded = v.HostOverloaded || r.HostOverloaded
	}
	if len(per20) > 0 {
		m := meanOf(per20)
		v.RoundChangesPer20 = &m
	}
	for _, name := range v.Validators {
		if m, ok := mean[metricref.Ref{Metric: "missed_precommits_rate", Validator: name}.String()]; ok {
			v.MissedRate[name] = m
		}
	}
	return v
}

func meanOf(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// Compare judges every goal on one case's two sides.
func Compare(model, real Values, g Goals) []GoalResult {
	return []GoalResult{
		compareMissed(model, real, g.MissedRatePP),
		compareAbsolute(GoalRoundChanges, model.RoundChangesPer20, real.RoundChangesPer20, g.RoundChangesPer20, unitPer20,
			"no committed height with a known commit round"),
		compareRelative(GoalIntervalP50, model.BlockIntervalP50, real.BlockIntervalP50, g.BlockIntervalPct),
		compareRelative(GoalIntervalP95, model.BlockIntervalP95, real.BlockIntervalP95, g.BlockIntervalPct),
		compareHalts(model.Halts, real.Halts, g.HaltDurationPct),
	}
}

// compareMissed: every validator's missed-precommit rate within tol
// percentage points; the worst validator is reported. A validator on one
// side only, or with counted precommits on one side only, fails.
func compareMissed(model, real Values, tol float64) GoalResult {
	r := GoalResult{Goal: GoalMissedRate, Tolerance: tol, Unit: unitPP, ModelText: "–", RealText: "–"}
	var problems []string
	var worst float64 = -1
	for _, name := range union(model.Validators, real.Validators) {
		inM, inR := slices.Contains(model.Validators, name), slices.Contains(real.Validators, name)
		if !inM || !inR {
			problems = append(problems, fmt.Sprintf("%s is a validator of the %s side only", name, sideOf(inM)))
			continue
		}
		m, okM := model.MissedRate[name]
		re, okR := real.MissedRate[name]
		switch {
		case !okM && !okR:
			continue
		case !okM || !okR:
			problems = append(problems, fmt.Sprintf("%s has counted precommits on the %s side only", name, sideOf(okM)))
			continue
		}
		// The worst validator; among equals the one missing most, which
		// says more than a healthy one.
		if d := math.Abs(m-re) * 100; d > worst || d == worst && max(m, re)*100 > max(*r.Model, *r.Real) {
			worst = d
			r.Validator = name
			mp, rp, diff := m*100, re*100, (m-re)*100
			r.Model, r.Real, r.Diff = &mp, &rp, &diff
		}
	}
	if r.Validator != "" {
		r.ModelText = fmt.Sprintf("%s %.1f %%", r.Validator, *r.Model)
		r.RealText = fmt.Sprintf("%.1f %%", *r.Real)
	}
	switch {
	case len(problems) > 0:
		r.Verdict, r.Note = VerdictFail, strings.Join(problems, "; ")
	case r.Validator == "":
		r.Verdict, r.Note = VerdictNA, "no validator has a counted precommit on either side"
	case within(*r.Diff, tol):
		r.Verdict = VerdictPass
	default:
		r.Verdict = VerdictFail
	}
	return r
}

// sideOf names the side a one-sided value is on.
func sideOf(onModel bool) Side {
	if onModel {
		return Model
	}
	return Real
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// compareAbsolute: |model - real| <= tol; a value on one side only fails,
// on neither is n.a. (why: none).
func compareAbsolute(goal string, model, real *float64, tol float64, unit, none string) GoalResult {
	r := GoalResult{Goal: goal, Model: model, Real: real, Tolerance: tol, Unit: unit, ModelText: valueText(model, ""), RealText: valueText(real, "")}
	if v, ok := oneSided(model, real, none); ok {
		r.Verdict, r.Note = v.Verdict, v.Note
		return r
	}
	d := *model - *real
	r.Diff = &d
	r.Verdict = verdict(within(d, tol))
	return r
}

// compareRelative: |model - real| / real <= tol %.
func compareRelative(goal string, model, real *float64, tolPct float64) GoalResult {
	r := GoalResult{Goal: goal, Model: model, Real: real, Tolerance: tolPct, Unit: unitPct, ModelText: valueText(model, " ms"), RealText: valueText(real, " ms")}
	if v, ok := oneSided(model, real, "no block interval on either side (fewer than 2 commits)"); ok {
		r.Verdict, r.Note = v.Verdict, v.Note
		return r
	}
	if *real == 0 {
		r.Verdict = verdict(*model == 0)
		r.Note = "the real value is 0: no relative difference"
		return r
	}
	d := (*model - *real) / *real * 100
	r.Diff = &d
	r.Verdict = verdict(within(d, tolPct))
	return r
}

// oneSided judges a value missing on a side: n.a. on both, a failure on
// one; ok false when both have it.
func oneSided(model, real *float64, none string) (GoalResult, bool) {
	switch {
	case model == nil && real == nil:
		return GoalResult{Verdict: VerdictNA, Note: none}, true
	case model == nil || real == nil:
		return GoalResult{Verdict: VerdictFail, Note: fmt.Sprintf("a value on the %s side only", sideOf(model != nil))}, true
	}
	return GoalResult{}, false
}

func verdict(ok bool) string {
	if ok {
		return VerdictPass
	}
	return VerdictFail
}

func valueText(v *float64, unit string) string {
	if v == nil {
		return "–"
	}
	return formatNumber(*v) + unit
}

// formatNumber shows one decimal below 100, whole numbers from there.
func formatNumber(v float64) string {
	if math.Abs(v) >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// compareHalts: repeat r of the model against repeat r of the real side
// (the same seed): the same number of halts, each after the same height;
// the mean duration of each halt over the repeats within tol % of the
// real one's. n.a. when neither side halted; a halt on one side only
// fails.
func compareHalts(model, real [][]results.Halt, tolPct float64) GoalResult {
	r := GoalResult{Goal: GoalHalts, Tolerance: tolPct, Unit: unitPct, ModelText: haltsText(model), RealText: haltsText(real)}
	if count(model) == 0 && count(real) == 0 {
		r.Verdict, r.Note = VerdictNA, "no halt on either side"
		return r
	}
	var problems []string
	n := min(len(model), len(real))
	for i := 0; i < n; i++ {
		rep := ""
		if n > 1 {
			rep = fmt.Sprintf("repeat %d: ", i+1)
		}
		m, re := model[i], real[i]
		if len(m) != len(re) {
			problems = append(problems, fmt.Sprintf("%s%s on the model side, %s on the real side", rep, plural(len(m), "halt"), plural(len(re), "halt")))
			continue
		}
		for k := range m {
			if m[k].FromHeight != re[k].FromHeight {
				problems = append(problems, fmt.Sprintf("%shalt %d after height %d on the model side, %d on the real side", rep, k+1, m[k].FromHeight, re[k].FromHeight))
			}
		}
	}
	if len(problems) > 0 {
		r.Verdict, r.Note = VerdictFail, strings.Join(problems, "; ")
		return r
	}
	// Repeat by repeat both sides have the same halts, after the same
	// heights: halt k's mean duration is over the repeats that have it.
	ok := true
	worst := -1.0
	for k := 0; k < maxCount(model); k++ {
		md, rd := meanDuration(model, k), meanDuration(real, k)
		d := math.Inf(1)
		switch {
		case rd > 0:
			d = (md - rd) / rd * 100
		case md == 0:
			d = 0
		}
		ok = ok && within(d, tolPct)
		if math.Abs(d) > worst {
			worst = math.Abs(d)
			ms, rs := md/1000, rd/1000
			r.Model, r.Real, r.Diff = &ms, &rs, nil
			if !math.IsInf(d, 0) {
				r.Diff = &d
			}
		}
	}
	r.Verdict = verdict(ok)
	return r
}

func maxCount(runs [][]results.Halt) int {
	n := 0
	for _, hs := range runs {
		n = max(n, len(hs))
	}
	return n
}

// sameCount: every repeat of a side has the same number of halts.
func sameCount(runs [][]results.Halt) bool {
	for _, hs := range runs {
		if len(hs) != len(runs[0]) {
			return false
		}
	}
	return true
}

func count(runs [][]results.Halt) int {
	n := 0
	for _, hs := range runs {
		n += len(hs)
	}
	return n
}

// meanDuration is the mean duration (ms) of halt k over the repeats that
// have one.
func meanDuration(runs [][]results.Halt, k int) float64 {
	sum, n := 0.0, 0
	for _, hs := range runs {
		if k < len(hs) {
			sum += float64(hs[k].DurationMS)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func plural(n int, what string) string {
	switch n {
	case 0:
		return "no " + what
	case 1:
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// haltsText shows a side's halts: "after h5 for 15.2 s", "none"; over
// repeats the mean duration when every repeat halted after the same
// heights, else each repeat's.
func haltsText(runs [][]results.Halt) string {
	if len(runs) == 0 {
		return "–"
	}
	same := sameCount(runs)
	if same {
		for _, hs := range runs[1:] {
			for k := range hs {
				same = same && hs[k].FromHeight == runs[0][k].FromHeight
			}
		}
	}
	one := func(hs []results.Halt, dur func(k int) float64) string {
		if len(hs) == 0 {
			return "none"
		}
		parts := make([]string, len(hs))
		for k, h := range hs {
			parts[k] = fmt.Sprintf("after h%d for %.1f s", h.FromHeight, dur(k)/1000)
		}
		return strings.Join(parts, "; ")
	}
	if same {
		return one(runs[0], func(k int) float64 { return meanDuration(runs, k) })
	}
	parts := make([]string, len(runs))
	for i, hs := range runs {
		parts[i] = fmt.Sprintf("r%d: %s", i+1, one(hs, func(k int) float64 { return float64(hs[k].DurationMS) }))
	}
	return strings.Join(parts, "; ")
}
