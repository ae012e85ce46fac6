package scenarios

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/latency"
)

// latencyCommonKeys are accepted whatever the dist. Besides them a
// mapping-form latency takes exactly the parameters of its dist
// (latency.Params), all required; any other key is an error, so a typo
// cannot silently select a default.
var latencyCommonKeys = []string{"dist", "phases"}

// decodeScalar reads the shorthand "latency: 200ms", a fixed delay, and
// where the decoder allows it latency.Parse's text ("lognormal:200ms:800ms").
func (l *rawLatency) decodeScalar(d *decoder, n *yaml.Node, key string) {
	if d.latencyText && n.ShortTag() == "!!str" && strings.Contains(n.Value, ":") {
		spec, err := latency.Parse(n.Value)
		if err != nil {
			d.fail(d.at(n), key, err.Error())
			return
		}
		l.text = &spec
		return
	}
	l.shorthand = true
	l.Dist = latency.Fixed
	if v, ok := d.duration(n, key); ok {
		l.Value = &v
	}
}

// params maps each distribution parameter key to its value (nil: absent).
// TestDistKeysMatchLatencyKeys keeps it in step with the yaml tags.
func (l *rawLatency) params() map[string]*time.Duration {
	return map[string]*time.Duration{
		"value": l.Value, "min": l.Min, "max": l.Max,
		"mean": l.Mean, "stddev": l.Stddev,
		"p50": l.P50, "p99": l.P99,
	}
}

func (d *decoder) resolveLatency(key string, rl *rawLatency) *LatencyPlan {
	lp := d.resolveLatencySpec(key, rl)
	// A device profile describes a device, not a run: only latencies that
	// act in this run are held against its length.
	if lp != nil && d.maxDuration > 0 && !strings.HasPrefix(key, "profiles.") {
		if m := lp.Median(); m > d.maxDuration {
			d.fail(d.valuePos(key), key, fmt.Sprintf("a typical delay of %v is longer than the whole run (run.max_duration %v): most of it would never be waited for; "+
				"a signer that does not answer is signer-outage, a cut link partition or isolate; or raise run.max_duration", m, d.maxDuration))
		}
	}
	return lp
}

func (d *decoder) resolveLatencySpec(key string, rl *rawLatency) *LatencyPlan {
	if rl == nil {
		return nil
	}
	lp := &LatencyPlan{Phases: d.resolvePhases(key+".phases", rl.Phases, "delay")}
	if rl.text != nil {
		lp.Spec = *rl.text // parsed and validated
		return lp
	}
	if rl.shorthand {
		// decode dropped the latency if the duration was bad
		lp.Spec = latency.Spec{Dist: latency.Fixed, Value: *rl.Value}
		return lp
	}
	distKey := key + ".dist"
	if !d.written(distKey) {
		d.fail(d.valuePos(key), distKey, "required: say which distribution the delay follows, e.g. {dist: fixed, value: 200ms}", latency.Dists()...)
		return nil
	}
	own := latency.Params(rl.Dist)
	if own == nil {
		if !d.failed(distKey) {
			d.fail(d.valuePos(distKey), distKey, fmt.Sprintf("unknown distribution %q", rl.Dist), latency.Dists()...)
		}
		return nil
	}
	params := rl.params()
	allowed := append(append([]string{"dist"}, own...), "phases")
	for _, f := range yamlFields(reflect.TypeFor[rawLatency]()) {
		k := key + "." + f.Key
		if _, isParam := params[f.Key]; isParam && !contains(own, f.Key) && d.written(k) {
			d.fail(d.keyPos(k), k, fmt.Sprintf("dist %s does not take %s", rl.Dist, f.Key), allowed...)
		}
	}
	var missing []string
	for _, k := range own {
		if params[k] == nil && !d.failed(key+"."+k) {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		d.fail(d.valuePos(key), key, fmt.Sprintf("dist %s needs %s", rl.Dist, strings.Join(missing, " and ")))
	}
	if len(missing) > 0 || d.anyFailed(key, own) {
		return nil
	}
	values := make([]time.Duration, len(own))
	for i, k := range own {
		values[i] = *params[k]
	}
	lp.Spec, _ = latency.Make(rl.Dist, values...) // own is rl.Dist's parameters
	var bad *latency.Error
	if err := lp.Validate(); errors.As(err, &bad) {
		k := key + "." + bad.Param
		d.fail(d.valuePos(k), k, bad.Msg)
	}
	return lp
}

// anyFailed reports whether any of parent's children keys has an error.
func (d *decoder) anyFailed(parent string, keys []string) bool {
	for _, k := range keys {
		if d.failed(parent + "." + k) {
			return true
		}
	}
	return false
}

// resolvePhases defaults to every phase and returns them in consensus order.
// verb says what the phases are for, in messages ("delay").
func (d *decoder) resolvePhases(key string, phases []string, verb string) []string {
	if !d.written(key) || d.failed(key) {
		return phase.All()
	}
	if len(phases) == 0 {
		d.fail(d.valuePos(key), key, "must list at least one phase; remove the key to "+verb+" every phase", phase.All()...)
		return nil
	}
	seen := make(map[string]bool)
	for i, ph := range phases {
		k := fmt.Sprintf("%s[%d]", key, i)
		switch {
		case d.failed(k):
		case !phase.Valid(ph):
			d.fail(d.valuePos(k), k, fmt.Sprintf("unknown phase %q", ph), phase.All()...)
		case seen[ph]:
			d.fail(d.valuePos(k), k, fmt.Sprintf("phase %q is listed twice", ph))
		}
		seen[ph] = true
	}
	var out []string
	for _, ph := range phase.All() {
		if seen[ph] {
			out = append(out, ph)
		}
	}
	return out
}
