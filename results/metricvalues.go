package results

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/valnet/valnet/internal/metricref"
)

// MetricValues is every metric of the run by reference (metricref): each
// chain metric by name, each per-validator metric for every validator as
// name(VALIDATOR), and each phased one also per phase as
// name(VALIDATOR,PHASE). These are the values expectations judge (the
// metrics table above). A value with no samples (a latency of a phase
// never signed, a rate over no counted heights) is left out: the run
// cannot tell it, and 0 would be a made-up number. So is every metric of
// s.Unavailable (a model run that did not record what it needs).
func MetricValues(s *Summary) map[string]float64 {
	out := make(map[string]float64)
	put := func(r metricref.Ref, v float64, samples int) {
		if samples != 0 {
			out[r.String()] = v
		}
	}
	for _, name := range metricNames() {
		if s.unavailable(name) {
			continue
		}
		m := metrics[name]
		if !m.perValidator {
			v, n := m.chain(s)
			put(metricref.Ref{Metric: name}, v, n)
			continue
		}
		for i := range s.Validators {
			val := &s.Validators[i]
			v, n := m.validator(val, "")
			put(metricref.Ref{Metric: name, Validator: val.Name}, v, n)
			if !m.phased {
				continue
			}
			for _, p := range phases {
				v, n := m.validator(val, p)
				put(metricref.Ref{Metric: name, Validator: val.Name, Phase: p}, v, n)
			}
		}
	}
	return out
}

// MetricValue is one value of MetricValues, by its reference text. ok is
// false when the value has no samples or the run cannot tell it
// (s.Unavailable); err says why a reference names no metric of this run.
func MetricValue(s *Summary, ref string) (value float64, ok bool, err error) {
	r, err := metricref.Parse(ref)
	if err != nil {
		return 0, false, err
	}
	m, known := metrics[r.Metric]
	if known && m.perValidator && r.Validator == "" {
		return 0, false, fmt.Errorf("metric %s needs a validator: %s(VALIDATOR)", r.Metric, r.Metric)
	}
	v, n, err := s.metric(r.Metric, r.Validator, r.Phase)
	var na *UnavailableError
	if errors.As(err, &na) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return v, n != 0, nil
}

// metricNames lists the metrics table's names in order, so that maps built
// from it are built the same way every time.
func metricNames() []string { return slices.Sorted(maps.Keys(metrics)) }
