package scenarios

import (
	"fmt"
	"strings"

	"github.com/valnet/valnet/internal/phase"
)

// metricUse is one metric a scenario is asked for: an expect entry, or a
// metric reference of valnet sweep --metric / valnet threshold --target.
type metricUse struct {
	Metric    string
	Validator string // "" = none named
	Phase     string // "" = all phases
	// Every: no validator named, the metric is judged for every
	// validator (expect entries).
	Every bool
}

// metricField says which part of a use a problem is about.
type metricField int

const (
	fieldMetric metricField = iota
	fieldValidator
	fieldPhase
)

// metricProblem is one reason a scenario cannot produce a metric use.
type metricProblem struct {
	Field   metricField
	AtKey   bool // the key itself is wrong (report at the key, not its value)
	Msg     string
	Allowed []string
}

// checkMetricUse is the one rule for what a scenario can measure, shared
// by expect: and Plan.MetricRef: a known metric; a load metric only with
// a load: key; a validator only on per-validator metrics, one of the
// expanded set; a device metric only for validators on a shared device;
// a phase only on phased metrics.
func checkMetricUse(u metricUse, vals validatorSet, hasLoad bool) []metricProblem {
	var out []metricProblem
	info, known := LookupMetric(u.Metric)
	if !known {
		out = append(out, metricProblem{Field: fieldMetric, Msg: fmt.Sprintf("unknown metric %q", u.Metric) + didYouMean(u.Metric, metricNames()), Allowed: metricNames()})
	}
	if known && info.Load && !hasLoad {
		out = append(out, metricProblem{Field: fieldMetric, Msg: fmt.Sprintf("metric %s measures the transaction load, and this scenario has no load: key (add e.g. load: {rate: 200/s})", u.Metric)})
	}
	switch {
	case u.Validator != "" && known && !info.PerValidator:
		out = append(out, metricProblem{Field: fieldValidator, AtKey: true, Msg: fmt.Sprintf("metric %s is a chain metric; it takes no validator", u.Metric)})
	case u.Validator != "":
		v, msg, allowed := vals.ref(u.Validator)
		switch {
		case msg != "":
			out = append(out, metricProblem{Field: fieldValidator, Msg: msg, Allowed: allowed})
		case known && info.Device && v.Signer.Device == "":
			out = append(out, metricProblem{Field: fieldValidator, Msg: fmt.Sprintf("validator %s has no device: metric %s measures the wait in a shared device's queue; %s", v.Name, u.Metric, vals.onDevices())})
		}
	case u.Every && known && info.Device:
		if without := vals.withoutDevice(); len(without) > 0 {
			out = append(out, metricProblem{Field: fieldMetric, Msg: fmt.Sprintf("metric %s measures the wait in a shared device's queue, and %s have no device; name a validator; %s", u.Metric, validatorList(without), vals.onDevices())})
		}
	}
	if u.Phase != "" {
		switch {
		case known && !info.Phased:
			out = append(out, metricProblem{Field: fieldPhase, AtKey: true, Msg: fmt.Sprintf("metric %s has no phases; only %s take a phase", u.Metric, strings.Join(phasedMetricNames(), ", "))})
		case !phase.Valid(u.Phase):
			out = append(out, metricProblem{Field: fieldPhase, Msg: fmt.Sprintf("unknown phase %q", u.Phase), Allowed: phase.All()})
		}
	}
	return out
}

// withoutDevice lists the validators that sign on no shared device.
func (vs validatorSet) withoutDevice() []string {
	var out []string
	for _, v := range vs.plans {
		if v.Signer.Device == "" {
			out = append(out, v.Name)
		}
	}
	return out
}

// onDevices says which validators sign on a shared device, for messages.
func (vs validatorSet) onDevices() string {
	var on []string
	for _, v := range vs.plans {
		if v.Signer.Device != "" {
			on = append(on, v.Name)
		}
	}
	if len(on) == 0 {
		return "no validator of this scenario signs on one (signer.device)"
	}
	return "validators on a device: " + validatorList(on)
}

// validatorList joins validator names for a message, as a span when
// long.
func validatorList(names []string) string {
	if len(names) > maxListedValidators {
		return names[0] + ".." + names[len(names)-1]
	}
	return strings.Join(names, ", ")
}
