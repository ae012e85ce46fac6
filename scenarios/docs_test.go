package scenarios

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/network"
)

const (
	docsPath      = "../docs/scenario.md"
	metricsStart  = "<!-- metrics:start -->\n"
	metricsEnd    = "<!-- metrics:end -->"
	profilesStart = "<!-- profiles:start -->\n"
	profilesEnd   = "<!-- profiles:end -->"
	regionsStart  = "<!-- regions:start -->\n"
	regionsEnd    = "<!-- regions:end -->"
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
		switch {
		case m.Load:
			scope += ", with load"
		case m.Device:
			scope += " on a device"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", m.Name, scope, phase, m.Doc)
	}
	return b.String()
}

// profilesList renders the built-in profile names as the wrapped list in
// docs/scenario.md.
func profilesList() string {
	var b strings.Builder
	line := 0
	for i, name := range builtinProfiles {
		word := "`" + name + "`"
		if i < len(builtinProfiles)-1 {
			word += ","
		}
		if line > 0 && line+1+len(word) > 76 {
			b.WriteString("\n")
			line = 0
		}
		if line > 0 {
			b.WriteString(" ")
			line++
		}
		b.WriteString(word)
		line += len(word)
	}
	b.WriteString("\n")
	return b.String()
}

// regionsTable renders the zone regions and their AWS codes as the table
// in docs/scenario.md.
func regionsTable() string {
	var b strings.Builder
	b.WriteString("| region | AWS code |\n| --- | --- |\n")
	for _, r := range network.Regions() {
		var codes []string
		for _, c := range regionCodes {
			if canon, _ := network.CanonicalRegion(c); canon == r {
				codes = append(codes, "`"+c+"`")
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", r, strings.Join(codes, ", "))
	}
	return b.String()
}

// generatedSection checks (and with -update rewrites) the text between two
// markers of docs/scenario.md; it returns the document.
func generatedSection(t *testing.T, what, start, end, body string) string {
	t.Helper()
	data, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	before, rest, ok1 := strings.Cut(doc, start)
	_, after, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the %q ... %q markers", docsPath, strings.TrimSpace(start), end)
	}
	want := before + start + body + end + after
	if *update && want != doc {
		if err := os.WriteFile(docsPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		doc = want
	}
	if doc != want {
		t.Errorf("%s: %s is out of date; run go test ./scenarios -update", docsPath, what)
	}
	return doc
}

// TestDocsMetricsTable keeps the metrics table in docs/scenario.md equal to
// Metrics; -update rewrites it between the markers.
func TestDocsMetricsTable(t *testing.T) {
	doc := generatedSection(t, "metrics table", metricsStart, metricsEnd, metricsTable())
	for _, m := range Metrics {
		if !strings.Contains(doc, "`"+m.Name+"`") {
			t.Errorf("%s does not mention metric %s", docsPath, m.Name)
		}
	}
}

// TestDocsProfilesList keeps the list of built-in profiles in
// docs/scenario.md equal to builtinProfiles.
func TestDocsProfilesList(t *testing.T) {
	generatedSection(t, "built-in profile list", profilesStart, profilesEnd, profilesList())
}

// TestDocsRegionsTable keeps the zone regions in docs/scenario.md equal
// to the network package's.
func TestDocsRegionsTable(t *testing.T) {
	generatedSection(t, "zone regions table", regionsStart, regionsEnd, regionsTable())
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
	for _, list := range [][]string{backends, plannedBackends, signerTypes, plannedSignerTypes, latency.Dists(), phase.All()} {
		values = append(values, list...)
	}
	for _, v := range values {
		if !strings.Contains(doc, v) {
			t.Errorf("%s does not mention %q", docsPath, v)
		}
	}
	// Short, common words: look for them as code.
	for _, list := range [][]string{keyTypes, vias, decryptModes, faultActionNames(), builtinProfiles,
		ledgerDevices, provisions, topologyKinds, bandwidthUnitNames, network.Regions(), regionCodes} {
		for _, v := range list {
			if !strings.Contains(doc, "`"+v+"`") {
				t.Errorf("%s does not mention `%s`", docsPath, v)
			}
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
