// Package metricref is the text form of one metric of one run, as sweep
// tables, sweep.json and threshold targets name it: "name" (a chain
// metric), "name(VALIDATOR)", "name(VALIDATOR,PHASE)". It knows the
// syntax only; scenarios checks a reference against a plan's metrics and
// validators, results computes its value.
package metricref

import (
	"fmt"
	"regexp"
	"strings"
)

// Ref names one metric value: a metric, the validator it is about (per
// validator metrics) and a phase (phased metrics; "" for all phases).
type Ref struct {
	Metric    string
	Validator string
	Phase     string
}

// String is the reference as written: name, name(v) or name(v,phase).
func (r Ref) String() string {
	switch {
	case r.Validator == "" && r.Phase == "":
		return r.Metric
	case r.Phase == "":
		return r.Metric + "(" + r.Validator + ")"
	}
	return r.Metric + "(" + r.Validator + "," + r.Phase + ")"
}

var (
	refPattern  = regexp.MustCompile(`^([a-z0-9_]+)(?:\(([^(),]*)(?:,([^(),]*))?\))?$`)
	namePattern = regexp.MustCompile(`^[a-z0-9_]+$`)
)

// Parse reads a reference's syntax; whether the metric, validator and
// phase exist is for the caller to check (scenarios.Plan.CheckMetricRef).
func Parse(s string) (Ref, error) {
	text := strings.ReplaceAll(strings.TrimSpace(s), " ", "")
	m := refPattern.FindStringSubmatch(text)
	if m == nil {
		if i := strings.IndexByte(text, '('); i > 0 && namePattern.MatchString(text[:i]) {
			return Ref{}, fmt.Errorf("metric %q: write name(VALIDATOR) or name(VALIDATOR,PHASE)", s)
		}
		return Ref{}, fmt.Errorf("metric %q: write a metric name, name(VALIDATOR) or name(VALIDATOR,PHASE), e.g. missed_precommits_rate(hsm)", s)
	}
	r := Ref{Metric: m[1], Validator: m[2], Phase: m[3]}
	if strings.Contains(text, "(") && r.Validator == "" {
		return Ref{}, fmt.Errorf("metric %q: the parentheses name no validator; write %s(VALIDATOR) or %s", s, r.Metric, r.Metric)
	}
	if strings.Contains(text, ",") && r.Phase == "" {
		return Ref{}, fmt.Errorf("metric %q: no phase after the comma", s)
	}
	return r, nil
}
