package scenarios

import (
	"strings"
	"testing"

	"github.com/valnet/valnet/internal/metricref"
)

func TestPlanMetricRef(t *testing.T) {
	p, err := parseWithSets(t)
	if err != nil {
		t.Fatal(err)
	}
	good := map[string]metricref.Ref{
		"block_interval_p50_ms":              {Metric: "block_interval_p50_ms"},
		"missed_precommits(hsm)":             {Metric: "missed_precommits", Validator: "hsm"},
		"missed_precommits_rate(v-2)":        {Metric: "missed_precommits_rate", Validator: "v-2"},
		"sign_latency_p99_ms(hsm,precommit)": {Metric: "sign_latency_p99_ms", Validator: "hsm", Phase: "precommit"},
		"sign_latency_p50_ms(hsm)":           {Metric: "sign_latency_p50_ms", Validator: "hsm"},
	}
	for s, want := range good {
		if got, err := p.MetricRef(s); err != nil || got != want {
			t.Errorf("MetricRef(%s) = %+v, %v", s, got, err)
		}
	}
	bad := map[string]string{
		"missed_precomits(hsm)":           `unknown metric "missed_precomits"; did you mean "missed_precommits"? (allowed: heights_committed,`,
		"missed_precommits":               "is a per-validator metric; write missed_precommits(VALIDATOR) (validators: hsm, v-1, v-2, v-3)",
		"heights_committed(hsm)":          "is a chain metric",
		"missed_precommits(nobody)":       `no validator named "nobody" (validators: hsm, v-1, v-2, v-3)`,
		"missed_precommits(hms)":          `no validator named "hms"; did you mean "hsm"?`,
		"missed_precommits(v)":            `count expands it to v-1..v-3`,
		"missed_precommits(hsm,prevote)":  "has no phases",
		"sign_latency_p50_ms(hsm,commit)": `unknown phase "commit"`,
		"missed_precommits(hsm":           "write name(VALIDATOR)",
	}
	for s, want := range bad {
		if _, err := p.MetricRef(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("MetricRef(%s): %v, want %q", s, err, want)
		}
	}
}
