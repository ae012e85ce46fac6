package scenarios

import (
	"fmt"
	"strings"

	"github.com/valnet/valnet/internal/metricref"
	"github.com/valnet/valnet/internal/phase"
)

// MetricRef parses a metric reference (internal/metricref: name,
// name(VALIDATOR), name(VALIDATOR,PHASE)) and checks it against the plan:
// a metric of Metrics, a validator of the expanded plan for per-validator
// metrics (and none for chain metrics), a phase only on phased metrics.
// valnet sweep --metric and valnet threshold --target read metrics so.
func (p *Plan) MetricRef(s string) (metricref.Ref, error) {
	r, err := metricref.Parse(s)
	if err != nil {
		return metricref.Ref{}, err
	}
	info, ok := LookupMetric(r.Metric)
	if !ok {
		return r, fmt.Errorf("metric %s: unknown metric %q%s (allowed: %s)", s, r.Metric, didYouMean(r.Metric, metricNames()), strings.Join(metricNames(), ", "))
	}
	switch {
	case !info.PerValidator && r.Validator != "":
		return r, fmt.Errorf("metric %s: %s is a chain metric; write it without a validator", s, r.Metric)
	case info.PerValidator && r.Validator == "":
		return r, fmt.Errorf("metric %s: %s is a per-validator metric; write %s(VALIDATOR) (validators: %s)", s, r.Metric, r.Metric, p.validatorList())
	case r.Phase != "" && !info.Phased:
		return r, fmt.Errorf("metric %s: %s has no phases; only %s take a phase", s, r.Metric, strings.Join(phasedMetricNames(), ", "))
	case r.Phase != "" && !phase.Valid(r.Phase):
		return r, fmt.Errorf("metric %s: unknown phase %q (allowed: %s)", s, r.Phase, strings.Join(phase.All(), ", "))
	}
	if r.Validator != "" && !p.hasValidator(r.Validator) {
		var group []string
		for _, v := range p.Validators {
			if strings.HasPrefix(v.Name, r.Validator+"-") {
				group = append(group, v.Name)
			}
		}
		if len(group) > 0 {
			return r, fmt.Errorf("metric %s: no validator named %q; count expands it to %s..%s, name one of them", s, r.Validator, group[0], group[len(group)-1])
		}
		return r, fmt.Errorf("metric %s: no validator named %q%s (validators: %s)", s, r.Validator, didYouMean(r.Validator, p.validatorNames()), p.validatorList())
	}
	return r, nil
}

func (p *Plan) hasValidator(name string) bool {
	for _, v := range p.Validators {
		if v.Name == name {
			return true
		}
	}
	return false
}

func (p *Plan) validatorNames() []string {
	out := make([]string, len(p.Validators))
	for i, v := range p.Validators {
		out[i] = v.Name
	}
	return out
}

// validatorList is the expanded names for a message, cut when long.
func (p *Plan) validatorList() string {
	names := p.validatorNames()
	if len(names) > maxListedValidators {
		return names[0] + ".." + names[len(names)-1]
	}
	return strings.Join(names, ", ")
}
