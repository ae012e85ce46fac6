package compare

import (
	"strings"
	"testing"

	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
)

// summary is a run's summary with the values compare reads.
func summary(committed int, p95 float64, missed map[string]int, precommitP99 map[string]float64, names ...string) *results.Summary {
	s := &results.Summary{Scenario: "x", Seed: 1, StopReason: eventlog.StopHeights, OK: true}
	s.Heights.Committed = committed
	s.BlockIntervalMS = results.IntervalStats{Count: 5, P50: p95 / 2, P95: p95, Max: p95}
	if len(names) == 0 {
		names = []string{"v1", "v2"}
	}
	for _, name := range names {
		v := results.ValidatorSummary{Name: name, MissedPrecommits: missed[name], PrecommitsCounted: 10}
		if p99, ok := precommitP99[name]; ok {
			v.SignLatencyMS.Precommit = results.LatencyStats{Count: 10, P50: p99 / 2, P99: p99}
		}
		s.Validators = append(s.Validators, v)
	}
	return s
}

func TestCheck(t *testing.T) {
	base := summary(10, 1000, map[string]int{"v1": 1}, map[string]float64{"v1": 100, "v2": 50})
	tests := []struct {
		name    string
		b       *results.Summary
		spec    string
		crossed []string // Crossing.String prefixes, in order
	}{
		{"absolute above: crossed", summary(10, 1000, map[string]int{"v1": 4}, nil), "missed_precommits>+2",
			[]string{"missed_precommits(v1) 1 -> 4 (+3) crosses >+2"}},
		{"absolute above: equal is not crossed", summary(10, 1000, map[string]int{"v1": 3}, nil), "missed_precommits>+2", nil},
		{"every validator is checked", summary(10, 1000, map[string]int{"v1": 2, "v2": 1}, nil), "missed_precommits>+0",
			[]string{"missed_precommits(v1) 1 -> 2 (+1) crosses >+0", "missed_precommits(v2) 0 -> 1 (+1) crosses >+0"}},
		{"one validator", summary(10, 1000, map[string]int{"v1": 2, "v2": 1}, nil), "missed_precommits(v2)>+0",
			[]string{"missed_precommits(v2) 0 -> 1 (+1) crosses >+0"}},
		{"a rate", summary(10, 1000, map[string]int{"v1": 4}, nil), "missed_precommits_rate(v1)>+0.2",
			[]string{"missed_precommits_rate(v1) 0.1 -> 0.4 (+0.3) crosses >+0.2"}},
		{"relative above: crossed", summary(10, 1250, nil, nil), "block_interval_p95_ms>+20%",
			[]string{"block_interval_p95_ms 1000 -> 1250 (+250, +25%) crosses >+20%"}},
		{"relative above: equal is not crossed", summary(10, 1200, nil, nil), "block_interval_p95_ms>+20%", nil},
		{"absolute below: crossed", summary(7, 1000, nil, nil), "heights_committed<-2",
			[]string{"heights_committed 10 -> 7 (-3) crosses <-2"}},
		{"relative below: crossed", summary(8, 1000, nil, nil), "heights_committed<-10%",
			[]string{"heights_committed 10 -> 8 (-2, -20%) crosses <-10%"}},
		{"an improvement does not cross an upper threshold", summary(10, 500, map[string]int{}, nil), "block_interval_p95_ms>+1%,missed_precommits>+0", nil},
		{"relative change from 0 is infinite", summary(10, 1000, map[string]int{"v1": 1, "v2": 1}, nil), "missed_precommits>+50%",
			[]string{"missed_precommits(v2) 0 -> 1 (+1, from 0) crosses >+50%"}},
		{"a phase of every validator; no samples in B is not checked", summary(10, 1000, nil, map[string]float64{"v1": 900}), "sign_latency_p99_ms(*,precommit)>+10%",
			[]string{"sign_latency_p99_ms(v1,precommit) 100 -> 900 (+800, +800%) crosses >+10%"}},
		{"a validator in one run only fails an entry over every validator", summary(10, 1000, map[string]int{"v1": 1}, nil, "v1"), "missed_precommits>+2",
			[]string{"missed_precommits(v2) cannot be compared: v2 is in run A only"}},
		{"...and one that names it", summary(10, 1000, map[string]int{"v1": 1}, nil, "v1"), "missed_precommits(v2)>+2",
			[]string{"missed_precommits(v2) cannot be compared: v2 is in run A only"}},
		{"a validator in neither run", summary(10, 1000, nil, nil), "missed_precommits(slw)>+2",
			[]string{"missed_precommits(slw) cannot be compared: no validator slw in either run"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ths, err := ParseThresholds(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			got := Compare(base, tt.b, Side{}, Side{}).Check(ths)
			if len(got) != len(tt.crossed) {
				t.Fatalf("crossings %v, want %v", got, tt.crossed)
			}
			for i, c := range got {
				if !strings.HasPrefix(c.String(), tt.crossed[i]) {
					t.Errorf("crossing %d = %q, want prefix %q", i, c, tt.crossed[i])
				}
			}
		})
	}
}

func TestParseThresholdsErrors(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"missed_precommits", "no operator"},
		{"missed_precommits>2", `threshold "2" must be a signed change`},
		{"missed_precommits>+x", `threshold "+x" is not a number`},
		{"missed_precommits>=+1", "operators are > and < only"},
		{">+1", "no metric before the operator"},
		{"missed_precommit>+1", `unknown metric "missed_precommit"; did you mean "missed_precommits"?`},
		{"block_interval_ms.p95>+1", "metric block_interval_ms.p95 is now block_interval_p95_ms"},
		{"sign_latency_ms.precommit.p99>+1", "sign_latency_p99_ms(*,precommit)"},
		{"heights_committed(v1)>+1", "chain metric: it takes no validator"},
		{"missed_precommits(v1,precommit)>+1", "has no phases"},
		{"sign_latency_p99_ms(v1,commit)>+1", `unknown phase "commit"`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			_, err := ParseThresholds("heights_committed<-1," + tt.spec)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) || !strings.Contains(msg, tt.spec) {
				t.Errorf("error %q lacks %q or the entry", msg, tt.want)
			}
			for _, allowed := range []string{"OP is > or <", "block_interval_p95_ms", "missed_precommits_rate", "name(*,PHASE)", "+20%"} {
				if !strings.Contains(msg, allowed) {
					t.Errorf("error lacks %q:\n%s", allowed, msg)
				}
			}
		})
	}
	// Every bad entry at once.
	_, err := ParseThresholds("x>+1,y>+1")
	if err == nil || !strings.Contains(err.Error(), `"x>+1"`) || !strings.Contains(err.Error(), `"y>+1"`) {
		t.Errorf("two bad entries: %v", err)
	}
	ths, err := ParseThresholds(" sign_latency_p99_ms(v1, precommit) > +12.5% ,heights_committed<-1")
	if err != nil || len(ths) != 2 || ths[0].Ref.Validator != "v1" || ths[0].Ref.Phase != "precommit" || ths[0].Value != 12.5 || !ths[0].Relative {
		t.Errorf("a reference with a comma: %+v %v", ths, err)
	}
}

// Runs of another scenario or seed are unrelated, and say so.
func TestDifferent(t *testing.T) {
	a, b := summary(10, 1000, nil, nil), summary(10, 1000, nil, nil)
	if c := Compare(a, b, Side{ScenarioSHA256: "aa"}, Side{ScenarioSHA256: "aa"}); len(c.Different) != 0 {
		t.Errorf("same runs differ: %v", c.Different)
	}
	b.Scenario, b.Seed = "capacity-shared-hsm", 7
	c := Compare(a, b, Side{}, Side{})
	if len(c.Different) != 2 || !strings.Contains(c.Different[0], "A ran x, B ran capacity-shared-hsm") || !strings.Contains(c.Different[1], "seed: A 1, B 7") {
		t.Errorf("different: %v", c.Different)
	}
	b.Scenario, b.Seed = "x", 1
	c = Compare(a, b, Side{ScenarioSHA256: "aaaaaaaaaaaaaaaa"}, Side{ScenarioSHA256: "bbbbbbbbbbbbbbbb"})
	if len(c.Different) != 1 || !strings.Contains(c.Different[0], "its file differs") {
		t.Errorf("another scenario.yaml: %v", c.Different)
	}
}

func TestWrite(t *testing.T) {
	a := summary(10, 1000, map[string]int{"v1": 1}, map[string]float64{"v1": 100})
	b := summary(12, 1100, map[string]int{"v1": 1}, nil, "v1", "v3") // v2 only in A, v3 only in B
	b.Unavailable = []string{"late_prevotes"}
	c := Compare(a, b, Side{Dir: "runs/a"}, Side{Dir: "runs/b"})
	ths, _ := ParseThresholds("heights_committed>+1,late_prevotes>+0")
	var out strings.Builder
	if err := Write(&out, c, ths, c.Check(ths)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"A: runs/a (scenario x, seed 1: PASS)",
		"B: n/a (not recorded): late_prevotes",
		"heights_committed           10    12    +2 (+20%)",
		"block_interval_p95_ms       1000  1100  +100 (+10%)",
		"v1         missed_precommits              1    1    0",
		"v1         missed_precommits_rate         0.1  0.1  0",
		"v1         sign_latency_p99_ms precommit  100  -    -", // no samples in B
		"v1         late_prevotes                  0    -    -", // not recorded in B: never checked
		"Only in A: v2", "Only in B: v3",
		"FAIL  heights_committed 10 -> 12 (+2) crosses >+1",
		"FAIL  late_prevotes(v2) cannot be compared: v2 is in run A only",
		"FAIL  late_prevotes(v3) cannot be compared: v3 is in run B only",
		"RESULT: FAIL (3 threshold(s) crossed)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
