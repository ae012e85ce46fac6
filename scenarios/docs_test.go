package scenarios

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

const (
	docsPath     = "../docs/scenario.md"
	metricsStart = "<!-- metrics:start -->\n"
	metricsEnd   = "<!-- metrics:end -->"
)

// metricsTable renders Metrics as the table in docs/scenario.md.
func metricsTable() string {
	var b strings.Builder
	b.WriteString("| metric | scope | phase | meaning |\n| --- | --- | --- | --- |\n")
	for _, m := range Metrics {
		scope, phase := "chain", ""
		if m.PerValidator {
			scope = "validator"
		}
		if m.Phased {
			phase = "optional"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", m.Name, scope, phase, m.Doc)
	}
	return b.String()
}

// TestDocsMetricsTable keeps the metrics table in docs/scenario.md equal to
// Metrics; -update rewrites it between the markers.
func TestDocsMetricsTable(t *testing.T) {
	data, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	before, rest, ok1 := strings.Cut(doc, metricsStart)
	_, after, ok2 := strings.Cut(rest, metricsEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the %q ... %q markers", docsPath, strings.TrimSpace(metricsStart), metricsEnd)
	}
	want := before + metricsStart + metricsTable() + metricsEnd + after
	if *update && want != doc {
		if err := os.WriteFile(docsPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		doc = want
	}
	if doc != want {
		t.Errorf("%s: metrics table is out of date; run go test ./scenarios -update", docsPath)
	}
	for _, m := range Metrics {
		if !strings.Contains(doc, "`"+m.Name+"`") {
			t.Errorf("%s does not mention metric %s", docsPath, m.Name)
		}
	}
}

// TestDocsMentionEveryKey checks the reference names every key and value
// the parser accepts.
func TestDocsMentionEveryKey(t *testing.T) {
	data, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for level, keys := range keyLevels() {
		for _, k := range keys {
			if !strings.Contains(doc, "`"+k+"`") {
				t.Errorf("%s does not document key %s", docsPath, joinKey(level, k))
			}
		}
	}
	var values []string
	for _, list := range [][]string{backends, plannedBackends, signerTypes, plannedSignerTypes, dists, AllPhases} {
		values = append(values, list...)
	}
	for _, v := range values {
		if !strings.Contains(doc, v) {
			t.Errorf("%s does not mention %q", docsPath, v)
		}
	}
}

// TestDocsExampleParses keeps the full example in docs/scenario.md valid.
func TestDocsExampleParses(t *testing.T) {
	data, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "## Full example\n\n```yaml\n")
	example, _, ok2 := strings.Cut(rest, "```\n")
	if !ok || !ok2 {
		t.Fatalf("%s: no ```yaml block under \"## Full example\"", docsPath)
	}
	if _, err := Parse("docs example", []byte(example)); err != nil {
		t.Errorf("the full example in %s does not parse:\n%v", docsPath, err)
	}
}
