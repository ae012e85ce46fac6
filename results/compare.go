package results

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// compareMetric is one metric `valnet compare` shows and --fail-on may
// name. ok=false means the run has no value (e.g. a latency without
// samples): it is shown as "-" and never crosses a threshold.
type compareMetric struct {
	key       string
	chain     func(s *Summary) (v float64, ok bool)
	validator func(v *ValidatorSummary) (float64, bool)
}

func always[T int | int32 | int64](v T) (float64, bool) { return float64(v), true }

func sampled(v float64, n int) (float64, bool) { return v, n > 0 }

// compareChain and compareValidator are the metrics of a comparison, keyed
// by their path in summary.json.
var compareChain = []compareMetric{
	{key: "heights.committed", chain: func(s *Summary) (float64, bool) { return always(s.Heights.Committed) }},
	{key: "rounds.heights_with_round_change", chain: func(s *Summary) (float64, bool) { return always(s.Rounds.HeightsWithRoundChange) }},
	{key: "rounds.max_commit_round", chain: func(s *Summary) (float64, bool) { return always(s.Rounds.MaxCommitRound) }},
	{key: "rounds.extra_rounds", chain: func(s *Summary) (float64, bool) { return always(s.Rounds.ExtraRounds) }},
	{key: "block_interval_ms.p50", chain: func(s *Summary) (float64, bool) { return sampled(s.BlockIntervalMS.P50, s.BlockIntervalMS.Count) }},
	{key: "block_interval_ms.p95", chain: func(s *Summary) (float64, bool) { return sampled(s.BlockIntervalMS.P95, s.BlockIntervalMS.Count) }},
	{key: "block_interval_ms.max", chain: func(s *Summary) (float64, bool) { return sampled(s.BlockIntervalMS.Max, s.BlockIntervalMS.Count) }},
	{key: "double_signs", chain: func(s *Summary) (float64, bool) { return always(s.DoubleSigns) }},
}

var compareValidator = func() []compareMetric {
	ms := []compareMetric{
		{key: "missed_precommits", validator: func(v *ValidatorSummary) (float64, bool) { return always(v.MissedPrecommits) }},
		{key: "nil_precommits", validator: func(v *ValidatorSummary) (float64, bool) { return always(v.NilPrecommits) }},
		{key: "consecutive_missed_max", validator: func(v *ValidatorSummary) (float64, bool) { return always(v.ConsecutiveMissedMax) }},
		{key: "late_prevotes", validator: func(v *ValidatorSummary) (float64, bool) { return always(v.LatePrevotes) }},
		{key: "late_precommits", validator: func(v *ValidatorSummary) (float64, bool) { return always(v.LatePrecommits) }},
		{key: "proposals.missed", validator: func(v *ValidatorSummary) (float64, bool) { return always(v.Proposals.Missed) }},
		{key: "sign_errors", validator: func(v *ValidatorSummary) (float64, bool) { return always(v.SignErrors) }},
	}
	for _, phase := range append(phases[:len(phases):len(phases)], "all") {
		ms = append(ms,
			compareMetric{key: "sign_latency_ms." + phase + ".p50", validator: func(v *ValidatorSummary) (float64, bool) {
				st := v.SignLatencyMS.phase(phase)
				return sampled(st.P50, st.Count)
			}},
			compareMetric{key: "sign_latency_ms." + phase + ".p99", validator: func(v *ValidatorSummary) (float64, bool) {
				st := v.SignLatencyMS.phase(phase)
				return sampled(st.P99, st.Count)
			}})
	}
	return ms
}()

// CompareRun names one side of a comparison.
type CompareRun struct {
	Dir      string `json:"dir,omitempty"`
	Scenario string `json:"scenario"`
	OK       bool   `json:"ok"`
	Result   string `json:"result"` // ResultLine
	// Model is ModelLabel of a model run ("" for real nodes), so that a
	// model is never compared as if it were a network; Unavailable its
	// summary's (values it cannot tell: "-" in the comparison).
	Model       string   `json:"model,omitempty"`
	Unavailable []string `json:"unavailable,omitempty"`
}

// Delta is one metric in both runs. A and B are nil when a run has no
// value; Delta = B - A when both have one; DeltaPct = Delta / |A| * 100,
// nil as well when A is 0 (a relative change from nothing is undefined).
type Delta struct {
	Metric   string   `json:"metric"`
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

// Comparison is `valnet compare`: run B against run A, chain metrics and
// the metrics of every validator present in both (matched by name).
type Comparison struct {
	A          CompareRun        `json:"a"`
	B          CompareRun        `json:"b"`
	Chain      []Delta           `json:"chain"`
	Validators []ValidatorDeltas `json:"validators"`
	OnlyInA    []string          `json:"only_in_a,omitempty"`
	OnlyInB    []string          `json:"only_in_b,omitempty"`
}

// Compare compares two summaries (rebuilt from events, never read from a
// summary.json that may be stale).
func Compare(a, b *Summary) *Comparison {
	info := func(s *Summary) CompareRun {
		return CompareRun{Scenario: s.Scenario, OK: s.OK, Result: strings.TrimPrefix(ResultLine(s), "RESULT: "),
			Model: ModelLabel(s.Model), Unavailable: s.Unavailable}
	}
	c := &Comparison{A: info(a), B: info(b), Chain: []Delta{}, Validators: []ValidatorDeltas{}}
	for _, m := range compareChain {
		va, oka := m.chain(a)
		vb, okb := m.chain(b)
		oka, okb = oka && !a.unavailable(m.key), okb && !b.unavailable(m.key)
		c.Chain = append(c.Chain, newDelta(m.key, va, oka, vb, okb))
	}
	inB := map[string]*ValidatorSummary{}
	for i := range b.Validators {
		inB[b.Validators[i].Name] = &b.Validators[i]
	}
	inA := map[string]bool{}
	for i := range a.Validators {
		va := &a.Validators[i]
		inA[va.Name] = true
		vb, ok := inB[va.Name]
		if !ok {
			c.OnlyInA = append(c.OnlyInA, va.Name)
			continue
		}
		vd := ValidatorDeltas{Name: va.Name}
		for _, m := range compareValidator {
			x, okx := m.validator(va)
			y, oky := m.validator(vb)
			// A value a run cannot tell has none (shown "-", never checked).
			okx, oky = okx && !a.unavailable(m.key), oky && !b.unavailable(m.key)
			vd.Metrics = append(vd.Metrics, newDelta(m.key, x, okx, y, oky))
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

func newDelta(key string, a float64, oka bool, b float64, okb bool) Delta {
	d := Delta{Metric: key}
	if oka {
		d.A = &a
	}
	if okb {
		d.B = &b
	}
	if oka && okb {
		delta := roundMS(b - a)
		d.Delta = &delta
		if a != 0 {
			pct := math.Round((b-a)/math.Abs(a)*100*10) / 10
			d.DeltaPct = &pct
		}
	}
	return d
}

// Threshold is one --fail-on entry: fail when metric's change from A to B
// is above (Op ">") or below (Op "<") Value, absolute or in percent of A.
type Threshold struct {
	Spec     string  `json:"spec"`
	Metric   string  `json:"metric"`
	Op       string  `json:"op"`
	Value    float64 `json:"value"`
	Relative bool    `json:"relative"`
}

// Crossing is a threshold crossed by a chain metric (Validator "") or by
// one validator's metric.
type Crossing struct {
	Threshold Threshold `json:"threshold"`
	Validator string    `json:"validator,omitempty"`
	A         float64   `json:"a"`
	B         float64   `json:"b"`
	Delta     float64   `json:"delta"`
}

// String reads like "missed_precommits[v3] 2 -> 5 (+3) crosses >+2".
func (c Crossing) String() string {
	subject := c.Threshold.Metric
	if c.Validator != "" {
		subject += "[" + c.Validator + "]"
	}
	change := signed(c.Delta)
	if c.Threshold.Relative {
		change += ", " + formatPct(c.A, c.B)
	}
	return fmt.Sprintf("%s %s -> %s (%s) crosses %s", subject, formatMS(c.A), formatMS(c.B), change, c.Threshold.Op+thresholdText(c.Threshold))
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

// FailOnHelp says what a --fail-on entry may be; parse errors end with it.
func FailOnHelp() string {
	var chain, val []string
	for _, m := range compareChain {
		chain = append(chain, m.key)
	}
	for _, m := range compareValidator {
		if !strings.HasPrefix(m.key, "sign_latency_ms.") {
			val = append(val, m.key)
		}
	}
	val = append(val, "sign_latency_ms.<proposal|prevote|precommit|all>.<p50|p99>")
	return "want METRIC OP THRESHOLD, comma-separated, e.g. 'missed_precommits>+2,block_interval_ms.p95>+20%': " +
		"OP is > or <; THRESHOLD is a signed change from RUN_A to RUN_B, absolute (+2, -1.5) or relative (+20%); " +
		"METRIC is a chain metric (" + strings.Join(chain, ", ") + ") or a per-validator metric checked for every validator in both runs (" +
		strings.Join(val, ", ") + ")"
}

// ParseThresholds parses a --fail-on value: comma-separated entries
// "metric>+N", "metric<-N" or "metric>+N%". Empty entries are ignored.
func ParseThresholds(spec string) ([]Threshold, error) {
	var out []Threshold
	var errs []error
	for _, raw := range strings.Split(spec, ",") {
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

func parseThreshold(entry string) (Threshold, error) {
	i := strings.IndexAny(entry, "<>")
	if i < 0 {
		return Threshold{}, errors.New("no operator (> or <)")
	}
	t := Threshold{Spec: entry, Metric: strings.TrimSpace(entry[:i]), Op: entry[i : i+1]}
	if lookupCompareMetric(t.Metric) == nil {
		if t.Metric == "" {
			return t, errors.New("no metric before the operator")
		}
		return t, fmt.Errorf("unknown metric %q", t.Metric)
	}
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

func lookupCompareMetric(key string) *compareMetric {
	for _, list := range [][]compareMetric{compareChain, compareValidator} {
		for i := range list {
			if list[i].key == key {
				return &list[i]
			}
		}
	}
	return nil
}

// Check returns every threshold crossing: for a chain metric at most one,
// for a per-validator metric one per validator present in both runs. A
// metric without a value in either run is not checked. A relative
// threshold on a metric that is 0 in A treats any change as infinite (so
// 0 -> 1 crosses ">+50%"), and no change as 0%.
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
			out = append(out, Crossing{Threshold: t, Validator: validator, A: a, B: b, Delta: roundMS(b - a)})
		}
	}
	for _, t := range ths {
		for _, d := range c.Chain {
			if d.Metric == t.Metric {
				check(t, "", d)
			}
		}
		for _, v := range c.Validators {
			for _, d := range v.Metrics {
				if d.Metric == t.Metric {
					check(t, v.Name, d)
				}
			}
		}
	}
	return out
}

// WriteComparison writes the side-by-side text report of c, then the
// crossings of the thresholds checked (if any were given) and a last line
// "RESULT: PASS (...)" or "RESULT: FAIL (n threshold(s) crossed)".
func WriteComparison(w io.Writer, c *Comparison, ths []Threshold, crossings []Crossing) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	side := func(r CompareRun) string {
		dir := r.Dir
		if dir == "" {
			dir = "-"
		}
		if r.Model != "" {
			return fmt.Sprintf("%s (scenario %s: %s; %s)", dir, orDash(r.Scenario), r.Result, r.Model)
		}
		return fmt.Sprintf("%s (scenario %s: %s)", dir, orDash(r.Scenario), r.Result)
	}
	p("A: %s\nB: %s\n", side(c.A), side(c.B))
	for _, r := range []struct {
		name string
		run  CompareRun
	}{{"A", c.A}, {"B", c.B}} {
		if na := unavailableText(r.run.Unavailable); na != "" {
			p("%s: %s\n", r.name, na)
		}
	}

	row := func(tw io.Writer, prefix string, d Delta) {
		fmt.Fprintf(tw, "  %s%s\t%s\t%s\t%s\n", prefix, d.Metric, optMS(d.A), optMS(d.B), formatDelta(d))
	}
	p("\nChain\n")
	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  metric\tA\tB\tdelta")
	for _, d := range c.Chain {
		row(tw, "", d)
	}
	tw.Flush()

	if len(c.Validators) > 0 {
		p("\nValidators (matched by name)\n")
		tw = tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  validator\tmetric\tA\tB\tdelta")
		for _, v := range c.Validators {
			for _, d := range v.Metrics {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", v.Name, d.Metric, optMS(d.A), optMS(d.B), formatDelta(d))
			}
		}
		tw.Flush()
	}
	if len(c.OnlyInA) > 0 {
		p("\nOnly in A: %s\n", strings.Join(c.OnlyInA, ", "))
	}
	if len(c.OnlyInB) > 0 {
		p("\nOnly in B: %s\n", strings.Join(c.OnlyInB, ", "))
	}

	if len(ths) > 0 {
		specs := make([]string, len(ths))
		for i, t := range ths {
			specs[i] = t.Metric + t.Op + thresholdText(t)
		}
		p("\nThresholds: %s\n", strings.Join(specs, ", "))
		for _, x := range crossings {
			p("  FAIL  %s\n", x)
		}
		if len(crossings) == 0 {
			p("\nRESULT: PASS (no threshold crossed)\n")
		} else {
			p("\nRESULT: FAIL (%d threshold(s) crossed)\n", len(crossings))
		}
	}
	return bw.Flush()
}

func optMS(v *float64) string {
	if v == nil {
		return "-"
	}
	return formatMS(*v)
}

// formatDelta is "+3 (+12.5%)", "0", or "-" when a side has no value.
func formatDelta(d Delta) string {
	if d.Delta == nil {
		return "-"
	}
	s := signed(*d.Delta)
	if d.DeltaPct != nil && *d.DeltaPct != 0 {
		s += " (" + signed(*d.DeltaPct) + "%)"
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
		return "+" + formatMS(v)
	}
	return formatMS(v)
}
