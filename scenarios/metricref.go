package scenarios

import (
	"errors"
	"fmt"
	"strings"

	"github.com/valnet/valnet/internal/metricref"
)

// MetricRef parses a metric reference (internal/metricref: name,
// name(VALIDATOR), name(VALIDATOR,PHASE)) and checks it against the plan
// with the rule expect: entries follow (checkMetricUse): a metric the
// plan can produce (load metrics need a load, device metrics a validator
// on a shared device), a validator of the expanded plan for per-validator
// metrics (and none for chain metrics), a phase only on phased metrics.
// valnet sweep --metric and valnet threshold --target read metrics so.
func (p *Plan) MetricRef(s string) (metricref.Ref, error) {
	r, err := metricref.Parse(s)
	if err != nil {
		return metricref.Ref{}, err
	}
	vals := p.validatorSet()
	if info, ok := LookupMetric(r.Metric); ok && info.PerValidator && r.Validator == "" {
		// An expect entry without a validator judges every one; a
		// reference names one value.
		return r, fmt.Errorf("metric %s: %s is a per-validator metric; write %s(VALIDATOR) (validators: %s)", s, r.Metric, r.Metric, validatorList(vals.names()))
	}
	var errs []error
	for _, pr := range checkMetricUse(metricUse{Metric: r.Metric, Validator: r.Validator, Phase: r.Phase}, vals, p.Load != nil) {
		msg := Error{Msg: pr.Msg, Allowed: pr.Allowed}.message()
		if pr.Field == fieldValidator && len(pr.Allowed) > 0 {
			// A command line has no key to say what the list is of.
			msg = fmt.Sprintf("%s (validators: %s)", pr.Msg, strings.Join(pr.Allowed, ", "))
		}
		errs = append(errs, fmt.Errorf("metric %s: %s", s, msg))
	}
	return r, errors.Join(errs...)
}

// validatorSet rebuilds the decoder's view of the expanded validators.
func (p *Plan) validatorSet() validatorSet {
	vs := validatorSet{plans: p.Validators, index: make(map[string]int, len(p.Validators)), groups: p.validatorGroups}
	for i, v := range p.Validators {
		vs.index[v.Name] = i
	}
	return vs
}
