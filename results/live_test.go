package results

import (
	"bytes"
	"testing"

	"github.com/valnet/valnet/results/eventlog"
)

// TestSummarizeLive: the first pass over a stream read as it comes is
// the stream's summary when it says it is exact, and nil when the stream
// asks for another pass or ends in a torn line (the caller then reads
// the file). Both happen among the settle streams.
func TestSummarizeLive(t *testing.T) {
	exact, again := 0, 0
	for name, evs := range settleStreams(t) {
		var data []byte
		for i := range evs {
			line, err := eventlog.EncodeEvent(&evs[i])
			if err != nil {
				t.Fatal(err)
			}
			data = append(append(data, line...), '\n')
		}
		z, err := SummarizeLive(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if z == nil {
			again++
			continue
		}
		exact++
		want := reportsOf(t, summarizeWith(defaultPlan(), feedEvents(evs)))
		for f, got := range reportsOf(t, z) {
			if got != want[f] {
				t.Errorf("%s: the live pass's %s is not the file's", name, f)
			}
		}
		if z, err := SummarizeLive(bytes.NewReader(append(data, `{"t":"2025-01-01T00:00:`...))); z != nil || err != nil {
			t.Errorf("%s ending in a torn line: summarizer %v, error %v; want neither", name, z != nil, err)
		}
	}
	if exact == 0 || again == 0 {
		t.Fatalf("%d streams exact in one pass, %d asking for another: want some of each", exact, again)
	}
}
