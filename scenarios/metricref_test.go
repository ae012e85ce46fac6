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
		"missed_precommits(v)":            `v expands to v-1..v-3; name one of them`,
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

// TestPlanMetricRefProduced: a reference the scenario cannot produce is
// refused with expect:'s message (checkMetricUse), not measured as 0.
func TestPlanMetricRefProduced(t *testing.T) {
	const noLoad = "name: plain\nvalidators:\n  - {name: v, count: 2}\n"
	const withDevice = "name: dev\ndevices: {hsm: {profile: yubihsm2}}\nload: {rate: 10/s}\nvalidators:\n  - {name: hsm, signer: {type: simulated, device: hsm}}\n  - {name: v, count: 2}\n"
	tests := []struct {
		scenario, ref, err string // err "" = accepted
	}{
		{noLoad, "txs_committed", "metric txs_committed measures the transaction load, and this scenario has no load: key"},
		{noLoad, "tx_per_s", "this scenario has no load: key"},
		{withDevice, "txs_committed", ""},
		{withDevice, "tx_commit_latency_p50_ms", ""},
		{noLoad, "sign_queue_p50_ms(v-1)", "validator v-1 has no device: metric sign_queue_p50_ms measures the wait in a shared device's queue; no validator of this scenario signs on one"},
		{withDevice, "sign_queue_p99_ms(v-2)", "validator v-2 has no device: metric sign_queue_p99_ms measures the wait in a shared device's queue; validators on a device: hsm"},
		{withDevice, "sign_queue_p99_ms(hsm)", ""},
		{withDevice, "sign_latency_p50_ms(v-2)", ""},
	}
	for _, tt := range tests {
		p, err := Parse("m.yaml", []byte(tt.scenario))
		if err != nil {
			t.Fatalf("%s: %v", tt.scenario, err)
		}
		_, err = p.MetricRef(tt.ref)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("MetricRef(%s): %v, want accepted", tt.ref, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("MetricRef(%s): %v, want %q", tt.ref, err, tt.err)
		}
	}
}
