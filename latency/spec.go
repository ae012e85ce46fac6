// Package latency is valnet's one model of a delay: a signer's injected
// latency, a fault's extra delay, a device profile's signing time and a
// network link's latency are all a Spec (a distribution and its
// parameters), written as text by Parse, checked by Validate, described by
// String, and drawn from by a Model seeded by the run seed and a name.
//
// It is a leaf: it imports nothing of valnet, so the scenario schema, the
// signers, the device catalog and the network fabric can all share it.
package latency

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Distributions.
const (
	Fixed     = "fixed"
	Uniform   = "uniform"
	Normal    = "normal"
	Lognormal = "lognormal"
)

// params are the parameters each distribution takes, all required, in the
// order Parse and Make take them. Their names are the scenario's keys.
var params = map[string][]string{
	Fixed:     {"value"},
	Uniform:   {"min", "max"},
	Normal:    {"mean", "stddev"},
	Lognormal: {"p50", "p99"},
}

// Dists lists the distributions in documentation order (a new slice).
func Dists() []string { return []string{Fixed, Uniform, Normal, Lognormal} }

// Params lists the parameters of dist in their order (a new slice); nil for
// an unknown dist.
func Params(dist string) []string { return slices.Clone(params[dist]) }

// Spec is a delay distribution. Only the fields of Dist are used: fixed:
// Value; uniform: Min, Max; normal: Mean, Stddev (clamped at 0 when drawn);
// lognormal: P50, P99.
type Spec struct {
	Dist            string
	Value, Min, Max time.Duration
	Mean, Stddev    time.Duration
	P50, P99        time.Duration
}

// Median is the delay half the draws stay under (for a normal, its mean;
// a uniform, the middle of its range): the typical delay, for checks that
// a delay makes sense beside the run it is in.
func (s Spec) Median() time.Duration {
	switch s.Dist {
	case Fixed:
		return s.Value
	case Uniform:
		return s.Min + (s.Max-s.Min)/2
	case Normal:
		return s.Mean
	case Lognormal:
		return s.P50
	}
	return 0
}

// field is the parameter called name.
func (s *Spec) field(name string) *time.Duration {
	switch name {
	case "value":
		return &s.Value
	case "min":
		return &s.Min
	case "max":
		return &s.Max
	case "mean":
		return &s.Mean
	case "stddev":
		return &s.Stddev
	case "p50":
		return &s.P50
	case "p99":
		return &s.P99
	}
	return nil
}

// Make is the spec of dist with its parameters in Params order, e.g.
// Make(Uniform, min, max). It does not validate the values.
func Make(dist string, values ...time.Duration) (Spec, error) {
	names, ok := params[dist]
	if !ok {
		return Spec{}, unknownDist(dist)
	}
	if len(values) != len(names) {
		return Spec{}, fmt.Errorf("%s takes %d duration(s) (%s), got %d", dist, len(names), strings.Join(names, ", "), len(values))
	}
	s := Spec{Dist: dist}
	for i, n := range names {
		*s.field(n) = values[i]
	}
	return s, nil
}

// Error is a problem with one parameter of a spec, so that a caller that
// knows where the parameter was written (the scenario decoder) can point
// at it.
type Error struct {
	Param string // "dist", or one of Params(dist)
	Msg   string // a whole sentence that names the parameter
}

func (e *Error) Error() string { return e.Msg }

func unknownDist(dist string) *Error {
	if dist == "" {
		return &Error{Param: "dist", Msg: "no distribution given (allowed: " + strings.Join(Dists(), ", ") + ")"}
	}
	return &Error{Param: "dist", Msg: fmt.Sprintf("unknown distribution %q (allowed: %s)", dist, strings.Join(Dists(), ", "))}
}

// Validate checks the parameters of s: none negative, uniform min <= max,
// lognormal 0 < p50 <= p99. A problem is an *Error.
func (s Spec) Validate() error {
	names, ok := params[s.Dist]
	if !ok {
		return unknownDist(s.Dist)
	}
	for _, n := range names {
		if v := *s.field(n); v < 0 {
			return &Error{Param: n, Msg: fmt.Sprintf("%s must not be negative, got %v", n, v)}
		}
	}
	switch s.Dist {
	case Uniform:
		if s.Min > s.Max {
			return &Error{Param: "min", Msg: fmt.Sprintf("min %s is greater than max %s", s.Min, s.Max)}
		}
	case Lognormal:
		if s.P50 == 0 {
			return &Error{Param: "p50", Msg: "p50 must be greater than 0: a lognormal delay has a positive median"}
		}
		if s.P99 < s.P50 {
			return &Error{Param: "p99", Msg: fmt.Sprintf("p99 %s is less than p50 %s", s.P99, s.P50)}
		}
	}
	return nil
}

// String describes s in one line, e.g. "fixed 200ms", "uniform 1s..3s",
// "normal mean=100ms stddev=5ms", "lognormal p50=200ms p99=800ms".
func (s Spec) String() string {
	switch s.Dist {
	case Fixed:
		return "fixed " + s.Value.String()
	case Uniform:
		return fmt.Sprintf("uniform %v..%v", s.Min, s.Max)
	case Normal:
		return fmt.Sprintf("normal mean=%v stddev=%v", s.Mean, s.Stddev)
	case Lognormal:
		return fmt.Sprintf("lognormal p50=%v p99=%v", s.P50, s.P99)
	}
	return s.Dist
}

// Syntax is Parse's syntax, for help texts and messages.
const Syntax = "D, fixed:D, uniform:MIN:MAX, normal:MEAN:STDDEV or lognormal:P50:P99"

// Parse reads a delay written as D (fixed), fixed:D, uniform:MIN:MAX,
// normal:MEAN:STDDEV or lognormal:P50:P99, e.g. "lognormal:200ms:800ms",
// and validates it.
func Parse(text string) (Spec, error) {
	parts := strings.Split(text, ":")
	dist, args := Fixed, parts
	if _, err := time.ParseDuration(parts[0]); err != nil || len(parts) > 1 {
		dist, args = parts[0], parts[1:]
	}
	if _, ok := params[dist]; !ok {
		return Spec{}, fmt.Errorf("latency %q: unknown distribution %q (write %s)", text, dist, Syntax)
	}
	durs := make([]time.Duration, len(args))
	for i, a := range args {
		d, err := time.ParseDuration(a)
		if err != nil {
			return Spec{}, fmt.Errorf("latency %q: %q is not a duration (e.g. 200ms)", text, a)
		}
		durs[i] = d
	}
	s, err := Make(dist, durs...)
	if err == nil {
		err = s.Validate()
	}
	if err != nil {
		return Spec{}, fmt.Errorf("latency %q: %w", text, err)
	}
	return s, nil
}
