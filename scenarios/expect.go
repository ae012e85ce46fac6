package scenarios

import (
	"fmt"
)

// maxListedValidators caps the validator names listed in a message.
const maxListedValidators = 20

// metricNames lists Metrics' names, for messages and the schema test.
func metricNames() []string {
	out := make([]string, len(Metrics))
	for i, m := range Metrics {
		out[i] = m.Name
	}
	return out
}

// phasedMetricNames lists the metrics that take a phase.
func phasedMetricNames() []string {
	var out []string
	for _, m := range Metrics {
		if m.Phased {
			out = append(out, m.Name)
		}
	}
	return out
}

func (d *decoder) resolveExpect(raws []rawExpect, vals validatorSet) []Expectation {
	var out []Expectation
	for i, re := range raws {
		key := fmt.Sprintf("expect[%d]", i)
		e := Expectation{Metric: re.Metric, Validator: re.Validator, Phase: re.Phase, Min: re.Min, Max: re.Max, Pos: d.valuePos(key)}
		d.checkExpectMetric(key, re, vals)
		hasMin, hasMax := d.written(key+".min"), d.written(key+".max")
		switch {
		case !hasMin && !hasMax:
			d.fail(d.valuePos(key), key, "needs a bound: min, max or both")
		case re.Min != nil && re.Max != nil && *re.Min > *re.Max:
			d.fail(d.valuePos(key+".min"), key+".min", fmt.Sprintf("min %g is greater than max %g", *re.Min, *re.Max))
		}
		out = append(out, e)
	}
	return withDefaultExpect(out)
}

// Sign error metrics, and the expectation every scenario gets unless it
// names one of them: a signature the signer chain withheld (an error
// answer, an invalid signature, a double-sign refusal, no answer) that no
// fault of the scenario injected fails the run. A signer whose every
// signature is thrown away must not pass because the chain went on
// without it.
const (
	MetricSignErrors            = "sign_errors"
	MetricSignErrorsUnexplained = "sign_errors_unexplained"
)

func withDefaultExpect(es []Expectation) []Expectation {
	for _, e := range es {
		if e.Metric == MetricSignErrors || e.Metric == MetricSignErrorsUnexplained {
			return es
		}
	}
	zero := 0.0
	return append(es, Expectation{Metric: MetricSignErrorsUnexplained, Max: &zero, Default: true})
}

// checkExpectMetric reports what checkMetricUse finds wrong with an
// entry's metric, validator and phase, each at its key.
func (d *decoder) checkExpectMetric(key string, re rawExpect, vals validatorSet) {
	mk, vk, pk := key+".metric", key+".validator", key+".phase"
	if !d.written(mk) {
		d.fail(d.valuePos(mk), mk, "required: name the metric to check", metricNames()...)
	}
	u := metricUse{Metric: re.Metric, Every: !d.written(vk)}
	if d.written(vk) && !d.failed(vk) {
		u.Validator = re.Validator
	}
	if d.written(pk) && !d.failed(pk) {
		u.Phase = re.Phase
	}
	for _, pr := range checkMetricUse(u, vals, d.hasLoad) {
		if pr.Field == fieldMetric && d.failed(mk) {
			continue // missing or not a string: said already
		}
		k := map[metricField]string{fieldMetric: mk, fieldValidator: vk, fieldPhase: pk}[pr.Field]
		pos := d.valuePos(k)
		if pr.AtKey {
			pos = d.keyPos(k)
		}
		d.fail(pos, k, pr.Msg, pr.Allowed...)
	}
}

// checkValidatorRef looks up a reference to one expanded validator,
// explaining a name that is not one of them.
func (d *decoder) checkValidatorRef(key, name string, vals validatorSet) (ValidatorPlan, bool) {
	return d.checkValidatorRefAt(d.valuePos(key), key, name, vals)
}

// checkValidatorRefAt is checkValidatorRef reporting at p (a name written
// as a mapping key is reported at the key).
func (d *decoder) checkValidatorRefAt(p Pos, key, name string, vals validatorSet) (ValidatorPlan, bool) {
	v, msg, allowed := vals.ref(name)
	if msg != "" {
		d.fail(p, key, msg, allowed...)
		return ValidatorPlan{}, false
	}
	return v, true
}

// validatorRef checks a reference from outside validators (faults,
// network): like checkValidatorRef, but quiet when there are no
// validators to look it up in, which is reported already.
func (d *decoder) validatorRef(key, name string, vals validatorSet) (ValidatorPlan, bool) {
	return d.validatorRefAt(d.valuePos(key), key, name, vals)
}

func (d *decoder) validatorRefAt(p Pos, key, name string, vals validatorSet) (ValidatorPlan, bool) {
	if len(vals.plans) == 0 && d.failed("validators") {
		return ValidatorPlan{}, false
	}
	return d.checkValidatorRefAt(p, key, name, vals)
}
