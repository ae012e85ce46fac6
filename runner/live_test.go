package runner

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
)

// TestLiveSummaryIsTheFiles: a simulated run's report, summarized while
// the model wrote events.jsonl (liveSummary), is the report read back
// from the file: the summary and every derived file, byte for byte.
func TestLiveSummaryIsTheFiles(t *testing.T) {
	for _, name := range []string{"partition-heal", "slow-signer", "capacity-load"} {
		t.Run(name, func(t *testing.T) {
			plan, err := scenarios.ResolveWith(name, scenarios.Overrides{Set: []scenarios.Setting{{Path: "run.backend", Value: "sim"}}})
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "run")
			out, err := Run(context.Background(), plan, Options{OutDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			files := []string{SummaryFile, HeightsFile, MissedFile, JUnitFile, SummaryMDFile, ReportFile}
			live := map[string][]byte{}
			for _, f := range files {
				if live[f], err = os.ReadFile(filepath.Join(dir, f)); err != nil {
					t.Fatal(err)
				}
			}
			rebuilt, err := Report(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rebuilt, out.Summary) {
				t.Error("the summary read back from events.jsonl differs from the live one")
			}
			for _, f := range files {
				data, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				if string(data) != string(live[f]) {
					t.Errorf("%s read back from events.jsonl differs from the live one", f)
				}
			}
		})
	}
}

// TestLiveSummaryStandsInOnlyForTheWholeFile: the live summarizer is the
// file's when it read every byte of it; when the file holds more than it
// was handed (or less), the report reads the file.
func TestLiveSummaryStandsInOnlyForTheWholeFile(t *testing.T) {
	plan, err := scenarios.ResolveWith("slow-signer", scenarios.Overrides{Set: []scenarios.Setting{{Path: "run.backend", Value: "sim"}}})
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "run")
	if _, err := Run(context.Background(), plan, Options{OutDir: src}); err != nil {
		t.Fatal(err)
	}
	events, err := eventlog.ReadFile(filepath.Join(src, EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		after func(path string) // once the writer is closed
		used  bool
	}{
		{"whole", func(string) {}, true},
		{"longer", func(path string) {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString("\n"); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"shorter", func(path string) {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, fi.Size()-1); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), EventsFile)
			w, err := eventlog.NewWriter(path)
			if err != nil {
				t.Fatal(err)
			}
			l := startLiveSummary(w)
			for _, e := range events {
				w.Emit(e)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			tc.after(path)
			z := l.result(path)
			if (z != nil) != tc.used {
				t.Fatalf("live summarizer used: %v, want %v", z != nil, tc.used)
			}
			if z == nil {
				return
			}
			file, err := results.SummarizeFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(z.Summary(), file.Summary()) {
				t.Error("the live summary differs from the file's")
			}
		})
	}
}

// TestLiveSummaryOfAnInterruptedModel: Ctrl-C during a model run ends
// its live summary with the run: the run is reported as interrupted, and
// its report is the file's.
func TestLiveSummaryOfAnInterruptedModel(t *testing.T) {
	plan, err := scenarios.ResolveWith("sim-global-175", scenarios.Overrides{Set: []scenarios.Setting{{Path: "run.heights", Value: "100000"}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the model sees it at its first look, some thousand steps in
	dir := filepath.Join(t.TempDir(), "run")
	out, err := Run(ctx, plan, Options{OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if out.Summary.StopReason != eventlog.StopInterrupted {
		t.Fatalf("stop reason %q, want %q", out.Summary.StopReason, eventlog.StopInterrupted)
	}
	rebuilt, err := Report(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rebuilt, out.Summary) {
		t.Error("the interrupted run's summary read back from events.jsonl differs from the live one")
	}
}
