package sweep

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkSweepBookkeeping measures what a sweep adds around its runs:
// resolving every point, reading back finished runs, rewriting sweep.json
// after each run and writing sweep.csv/md/html at the end, for 20 points
// with a fake run (which writes a summary.json). Per point, divide by 20.
func BenchmarkSweepBookkeeping(b *testing.B) {
	src := filepath.Join(b.TempDir(), "s.yaml")
	writeFile(b, src, testScenario)
	values := make([]string, 20)
	for i := range values {
		values[i] = fmt.Sprintf("%dms", 50*i)
	}
	for i := 0; i < b.N; i++ {
		cfg := Config{Source: src, OutDir: filepath.Join(b.TempDir(), "sw"), Repeat: 1,
			Axes: []Axis{{Path: "validators[hsm].signer.latency", Values: values}}}
		s, err := Prepare(cfg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Run(context.Background(), &fakeRunner{}, io.Discard, time.Now); err != nil {
			b.Fatal(err)
		}
	}
}
