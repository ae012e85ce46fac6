package scenarios

import (
	"fmt"
	"strings"

	"github.com/valnet/valnet/internal/phase"
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
		info, known := d.checkMetric(key+".metric", re.Metric)
		if known && info.Load && !d.hasLoad {
			d.fail(d.valuePos(key+".metric"), key+".metric", fmt.Sprintf("metric %s measures the transaction load, and this scenario has no load: key (add e.g. load: {rate: 200/s})", re.Metric))
		}
		if d.written(key+".validator") && !d.failed(key+".validator") {
			d.checkExpectValidator(key+".validator", re.Validator, info, known, vals)
		}
		if d.written(key+".phase") && !d.failed(key+".phase") {
			k := key + ".phase"
			switch {
			case known && !info.Phased:
				d.fail(d.keyPos(k), k, fmt.Sprintf("metric %s has no phases; only %s take a phase", re.Metric, strings.Join(phasedMetricNames(), ", ")))
			case !phase.Valid(re.Phase):
				d.fail(d.valuePos(k), k, fmt.Sprintf("unknown phase %q", re.Phase), phase.All()...)
			}
		}
		hasMin, hasMax := d.written(key+".min"), d.written(key+".max")
		switch {
		case !hasMin && !hasMax:
			d.fail(d.valuePos(key), key, "needs a bound: min, max or both")
		case re.Min != nil && re.Max != nil && *re.Min > *re.Max:
			d.fail(d.valuePos(key+".min"), key+".min", fmt.Sprintf("min %g is greater than max %g", *re.Min, *re.Max))
		}
		out = append(out, e)
	}
	return out
}

// checkMetric looks up an expectation's metric, reporting a missing or
// unknown one.
func (d *decoder) checkMetric(key, name string) (MetricInfo, bool) {
	if d.failed(key) {
		return MetricInfo{}, false
	}
	if !d.written(key) {
		d.fail(d.valuePos(key), key, "required: name the metric to check", metricNames()...)
		return MetricInfo{}, false
	}
	info, ok := LookupMetric(name)
	if !ok {
		msg := fmt.Sprintf("unknown metric %q", name) + didYouMean(name, metricNames())
		d.fail(d.valuePos(key), key, msg, metricNames()...)
	}
	return info, ok
}

// checkExpectValidator checks that a validator-scoped expectation names one
// validator of the expanded set.
func (d *decoder) checkExpectValidator(key, name string, info MetricInfo, known bool, vals validatorSet) {
	if known && !info.PerValidator {
		d.fail(d.keyPos(key), key, fmt.Sprintf("metric %s is a chain metric; it takes no validator (remove this key)", info.Name))
		return
	}
	d.checkValidatorRef(key, name, vals)
}

// checkValidatorRef looks up a reference to one expanded validator,
// explaining a name that is not one of them.
func (d *decoder) checkValidatorRef(key, name string, vals validatorSet) (ValidatorPlan, bool) {
	return d.checkValidatorRefAt(d.valuePos(key), key, name, vals)
}

// checkValidatorRefAt is checkValidatorRef reporting at p (a name written
// as a mapping key is reported at the key).
func (d *decoder) checkValidatorRefAt(p Pos, key, name string, vals validatorSet) (ValidatorPlan, bool) {
	if v, ok := vals.lookup(name); ok {
		return v, true
	}
	if span := vals.groups[name]; span != "" {
		d.fail(p, key, fmt.Sprintf("%s expands to %s; name one of them", name, span))
		return ValidatorPlan{}, false
	}
	names := vals.names()
	if len(names) > maxListedValidators {
		d.fail(p, key, fmt.Sprintf("no validator named %q (names are %s..%s)", name, names[0], names[len(names)-1]))
		return ValidatorPlan{}, false
	}
	d.fail(p, key, fmt.Sprintf("no validator named %q", name), names...)
	return ValidatorPlan{}, false
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
