package compare

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/valnet/valnet/internal/metricref"
	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/scenarios"
)

// Threshold is one --fail-on entry: fail when the metric's change from A
// to B is above (Op ">") or below (Op "<") Value, absolute or in percent
// of A. Metric is a metric reference as `expect:` and sweeps name them:
// name (a chain metric, or a per-validator one for every validator),
// name(VALIDATOR), name(VALIDATOR,PHASE) or name(*,PHASE).
type Threshold struct {
	Spec     string        `json:"spec"`
	Metric   string        `json:"metric"`
	Op       string        `json:"op"`
	Value    float64       `json:"value"`
	Relative bool          `json:"relative"`
	Ref      metricref.Ref `json:"-"`

	perValidator bool
}

// allValidators in a reference's validator place: every validator.
const allValidators = "*"

// renamed are the metric names `valnet compare` used before it took
// expect:'s (their path in summary.json), for a message that says what
// to write now.
var renamed = map[string]string{
	"heights.committed":                "heights_committed",
	"rounds.heights_with_round_change": "heights_with_round_change",
	"rounds.max_commit_round":          "max_commit_round",
	"rounds.extra_rounds":              "extra_rounds",
	"block_interval_ms.p50":            "block_interval_p50_ms",
	"block_interval_ms.p95":            "block_interval_p95_ms",
	"block_interval_ms.max":            "block_interval_max_ms",
	"proposals.missed":                 "proposals_missed",
}

// FailOnHelp says what a --fail-on entry may be; parse errors end with it.
func FailOnHelp() string {
	var chain, val, phased []string
	for _, m := range scenarios.Metrics {
		switch {
		case !m.PerValidator:
			chain = append(chain, m.Name)
		case m.Phased:
			phased = append(phased, m.Name)
		default:
			val = append(val, m.Name)
		}
	}
	return "want METRIC OP THRESHOLD, comma-separated, e.g. 'missed_precommits_rate>+0.05,block_interval_p95_ms>+20%,sign_latency_p99_ms(hsm,precommit)>+10%': " +
		"OP is > or <; THRESHOLD is a signed change from RUN_A to RUN_B, absolute (+2, -1.5) or relative (+20%); " +
		"METRIC is a chain metric (" + strings.Join(chain, ", ") + "), or a per-validator metric, checked for every validator (name), " +
		"one (name(VALIDATOR)) or, for a phased one, name(VALIDATOR,PHASE) or name(*,PHASE): " + strings.Join(val, ", ") +
		"; phased: " + strings.Join(phased, ", ") + " (phases " + strings.Join(phase.All(), ", ") + ")"
}

// ParseThresholds parses a --fail-on value: comma-separated entries
// "metric>+N", "metric<-N" or "metric>+N%" (a comma inside a reference's
// parentheses is the reference's). Empty entries are ignored; every bad
// entry is reported at once.
func ParseThresholds(spec string) ([]Threshold, error) {
	var out []Threshold
	var errs []error
	for _, raw := range splitEntries(spec) {
		entry := strings.TrimSpace(raw)
		if entry == "" {
			continue
		}
		t, err := parseThreshold(entry)
		if err != nil {
			errs = append(errs, fmt.Errorf("--fail-on %q: %w", entry, err))
			continue
		}
		out = append(out, t)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w\n%s", errors.Join(errs...), FailOnHelp())
	}
	return out, nil
}

// splitEntries splits at commas outside parentheses.
func splitEntries(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func parseThreshold(entry string) (Threshold, error) {
	i := strings.IndexAny(entry, "<>")
	if i < 0 {
		return Threshold{}, errors.New("no operator (> or <)")
	}
	t := Threshold{Spec: entry, Metric: strings.TrimSpace(entry[:i]), Op: entry[i : i+1]}
	if t.Metric == "" {
		return t, errors.New("no metric before the operator")
	}
	if now, ok := renamed[t.Metric]; ok {
		return t, fmt.Errorf("metric %s is now %s: compare names its metrics as expect: does", t.Metric, now)
	}
	if strings.HasPrefix(t.Metric, "sign_latency_ms.") {
		return t, fmt.Errorf("metric %s is now sign_latency_p50_ms / sign_latency_p99_ms, by phase: sign_latency_p99_ms(*,precommit)", t.Metric)
	}
	r, err := metricref.Parse(t.Metric)
	if err != nil {
		return t, err
	}
	m, ok := scenarios.LookupMetric(r.Metric)
	if !ok {
		var names []string
		for _, m := range scenarios.Metrics {
			names = append(names, m.Name)
		}
		return t, fmt.Errorf("unknown metric %q%s", r.Metric, scenarios.DidYouMean(r.Metric, names))
	}
	switch {
	case !m.PerValidator && r.Validator != "":
		return t, fmt.Errorf("metric %s is a chain metric: it takes no validator", r.Metric)
	case r.Phase != "" && !m.Phased:
		return t, fmt.Errorf("metric %s has no phases", r.Metric)
	case r.Phase != "" && !phase.Valid(r.Phase):
		return t, fmt.Errorf("unknown phase %q (allowed: %s)", r.Phase, strings.Join(phase.All(), ", "))
	}
	t.Ref, t.perValidator = r, m.PerValidator
	num := strings.TrimSpace(entry[i+1:])
	if strings.HasPrefix(num, "=") {
		return t, errors.New("operators are > and < only (a threshold is crossed when the change goes beyond it)")
	}
	if num == "" || (num[0] != '+' && num[0] != '-') {
		return t, fmt.Errorf("threshold %q must be a signed change such as +2, -1 or +20%%", num)
	}
	if rest, ok := strings.CutSuffix(num, "%"); ok {
		t.Relative, num = true, rest
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return t, fmt.Errorf("threshold %q is not a number", num)
	}
	t.Value = v
	return t, nil
}

func thresholdText(t Threshold) string {
	s := signed(t.Value)
	if t.Value == 0 {
		s = "+0" // as written: the sign says "a change", not "a value"
	}
	if t.Relative {
		s += "%"
	}
	return s
}

func formatPct(a, b float64) string {
	if a == 0 {
		return "from 0"
	}
	return signed(math.Round((b-a)/math.Abs(a)*1000)/10) + "%"
}

// signed prints a change with its sign: "+3", "-1.5", "0".
func signed(v float64) string {
	if v == 0 {
		return "0" // also -0
	}
	if v > 0 {
		return "+" + results.FormatMS(v)
	}
	return results.FormatMS(v)
}
