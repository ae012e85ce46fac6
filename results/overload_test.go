package results

import (
	"bytes"
	"github.com/valnet/valnet/results/eventlog"
	"io"
	"slices"
	"strings"
	"testing"
)

// hostRun: the fixture with one host sample per second of it, the first
// saturatedSeconds of them saturated.
func hostRun(t *testing.T, saturatedSeconds int) []eventlog.Event {
	evs := slices.Clone(readFixture(t))
	start, end := evs[0].Time, evs[len(evs)-1].Time
	for sec, ts := 1, start.Add(hostSamplePeriod); ts.Before(end); sec, ts = sec+1, ts.Add(hostSamplePeriod) {
		h := hostAt(0, sec <= saturatedSeconds)
		h.Time = ts
		evs = append(evs, h)
	}
	slices.SortStableFunc(evs, func(a, b eventlog.Event) int { return a.Time.Compare(b.Time) })
	return evs
}

// TestOverloadedHostSaysSoOnTop: every report of a run on an overloaded
// host leads with OverloadedNotice, and every expectation verdict carries
// it as a warning; a run on a quiet host says nothing of the kind.
func TestOverloadedHostSaysSoOnTop(t *testing.T) {
	writers := []struct {
		name  string
		write func(io.Writer, *Summary, []eventlog.Event) error
		top   func(out string) string // where the notice must be
		warn  string                  // how an expectation shows its warning
		each  bool                    // the warning names the notice at every expectation
	}{
		{"table", func(w io.Writer, s *Summary, _ []eventlog.Event) error { return WriteTable(w, s) },
			func(out string) string { return strings.SplitN(out, "\n", 2)[0] }, "warning: " + OverloadedNotice, true},
		{"summary.md", func(w io.Writer, s *Summary, _ []eventlog.Event) error { return WriteMarkdown(w, s) },
			func(out string) string { return strings.SplitN(out, "\n", 2)[0] }, "✅ ⚠️", false},
		{"report.html", WriteHTMLReport,
			func(out string) string {
				return out[strings.Index(out, `<header id="run">`):strings.Index(out, "<h1>")]
			}, "⚠ " + OverloadedNotice, true},
		{"junit.xml", func(w io.Writer, s *Summary, _ []eventlog.Event) error { return WriteJUnit(w, s) },
			func(out string) string { return out[:strings.Index(out, "<testcase")] }, "<system-out>warning: " + OverloadedNotice + "</system-out>", true},
	}
	for _, tt := range []struct {
		name      string
		saturated int
		want      bool
	}{
		{"overloaded", 1000, true},
		{"quiet", 0, false},
	} {
		evs := hostRun(t, tt.saturated)
		s := Summarize(evs)
		if s.Host == nil || s.Host.Overloaded != tt.want {
			t.Fatalf("%s: host %+v", tt.name, s.Host)
		}
		for _, e := range s.Expectations {
			if want := map[bool]string{true: OverloadedNotice}[tt.want]; e.Warning != want {
				t.Errorf("%s: %s warning %q, want %q", tt.name, ExpectationName(e), e.Warning, want)
			}
		}
		for _, w := range writers {
			t.Run(tt.name+"/"+w.name, func(t *testing.T) {
				var buf bytes.Buffer
				if err := w.write(&buf, s, evs); err != nil {
					t.Fatal(err)
				}
				out := buf.String()
				if got := strings.Contains(w.top(out), OverloadedNotice); got != tt.want {
					t.Errorf("notice on top = %v, want %v:\n%s", got, tt.want, w.top(out))
				}
				if got := strings.Count(out, OverloadedNotice); tt.want && w.each && got <= len(s.Expectations) {
					t.Errorf("the notice appears %d times: once on top and once for each of %d expectations expected", got, len(s.Expectations))
				}
				if got := strings.Contains(out, w.warn); got != tt.want {
					t.Errorf("expectation warning %q shown = %v, want %v", w.warn, got, tt.want)
				}
			})
		}
	}
}
