package sweep

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/valnet/valnet/internal/atomicfile"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/runner"
)

// TestLoadFinishedReadsWhatTheRunSaw checks that a result read back from a
// run directory's summary.json (a resumed sweep) has exactly the metric
// values of the summary the run derived from its events.
func TestLoadFinishedReadsWhatTheRunSaw(t *testing.T) {
	evs, err := eventlog.ReadFile("../results/testdata/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	s := results.Summarize(evs)
	dir := t.TempDir()
	write := func(s *results.Summary) {
		t.Helper()
		if err := atomicfile.WriteWith(filepath.Join(dir, runner.SummaryFile), 0o644, func(w io.Writer) error { return results.WriteSummaryJSON(w, s) }); err != nil {
			t.Fatal(err)
		}
	}
	write(s)
	got, ok, err := LoadFinished(dir)
	if err != nil || ok != (s.StopReason == eventlog.StopHeights || s.StopReason == eventlog.StopMaxDuration) {
		t.Fatalf("LoadFinished: ok %v, err %v (stop reason %q)", ok, err, s.StopReason)
	}
	if want := results.MetricValues(s); !reflect.DeepEqual(got.Metrics, want) {
		t.Errorf("metrics read back differ:\n got %v\nwant %v", got.Metrics, want)
	}
	if got.Seed != s.Seed || got.ExpectationsOK != s.OK {
		t.Errorf("seed %d ok %v, want %d %v", got.Seed, got.ExpectationsOK, s.Seed, s.OK)
	}

	if got.HostOverloaded {
		t.Error("host overloaded read back, the summary says not")
	}
	s.Host = &results.HostSummary{Overloaded: true}
	write(s)
	if got, _, _ := LoadFinished(dir); !got.HostOverloaded {
		t.Error("an overloaded host is not read back")
	}

	s.StopReason = eventlog.StopInterrupted
	write(s)
	if _, ok, err := LoadFinished(dir); ok || err != nil {
		t.Errorf("an interrupted run counts as finished (ok %v, err %v)", ok, err)
	}
	if _, ok, err := LoadFinished(filepath.Join(dir, "none")); ok || err != nil {
		t.Errorf("a missing run: ok %v, err %v", ok, err)
	}
	if err := os.WriteFile(filepath.Join(dir, runner.SummaryFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadFinished(dir); err == nil {
		t.Error("a broken summary.json reads without error")
	}
}
