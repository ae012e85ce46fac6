package results

import (
	"bytes"
	"github.com/valnet/valnet/results/eventlog"
	"io"
	"runtime"
	"testing"
	"time"
)

// streamConfig scripts a long run in little memory: 4 validators, every
// vote gossiped to every node, the script of 50 heights repeated (a round
// change after a failed proposal signature, a precommit signed after the
// decision, one lost on the way, a nil precommit, a FilePV re-sign).
func streamConfig(heights int64) genConfig {
	return genConfig{
		validators:  4,
		heights:     heights,
		start:       time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
		every:       50,
		commitRound: map[int64]int32{50: 1},
		signerFails: map[int64]bool{50: true},
		absent:      map[int64][]int{7: {2}, 23: {1}},
		lateSign:    map[int64]int{7: 2},
		nilVotes:    map[int64][]int{13: {3}},
		resign:      map[int64]int{31: 0},
		gossip:      true,
	}
}

// liveHeap is the heap in use by live objects, after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestSummarizerMemoryFlat feeds 20,000 heights through a Summarizer, an
// event at a time (the stream is never a slice): what it holds after
// 20,000 heights is at most twice what it held after 2,000. What grows is
// the per-height rows (heights.csv) and nothing else.
func TestSummarizerMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("2 million events")
	}
	const short, long = 2_000, 20_000
	z := NewSummarizer()
	var atShort, atLong uint64
	var events int
	genEach(streamConfig(long), func(ev *eventlog.Event) {
		z.Add(ev)
		events++
		if ev.Kind == eventlog.KindBlock {
			switch ev.Height {
			case short:
				atShort = liveHeap()
			case long:
				atLong = liveHeap()
			}
		}
	})
	s := z.Summary()
	if z.Retry() != nil {
		t.Fatalf("one pass should do: %s", z.w.why)
	}
	if s.Heights.Committed != long {
		t.Fatalf("committed %d heights, want %d", s.Heights.Committed, long)
	}
	perHeight := float64(atLong-atShort) / (long - short)
	t.Logf("%d events; live heap %d B after %d heights, %d B after %d: %.0f B per height", events, atShort, short, atLong, long, perHeight)
	if atLong > 2*atShort {
		t.Errorf("live heap %d B after %d heights is more than twice the %d B after %d", atLong, long, atShort, short)
	}
	runtime.KeepAlive(z)
}

// TestSummarizerOnePassAsWhole: the summary a Summarizer settles height
// by height is the one it gives keeping every height to the end.
func TestSummarizerOnePassAsWhole(t *testing.T) {
	evs := gen(streamConfig(400))
	whole := defaultPlan()
	whole.keepAll = true
	for name, p := range map[string]settlePlan{"default": defaultPlan(), "eager": {horizon: 1, lagMax: 0}} {
		t.Run(name, func(t *testing.T) {
			z, all := newSummarizer(p), newSummarizer(whole)
			for i := range evs {
				z.Add(&evs[i])
				all.Add(&evs[i])
			}
			if z.Retry() != nil {
				t.Fatalf("asks for another pass: %s", z.w.why)
			}
			if len(z.x.heights) > 0 || z.c.rows[0].quorum.n == 0 {
				t.Fatalf("heights left unjudged (%d), or not judged (quorum %+v)", len(z.x.heights), z.c.rows[0].quorum)
			}
			got, want := reportsOf(t, z), reportsOf(t, all)
			for name := range want {
				if got[name] != want[name] {
					t.Errorf("%s differs from the whole stream's", name)
				}
			}
		})
	}
}

// reportsOf are the reports a Summarizer writes of its stream.
func reportsOf(t *testing.T, z *Summarizer) map[string]string {
	t.Helper()
	s := z.Summary()
	out := map[string]string{}
	for name, write := range map[string]func(io.Writer) error{
		"summary.json": func(w io.Writer) error { return WriteSummaryJSON(w, s) },
		"heights.csv":  z.WriteHeightsCSV,
		"missed.csv":   func(w io.Writer) error { return WriteMissedCSV(w, s) },
		"report.html":  z.WriteHTMLReport,
	} {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = buf.String()
	}
	return out
}

// BenchmarkSummarizeStream: a Summarizer over a generated stream of 4
// validators and 5,000 heights (~500k events), an event at a time: the
// time per event (generating it included: see generate-only) and what
// the Summarizer keeps per height (live heap growth from a tenth of the
// heights to the end).
//
//	go test ./results -run '^$' -bench SummarizeStream -benchtime 3x
func BenchmarkSummarizeStream(b *testing.B) {
	const heights = 5_000
	cfg := streamConfig(heights)
	b.Run("summarize", func(b *testing.B) {
		var events int
		var perHeight float64
		for b.Loop() {
			events = 0
			z := NewSummarizer()
			var atTenth uint64
			genEach(cfg, func(ev *eventlog.Event) {
				z.Add(ev)
				events++
				if ev.Kind == eventlog.KindBlock && ev.Height == heights/10 {
					b.StopTimer()
					atTenth = liveHeap()
					b.StartTimer()
				}
			})
			z.Summary()
			b.StopTimer()
			perHeight = float64(liveHeap()-atTenth) / (heights - heights/10)
			runtime.KeepAlive(z)
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(events), "ns/event")
		b.ReportMetric(perHeight, "B/height")
	})
	b.Run("generate-only", func(b *testing.B) {
		var events int
		for b.Loop() {
			events = 0
			genEach(cfg, func(*eventlog.Event) { events++ })
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(events), "ns/event")
	})
}
