package results

import (
	"github.com/valnet/valnet/results/eventlog"
	"strings"
	"testing"
)

// cmpSummary is a summary with the values compare reads.
func cmpSummary(committed int, p95 float64, missed map[string]int, precommitP99 map[string]float64) *Summary {
	s := &Summary{Scenario: "x", StopReason: eventlog.StopHeights, OK: true}
	s.Heights.Committed = committed
	s.BlockIntervalMS = IntervalStats{Count: 5, P50: p95 / 2, P95: p95, Max: p95}
	for _, name := range []string{"v1", "v2"} {
		v := ValidatorSummary{Name: name, MissedPrecommits: missed[name]}
		if p99, ok := precommitP99[name]; ok {
			v.SignLatencyMS.Precommit = LatencyStats{Count: 10, P50: p99 / 2, P99: p99}
		}
		s.Validators = append(s.Validators, v)
	}
	return s
}

func TestCompareThresholds(t *testing.T) {
	base := cmpSummary(10, 1000, map[string]int{"v1": 1}, map[string]float64{"v1": 100, "v2": 50})
	tests := []struct {
		name   string
		b      *Summary
		spec   string
		crossd []string // Crossing.String prefixes, in order
	}{
		{"absolute above: crossed", cmpSummary(10, 1000, map[string]int{"v1": 4}, nil), "missed_precommits>+2",
			[]string{"missed_precommits[v1] 1 -> 4 (+3) crosses >+2"}},
		{"absolute above: equal is not crossed", cmpSummary(10, 1000, map[string]int{"v1": 3}, nil), "missed_precommits>+2", nil},
		{"every validator is checked", cmpSummary(10, 1000, map[string]int{"v1": 2, "v2": 1}, nil), "missed_precommits>+0",
			[]string{"missed_precommits[v1] 1 -> 2 (+1) crosses >+0", "missed_precommits[v2] 0 -> 1 (+1) crosses >+0"}},
		{"relative above: crossed", cmpSummary(10, 1250, nil, nil), "block_interval_ms.p95>+20%",
			[]string{"block_interval_ms.p95 1000 -> 1250 (+250, +25%) crosses >+20%"}},
		{"relative above: equal is not crossed", cmpSummary(10, 1200, nil, nil), "block_interval_ms.p95>+20%", nil},
		{"absolute below: crossed", cmpSummary(7, 1000, nil, nil), "heights.committed<-2",
			[]string{"heights.committed 10 -> 7 (-3) crosses <-2"}},
		{"absolute below: not crossed", cmpSummary(8, 1000, nil, nil), "heights.committed<-2", nil},
		{"relative below: crossed", cmpSummary(8, 1000, nil, nil), "heights.committed<-10%",
			[]string{"heights.committed 10 -> 8 (-2, -20%) crosses <-10%"}},
		{"an improvement does not cross an upper threshold", cmpSummary(10, 500, map[string]int{}, nil), "block_interval_ms.p95>+1%,missed_precommits>+0", nil},
		{"relative change from 0 is infinite", cmpSummary(10, 1000, map[string]int{"v1": 1, "v2": 1}, nil), "missed_precommits>+50%",
			[]string{"missed_precommits[v2] 0 -> 1 (+1, from 0) crosses >+50%"}},
		{"no samples in B: not checked", cmpSummary(10, 1000, nil, map[string]float64{"v1": 900}), "sign_latency_ms.precommit.p99>+10%",
			[]string{"sign_latency_ms.precommit.p99[v1] 100 -> 900 (+800, +800%) crosses >+10%"}},
		{"several entries", cmpSummary(5, 3000, map[string]int{"v1": 9}, nil), "heights.committed<-1, block_interval_ms.p95>+100%,missed_precommits>+5,",
			[]string{"heights.committed 10 -> 5", "block_interval_ms.p95 1000 -> 3000", "missed_precommits[v1] 1 -> 9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ths, err := ParseThresholds(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			got := Compare(base, tt.b).Check(ths)
			if len(got) != len(tt.crossd) {
				t.Fatalf("crossings %v, want %v", got, tt.crossd)
			}
			for i, c := range got {
				if !strings.HasPrefix(c.String(), tt.crossd[i]) {
					t.Errorf("crossing %d = %q, want prefix %q", i, c, tt.crossd[i])
				}
			}
		})
	}
}

func TestParseThresholdsErrors(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"missed_precommits", "no operator"},
		{"missed_precommits>2", `threshold "2" must be a signed change`},
		{"missed_precommits>", "must be a signed change"},
		{"missed_precommits>+x", `threshold "+x" is not a number`},
		{"missed_precommits>+Inf", "is not a number"},
		{"missed_precommits>+1%%", "is not a number"},
		{"missed_precommits>=+1", "operators are > and < only"},
		{">+1", "no metric before the operator"},
		{"missed_precommit>+1", `unknown metric "missed_precommit"`},
		{"sign_latency_ms.commit.p50>+1", "unknown metric"},
		{"block_interval_ms.p99>+1", "unknown metric"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			_, err := ParseThresholds("heights.committed<-1," + tt.spec)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) || !strings.Contains(msg, tt.spec) {
				t.Errorf("error %q lacks %q or the entry", msg, tt.want)
			}
			// Every error says what is allowed.
			for _, allowed := range []string{"OP is > or <", "block_interval_ms.p95", "missed_precommits", "sign_latency_ms.<proposal|prevote|precommit|all>.<p50|p99>", "+20%"} {
				if !strings.Contains(msg, allowed) {
					t.Errorf("error lacks %q:\n%s", allowed, msg)
				}
			}
		})
	}
	if ths, err := ParseThresholds(""); err != nil || len(ths) != 0 {
		t.Errorf("empty spec: %v %v", ths, err)
	}
	ths, err := ParseThresholds(" sign_latency_ms.all.p99 > +12.5% ")
	if err != nil || len(ths) != 1 || ths[0] != (Threshold{Spec: "sign_latency_ms.all.p99 > +12.5%", Metric: "sign_latency_ms.all.p99", Op: ">", Value: 12.5, Relative: true}) {
		t.Errorf("spaces: %+v %v", ths, err)
	}
}

func TestCompareTable(t *testing.T) {
	a := cmpSummary(10, 1000, map[string]int{"v1": 1}, map[string]float64{"v1": 100})
	b := cmpSummary(12, 1100, map[string]int{"v1": 1}, nil)
	b.Validators = append(b.Validators[:1], ValidatorSummary{Name: "v3"}) // v2 only in A, v3 only in B
	c := Compare(a, b)
	c.A.Dir, c.B.Dir = "runs/a", "runs/b"
	if len(c.Validators) != 1 || c.Validators[0].Name != "v1" {
		t.Fatalf("matched validators %+v", c.Validators)
	}
	if strings.Join(c.OnlyInA, ",") != "v2" || strings.Join(c.OnlyInB, ",") != "v3" {
		t.Errorf("only in A %v, only in B %v", c.OnlyInA, c.OnlyInB)
	}
	ths, _ := ParseThresholds("heights.committed>+1")
	var out strings.Builder
	if err := WriteComparison(&out, c, ths, c.Check(ths)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"A: runs/a (scenario x: PASS)",
		"heights.committed                 10    12    +2 (+20%)",
		"block_interval_ms.p95             1000  1100  +100 (+10%)",
		"v1         missed_precommits              1    1  0",
		"v1         sign_latency_ms.precommit.p99  100  -  -", // no samples in B
		"Only in A: v2", "Only in B: v3",
		"FAIL  heights.committed 10 -> 12 (+2) crosses >+1",
		"RESULT: FAIL (1 threshold(s) crossed)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
