package runner

import (
	"bytes"
	"io"
	"os"
	"path/filepath"

	"github.com/valnet/valnet/results"
)

// Derived files of a run directory, written by Report next to
// SummaryFile and HeightsFile.
const (
	MissedFile    = "missed.csv"  // one row per missed precommit, with its cause
	JUnitFile     = "junit.xml"   // expectations as JUnit test cases, for CI
	SummaryMDFile = "summary.md"  // Markdown summary for a CI step summary
	ReportFile    = "report.html" // self-contained HTML report with charts
)

// writeCIFiles writes missed.csv, junit.xml, summary.md and report.html of a run from
// its events and their summary, each one whole or not at all.
func writeCIFiles(dir string, events []results.Event, s *results.Summary) error {
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{MissedFile, func(w io.Writer) error { return results.WriteMissedCSV(w, events) }},
		{JUnitFile, func(w io.Writer) error { return results.WriteJUnit(w, s) }},
		{SummaryMDFile, func(w io.Writer) error { return results.WriteMarkdown(w, s) }},
		{ReportFile, func(w io.Writer) error { return results.WriteHTMLReport(w, events) }},
	}
	for _, f := range files {
		var buf bytes.Buffer
		if err := f.write(&buf); err != nil {
			return err
		}
		if err := writeFileAtomic(filepath.Join(dir, f.name), buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// writeFileAtomic writes a temporary file and renames it over path, so a
// CI step reading the file never sees half of it.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
