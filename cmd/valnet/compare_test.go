package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/results/eventlog"
)

// writeRun writes a run dir whose events commit 6 heights, one block per
// interval ms, with v1 absent from the commits of absentHeights.
func writeRun(t *testing.T, interval time.Duration, absentHeights ...int64) string {
	t.Helper()
	return writeRunNamed(t, "cmp", interval, absentHeights...)
}

func writeRunNamed(t *testing.T, scenario string, interval time.Duration, absentHeights ...int64) string {
	t.Helper()
	dir := t.TempDir()
	w, err := eventlog.NewWriter(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	w.Emit(eventlog.Event{Time: t0, Kind: eventlog.KindRunStart, Scenario: scenario, Heights: 5,
		Validators: []eventlog.ValidatorInfo{{Name: "v1", Power: 10}, {Name: "v2", Power: 10}}})
	for h := int64(1); h <= 6; h++ {
		ev := eventlog.Event{Time: t0.Add(time.Duration(h) * interval), Kind: eventlog.KindBlock, Height: h}
		for _, a := range absentHeights {
			if a == h-1 {
				ev.LastCommitAbsent = []string{"v1"}
			}
		}
		w.Emit(ev)
	}
	w.Emit(eventlog.Event{Time: t0.Add(7 * interval), Kind: eventlog.KindRunEnd, StopReason: eventlog.StopHeights})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCompareExitCodes(t *testing.T) {
	base := writeRun(t, time.Second, 1)
	worse := writeRun(t, 1300*time.Millisecond, 1, 2, 3, 4)
	noEvents := t.TempDir()
	other := writeRunNamed(t, "other", time.Second, 1)
	tests := []struct {
		name       string
		args       []string
		code       int
		stdoutHas  []string
		stderrLike string
	}{
		{"no thresholds", []string{"compare", base, worse}, 0,
			[]string{"heights_committed", "block_interval_p95_ms       1000  1300  +300 (+30%)", "v1         missed_precommits"}, ""},
		{"threshold crossed", []string{"compare", base, worse, "--fail-on", "missed_precommits>+2,block_interval_p95_ms>+20%"}, 1,
			[]string{"FAIL  missed_precommits(v1) 1 -> 4 (+3) crosses >+2", "FAIL  block_interval_p95_ms 1000 -> 1300 (+300, +30%) crosses >+20%",
				"RESULT: FAIL (2 threshold(s) crossed)"}, "2 threshold\\(s\\) crossed"},
		{"threshold not crossed", []string{"compare", base, worse, "--fail-on", "missed_precommits>+3,block_interval_p95_ms>+30%"}, 0,
			[]string{"RESULT: PASS (no threshold crossed)"}, ""},
		{"same run", []string{"compare", base, base, "--fail-on", "missed_precommits>+0"}, 0, []string{"RESULT: PASS"}, ""},
		{"an improvement", []string{"compare", worse, base, "--fail-on", "missed_precommits>+0,heights_committed<-1"}, 0, nil, ""},
		{"bad spec", []string{"compare", base, worse, "--fail-on", "missed>2"}, 2, nil,
			`(?s)unknown metric "missed".*OP is > or <.*missed_precommits`},
		{"bad threshold", []string{"compare", base, worse, "--fail-on", "missed_precommits>2"}, 2, nil, "must be a signed change"},
		{"missing run dir", []string{"compare", base, filepath.Join(base, "nope")}, 2, nil, "run directory .*nope"},
		{"dir without events.jsonl", []string{"compare", noEvents, base}, 2, nil, "events.jsonl"},
		{"one argument", []string{"compare", base}, 2, nil, "accepts 2 arg"},
		{"unrelated runs refuse --fail-on", []string{"compare", base, other, "--fail-on", "missed_precommits>+0"}, 2, nil,
			"--fail-on on unrelated runs: they differ in scenario: A ran cmp, B ran other; .*--allow-different"},
		{"...unless allowed", []string{"compare", base, other, "--allow-different", "--fail-on", "missed_precommits>+0"}, 0,
			[]string{"warning: the runs differ in scenario: A ran cmp, B ran other", "RESULT: PASS"}, ""},
		{"old names say the new", []string{"compare", base, worse, "--fail-on", "heights.committed<-1"}, 2, nil, "heights.committed is now heights_committed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			for _, s := range tc.stdoutHas {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			if tc.stderrLike != "" && !regexp.MustCompile(tc.stderrLike).MatchString(stderr) {
				t.Errorf("stderr does not match %q:\n%s", tc.stderrLike, stderr)
			}
		})
	}
}

func TestCompareJSONIgnoresSummaryJSON(t *testing.T) {
	base := writeRun(t, time.Second)
	worse := writeRun(t, time.Second, 2, 3)
	// A stale summary.json must not be read.
	if err := os.WriteFile(filepath.Join(worse, "summary.json"), []byte(`{"validators":[{"name":"v1","missed_precommits":99}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "compare", base, worse, "--json", "--fail-on", "consecutive_missed_max>+1")
	if code != 1 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var doc struct {
		A          struct{ Dir string }
		Validators []struct {
			Name    string
			Metrics []struct {
				Metric string
				A, B   *float64
			}
		}
		Crossings []struct {
			Validator string
			A, B      float64
		}
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if doc.A.Dir != base || len(doc.Crossings) != 1 || doc.Crossings[0].Validator != "v1" || doc.Crossings[0].B != 2 {
		t.Errorf("doc %+v", doc)
	}
	for _, m := range doc.Validators[0].Metrics {
		if m.Metric == "missed_precommits" && (m.B == nil || *m.B != 2) {
			t.Errorf("missed_precommits B = %v, want 2 from events", m.B)
		}
	}
}
