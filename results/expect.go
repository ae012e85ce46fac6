package results

import (
	"fmt"
	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/results/eventlog"
	"slices"
	"strings"
)

// ExpectationResult is one evaluated expectation in summary.json. A
// per-validator expectation written without a validator yields one result
// per validator.
type ExpectationResult struct {
	eventlog.Expectation         // what was expected (its JSON keys inline)
	Value                float64 `json:"value"`
	OK                   bool    `json:"ok"`
	// Note qualifies a value, e.g. "no samples" for a latency of a phase
	// the validator never signed (value 0, judged like any other value).
	Note string `json:"note,omitempty"`
	// Error says why the expectation could not be evaluated (OK is false).
	Error string `json:"error,omitempty"`
	// Warning qualifies the verdict without changing it: on an overloaded
	// host (OverloadedNotice) the values reflect the machine.
	Warning string `json:"warning,omitempty"`
}

// metric computes one metric from a summary. samples is the number of
// observations behind a percentile value, or -1 for counts.
type metric struct {
	perValidator bool
	phased       bool
	chain        func(s *Summary) (value float64, samples int)
	validator    func(v *ValidatorSummary, phase string) (value float64, samples int)
}

func count[T int | int32 | int64](v T) (float64, int) { return float64(v), -1 }

// rate is n per counted height; its samples are the heights counted, so
// a rate over none has no value ("no samples").
func rate(n, counted int) (float64, int) {
	if counted == 0 {
		return 0, 0
	}
	return float64(n) / float64(counted), counted
}

// metrics implements every name in scenarios.Metrics (a test checks it).
// Metrics are read off the Summary, so summary.json shows exactly the values
// that expectations judged.
var metrics = map[string]metric{
	"heights_committed":         {chain: func(s *Summary) (float64, int) { return count(s.Heights.Committed) }},
	"heights_with_round_change": {chain: func(s *Summary) (float64, int) { return count(s.Rounds.HeightsWithRoundChange) }},
	"max_commit_round":          {chain: func(s *Summary) (float64, int) { return count(s.Rounds.MaxCommitRound) }},
	"extra_rounds":              {chain: func(s *Summary) (float64, int) { return count(s.Rounds.ExtraRounds) }},
	"block_interval_p50_ms":     {chain: func(s *Summary) (float64, int) { return s.BlockIntervalMS.P50, s.BlockIntervalMS.Count }},
	"block_interval_p95_ms":     {chain: func(s *Summary) (float64, int) { return s.BlockIntervalMS.P95, s.BlockIntervalMS.Count }},
	"block_interval_max_ms":     {chain: func(s *Summary) (float64, int) { return s.BlockIntervalMS.Max, s.BlockIntervalMS.Count }},
	"double_signs":              {chain: func(s *Summary) (float64, int) { return count(s.DoubleSigns) }},
	"halts":                     {chain: func(s *Summary) (float64, int) { return count(len(s.Halts)) }},
	"halts_unresumed": {chain: func(s *Summary) (float64, int) {
		return count(len(slices.DeleteFunc(slices.Clone(s.Halts), func(h Halt) bool { return h.Resumed })))
	}},

	"missed_precommits": {perValidator: true, validator: func(v *ValidatorSummary, _ string) (float64, int) { return count(v.MissedPrecommits) }},
	"nil_precommits":    {perValidator: true, validator: func(v *ValidatorSummary, _ string) (float64, int) { return count(v.NilPrecommits) }},
	"proposals_made":    {perValidator: true, validator: func(v *ValidatorSummary, _ string) (float64, int) { return count(v.Proposals.Made) }},
	"proposals_missed":  {perValidator: true, validator: func(v *ValidatorSummary, _ string) (float64, int) { return count(v.Proposals.Missed) }},

	"missed_precommits_rate": {perValidator: true, validator: func(v *ValidatorSummary, _ string) (float64, int) {
		return rate(v.MissedPrecommits, v.PrecommitsCounted)
	}},
	"nil_precommits_rate": {perValidator: true, validator: func(v *ValidatorSummary, _ string) (float64, int) { return rate(v.NilPrecommits, v.PrecommitsCounted) }},
	"missed_blocks_rate":  {perValidator: true, validator: func(v *ValidatorSummary, _ string) (float64, int) { return rate(v.MissedBlocks, v.PrecommitsCounted) }},

	"missed_blocks":          {perValidator: true, validator: func(v *ValidatorSummary, _ string) (float64, int) { return count(v.MissedBlocks) }},
	"consecutive_missed_max": {perValidator: true, validator: func(v *ValidatorSummary, _ string) (float64, int) { return count(v.ConsecutiveMissedMax) }},
	"late_prevotes":          {perValidator: true, validator: func(v *ValidatorSummary, _ string) (float64, int) { return count(v.LatePrevotes) }},
	"late_precommits":        {perValidator: true, validator: func(v *ValidatorSummary, _ string) (float64, int) { return count(v.LatePrecommits) }},
	"quorum_critical":        {perValidator: true, validator: func(v *ValidatorSummary, _ string) (float64, int) { return count(v.QuorumCritical) }},

	"txs_sent":                 loadMetric(func(l *LoadSummary) (float64, int) { return count(l.Sent) }),
	"txs_rejected":             loadMetric(func(l *LoadSummary) (float64, int) { return count(l.Rejected) }),
	"txs_failed":               loadMetric(func(l *LoadSummary) (float64, int) { return count(l.Failed) }),
	"txs_committed":            loadMetric(func(l *LoadSummary) (float64, int) { return count(l.Committed) }),
	"tx_per_s":                 loadMetric(func(l *LoadSummary) (float64, int) { return l.TxPerS, l.Sent }), // 0 committed of some sent is 0 tx/s, a value
	"tx_commit_latency_p50_ms": loadMetric(func(l *LoadSummary) (float64, int) { return l.CommitLatencyMS.P50, l.CommitLatencyMS.Count }),
	"tx_commit_latency_p95_ms": loadMetric(func(l *LoadSummary) (float64, int) { return l.CommitLatencyMS.P95, l.CommitLatencyMS.Count }),
	"tx_commit_latency_max_ms": loadMetric(func(l *LoadSummary) (float64, int) { return l.CommitLatencyMS.Max, l.CommitLatencyMS.Count }),
	"sign_queue_p50_ms":        {perValidator: true, validator: func(v *ValidatorSummary, _ string) (float64, int) { return v.signQueue().P50, v.signQueue().Count }},
	"sign_queue_p99_ms":        {perValidator: true, validator: func(v *ValidatorSummary, _ string) (float64, int) { return v.signQueue().P99, v.signQueue().Count }},
	"sign_queue_max_ms":        {perValidator: true, validator: func(v *ValidatorSummary, _ string) (float64, int) { return v.signQueue().Max, v.signQueue().Count }},

	"sign_errors":             {perValidator: true, validator: func(v *ValidatorSummary, _ string) (float64, int) { return count(v.SignErrors) }},
	"sign_errors_unexplained": {perValidator: true, validator: func(v *ValidatorSummary, _ string) (float64, int) { return count(v.SignErrorsUnexplained) }},

	"sign_latency_p50_ms": {perValidator: true, phased: true, validator: func(v *ValidatorSummary, p string) (float64, int) {
		st := v.SignLatencyMS.phase(p)
		return st.P50, st.Count
	}},
	"sign_latency_p99_ms": {perValidator: true, phased: true, validator: func(v *ValidatorSummary, p string) (float64, int) {
		st := v.SignLatencyMS.phase(p)
		return st.P99, st.Count
	}},
	"sign_latency_max_ms": {perValidator: true, phased: true, validator: func(v *ValidatorSummary, p string) (float64, int) {
		st := v.SignLatencyMS.phase(p)
		return st.Max, st.Count
	}},
}

// loadMetric reads a metric of the load; a run without one has no
// samples (value 0).
func loadMetric(f func(l *LoadSummary) (float64, int)) metric {
	return metric{chain: func(s *Summary) (float64, int) {
		if s.Load == nil {
			return 0, 0
		}
		return f(s.Load)
	}}
}

// HaltMetric names the metric that counts the halts of one cause:
// halts_signer_failed, halts_partition, ...
func HaltMetric(cause string) string { return "halts_" + strings.ReplaceAll(cause, "-", "_") }

func init() {
	for _, c := range HaltCauses {
		metrics[HaltMetric(c)] = metric{chain: func(s *Summary) (float64, int) {
			n := 0
			for _, h := range s.Halts {
				if h.Cause == c {
					n++
				}
			}
			return count(n)
		}}
	}
}

// phase returns the stats of one phase; "" means all phases together.
func (p *PhaseLatency) phase(name string) LatencyStats {
	switch name {
	case phase.Proposal:
		return p.Proposal
	case phase.Prevote:
		return p.Prevote
	case phase.Precommit:
		return p.Precommit
	}
	return p.All
}

// Metric returns the value of a metric as expectations see it. validator
// is required for per-validator metrics and refused for chain metrics;
// phase only applies to sign_latency_* ("" = all phases).
func (s *Summary) Metric(name, validator, phase string) (float64, error) {
	if validator == "" {
		if m, ok := metrics[name]; ok && m.perValidator {
			return 0, fmt.Errorf("metric %q needs a validator", name)
		}
	}
	v, _, err := s.metric(name, validator, phase)
	return v, err
}

func (s *Summary) metric(name, validator, phase string) (float64, int, error) {
	m, ok := metrics[name]
	if !ok {
		return 0, 0, fmt.Errorf("unknown metric %q", name)
	}
	if phase != "" {
		if !m.phased {
			return 0, 0, fmt.Errorf("metric %q takes no phase", name)
		}
		if !slices.Contains(phases, phase) {
			return 0, 0, fmt.Errorf("unknown phase %q (want proposal, prevote or precommit)", phase)
		}
	}
	if !m.perValidator {
		if validator != "" {
			return 0, 0, fmt.Errorf("metric %q is a chain metric and takes no validator", name)
		}
		if s.unavailable(name) {
			return 0, 0, &UnavailableError{Metric: name}
		}
		v, n := m.chain(s)
		return v, n, nil
	}
	i := slices.IndexFunc(s.Validators, func(v ValidatorSummary) bool { return v.Name == validator })
	switch {
	case s.unavailable(name) && (i >= 0 || validator == ""): // "": every validator (evaluate)
		return 0, 0, &UnavailableError{Metric: name}
	case i < 0:
		return 0, 0, fmt.Errorf("validator %q is not in the run", validator)
	}
	v, n := m.validator(&s.Validators[i], phase)
	return v, n, nil
}

// evaluate judges one expectation: ok when the value lies in [min, max]
// (either bound optional). A per-validator metric without a validator is
// checked for every validator, one result each. Expectations that cannot
// be evaluated (unknown metric, validator or phase) fail with Error set,
// so a typo never passes silently; so does one on a metric the run cannot
// tell (Summary.Unavailable), once for all validators.
func evaluate(s *Summary, exp eventlog.Expectation) []ExpectationResult {
	base := ExpectationResult{Expectation: eventlog.Expectation{
		Metric: exp.Metric, Validator: exp.Validator, Phase: exp.Phase,
		Min: clonePtr(exp.Min), Max: clonePtr(exp.Max), Default: exp.Default,
	}}
	judge := func(r ExpectationResult) ExpectationResult {
		v, n, err := s.metric(r.Metric, r.Validator, r.Phase)
		if err != nil {
			r.Error = err.Error()
			return r
		}
		r.Value = v
		r.OK = (r.Min == nil || v >= *r.Min) && (r.Max == nil || v <= *r.Max)
		if n == 0 {
			r.Note = "no samples"
		}
		return r
	}
	if m, ok := metrics[exp.Metric]; !ok || !m.perValidator || exp.Validator != "" || s.unavailable(exp.Metric) {
		return []ExpectationResult{judge(base)}
	}
	if len(s.Validators) == 0 {
		base.Error = "no validators to evaluate"
		return []ExpectationResult{base}
	}
	out := make([]ExpectationResult, 0, len(s.Validators))
	for _, v := range s.Validators {
		r := base
		r.Validator = v.Name
		out = append(out, judge(r))
	}
	return out
}

func clonePtr(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
