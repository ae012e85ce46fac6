package runner

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/valnet/valnet/internal/atomicfile"
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

// Report derives summary.json, heights.csv, missed.csv, junit.xml,
// summary.md and report.html of a run directory from its events.jsonl
// alone, and returns the summary. events.jsonl is read as a stream (see
// results.SummarizeFile): memory stays flat in the number of heights.
func Report(dir string) (*results.Summary, error) { return reportFrom(dir, nil) }

// reportFrom is Report with the summarizer of the run's events.jsonl if
// it is at hand (a live summary, liveSummary), else nil: it reads the
// file.
func reportFrom(dir string, z *results.Summarizer) (*results.Summary, error) {
	path := filepath.Join(dir, EventsFile)
	if z == nil {
		var err error
		if z, err = results.SummarizeFile(path); err != nil {
			return nil, err
		}
	}
	if !z.HasRunStart() {
		// A summary of nothing would show a run that never was.
		return nil, fmt.Errorf("nothing to report: %s has no run_start event (%d events); the run never started", path, z.Events())
	}
	s := z.Summary()
	return s, writeReportFiles(dir, z, s)
}

// writeReportFiles writes the derived files of a run from its summarizer
// and summary, each one whole or not at all (a CI step or a browser
// reading one never sees half of it).
func writeReportFiles(dir string, z *results.Summarizer, s *results.Summary) error {
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{SummaryFile, func(w io.Writer) error { return results.WriteSummaryJSON(w, s) }},
		{HeightsFile, z.WriteHeightsCSV},
		{MissedFile, func(w io.Writer) error { return results.WriteMissedCSV(w, s) }},
		{JUnitFile, func(w io.Writer) error { return results.WriteJUnit(w, s) }},
		{SummaryMDFile, func(w io.Writer) error { return results.WriteMarkdown(w, s) }},
		{ReportFile, z.WriteHTMLReport},
	}
	for _, f := range files {
		if err := atomicfile.WriteWith(filepath.Join(dir, f.name), 0o644, f.write); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return nil
}
