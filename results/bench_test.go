package results

import (
	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/results/eventlog"
	"path/filepath"
	"testing"
)

// BenchmarkSummarize: 25 validators, 1000 heights (~280k events), the scale
// of a long soak run.
func BenchmarkSummarize(b *testing.B) {
	evs := gen(benchConfig())
	for b.Loop() {
		Summarize(evs)
	}
	b.ReportMetric(float64(len(evs)), "events")
}

func BenchmarkWriterEmit(b *testing.B) {
	w, err := eventlog.NewWriter(filepath.Join(b.TempDir(), "events.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	ev := eventlog.Event{Time: t0, Kind: eventlog.KindSign, Node: "v12", Validator: "v12", Phase: phase.Precommit,
		Height: 1234, Round: 0, BlockID: "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08", LatencyMS: 0.214}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.Emit(ev)
		}
	})
	b.StopTimer()
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}
