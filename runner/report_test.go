package runner

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportWritesCIFiles rebuilds a run dir from the results fixture:
// every derived file is written, and junit.xml is well-formed.
func TestReportWritesCIFiles(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("..", "results", "testdata", "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, EventsFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Report(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{SummaryFile, HeightsFile, MissedFile, JUnitFile, SummaryMDFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(tmps) > 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
	junit, _ := os.ReadFile(filepath.Join(dir, JUnitFile))
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(junit, &doc); err != nil {
		t.Fatalf("junit.xml: %v", err)
	}
	if doc.Tests != len(s.Expectations)+1 || doc.Failures != len(s.Failed()) {
		t.Errorf("junit.xml tests=%d failures=%d; summary has %d expectations, %d failed", doc.Tests, doc.Failures, len(s.Expectations), len(s.Failed()))
	}
	missed, _ := os.ReadFile(filepath.Join(dir, MissedFile))
	if lines := strings.Count(string(missed), "\n"); lines != 1+4 {
		t.Errorf("missed.csv has %d lines, want a header and the fixture's 4 missed precommits:\n%s", lines, missed)
	}
	md, _ := os.ReadFile(filepath.Join(dir, SummaryMDFile))
	if !strings.HasPrefix(string(md), "## ❌ valnet fixture") {
		t.Errorf("summary.md starts %q", strings.SplitN(string(md), "\n", 2)[0])
	}
}
