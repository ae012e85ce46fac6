package metricref

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want Ref
		err  string
	}{
		{"heights_committed", Ref{Metric: "heights_committed"}, ""},
		{"missed_precommits(hsm)", Ref{Metric: "missed_precommits", Validator: "hsm"}, ""},
		{"missed_precommits_rate(v-1)", Ref{Metric: "missed_precommits_rate", Validator: "v-1"}, ""},
		{"sign_latency_p99_ms(hsm, precommit)", Ref{"sign_latency_p99_ms", "hsm", "precommit"}, ""},
		{" block_interval_p50_ms ", Ref{Metric: "block_interval_p50_ms"}, ""},
		{"", Ref{}, "write a metric name"},
		{"Missed", Ref{}, "write a metric name"},
		{"missed_precommits()", Ref{}, "the parentheses name no validator"},
		{"missed_precommits(hsm", Ref{}, "write name(VALIDATOR)"},
		{"missed_precommits(a,b,c)", Ref{}, "write name(VALIDATOR)"},
		{"sign_latency_p50_ms(hsm,)", Ref{}, "no phase after the comma"},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Parse(%q): error %v, want %q", tt.in, err, tt.err)
			}
		case err != nil:
			t.Errorf("Parse(%q): %v", tt.in, err)
		case got != tt.want:
			t.Errorf("Parse(%q) = %+v, want %+v", tt.in, got, tt.want)
		default:
			if back, _ := Parse(got.String()); back != got {
				t.Errorf("String() %q does not parse back", got)
			}
		}
	}
}
