package sweep

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/valnet/valnet/scenarios"
)

// withStdin gives the test data on standard input.
func withStdin(t *testing.T, data []byte) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	w.Close()
	old := os.Stdin
	os.Stdin = r
	t.Cleanup(func() { os.Stdin = old; r.Close() })
}

// A scenario from standard input is read once: every point of a sweep
// and both ends of a threshold resolve from the same bytes.
func TestStdinScenarioReadOnce(t *testing.T) {
	data, err := os.ReadFile("testdata/slow4.yaml")
	if err != nil {
		t.Fatal(err)
	}
	withStdin(t, data)
	sw, err := Prepare(Config{Source: scenarios.Stdin, Repeat: 1,
		Axes: []Axis{{Path: "validators[slow].signer.latency", Values: []string{"10ms", "20ms", "30ms"}}}})
	if err != nil {
		t.Fatalf("sweep of stdin: %v", err)
	}
	if len(sw.Points) != 3 {
		t.Errorf("%d points, want 3", len(sw.Points))
	}

	withStdin(t, data)
	sp := slow4Spec()
	sp.Scenario = scenarios.Stdin
	if _, err := sp.Prepare(context.Background(), noRuns{t}, io.Discard); err != nil {
		t.Fatalf("threshold of stdin: %v", err)
	}
}

// A scenario file edited during a search does not reach its probes: they
// resolve from the text read (and stamped) at Prepare.
func TestThresholdProbesUseTextReadAtPrepare(t *testing.T) {
	data, err := os.ReadFile("testdata/slow4.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sp := slow4Spec()
	sp.Scenario = file
	sp.OutDir = t.TempDir()
	runs := &planRecorder{}
	th, err := sp.Prepare(context.Background(), runs, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("run: {heights: nope}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := th.RunPoint(context.Background(), sp.Key, "10ms", 1, filepath.Join(sp.OutDir, "p")); err != nil {
		t.Fatalf("probe after the file changed: %v", err)
	}
	if len(runs.texts) != 1 || string(runs.texts[0]) == "" {
		t.Fatalf("runs %d", len(runs.texts))
	}
}

// planRecorder keeps the text of each plan it is given to run.
type planRecorder struct{ texts [][]byte }

func (p *planRecorder) Run(_ context.Context, plan *scenarios.Plan, seed int64, dir string) (Result, error) {
	p.texts = append(p.texts, plan.Text)
	return Result{Seed: seed, Dir: dir}, nil
}
