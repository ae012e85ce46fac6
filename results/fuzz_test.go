package results

import (
	"bytes"
	"errors"
	"github.com/valnet/valnet/results/eventlog"
	"io"
	"os"
	"testing"
	"time"
)

// FuzzEvents drives an events.jsonl through what valnet report does with
// it (Stream into a Summarizer, then every derived file): no panic, no
// hang, and a corrupt line is a *LineError naming a line that exists.
func FuzzEvents(f *testing.F) {
	whole, err := os.ReadFile("testdata/events.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	// Prefixes of the fixture: the whole 88 KB is too big a seed to mutate
	// (and minimize) quickly.
	lines := bytes.SplitAfter(whole, []byte("\n"))
	for _, n := range []int{1, 2, 6, 30} {
		f.Add(bytes.Join(lines[:n], nil))
	}
	f.Add(append(bytes.Join(lines[:30], nil), lines[30][:len(lines[30])/2]...)) // torn last line
	f.Add(append(bytes.Join(lines[:6], nil), lines[len(lines)-2]...))           // run_end after little
	f.Add([]byte(""))
	f.Add([]byte("\n\n"))
	f.Add([]byte(`{"t":"2025-03-14T09:26:53Z","kind":"block","height":9223372036854775807}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			report(t, data)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("the report of %d bytes did not finish within 20s", len(data))
		}
	})
}

// report is valnet report (runner.Report) on data, the files written to
// io.Discard.
func report(t *testing.T, data []byte) {
	n := 0
	err := eventlog.Stream(bytes.NewReader(data), func(*eventlog.Event) { n++ })
	if err != nil {
		var le *eventlog.LineError
		if !errors.As(err, &le) {
			t.Fatalf("a read of memory failed without a line: %v", err)
		}
		if le.Line < 1 || le.Line > bytes.Count(data, []byte("\n")) {
			t.Fatalf("error at line %d of %d complete lines: %v", le.Line, bytes.Count(data, []byte("\n")), err)
		}
	}
	z := summarizeWith(defaultPlan(), func(z *Summarizer) error {
		return eventlog.Stream(bytes.NewReader(data), z.Add)
	})
	if z.Events() != int64(n) {
		t.Fatalf("the summarizer saw %d events, the reader %d", z.Events(), n)
	}
	if !z.HasRunStart() {
		return // valnet report refuses it: nothing to report
	}
	s := z.Summary()
	for _, write := range []func(io.Writer) error{
		func(w io.Writer) error { return WriteSummaryJSON(w, s) },
		z.WriteHeightsCSV,
		func(w io.Writer) error { return WriteMissedCSV(w, s) },
		func(w io.Writer) error { return WriteJUnit(w, s) },
		func(w io.Writer) error { return WriteMarkdown(w, s) },
		z.WriteHTMLReport,
	} {
		if err := write(io.Discard); err != nil {
			t.Fatalf("writing a derived file: %v", err)
		}
	}
}
