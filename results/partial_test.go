package results

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Lines of a minimal events.jsonl.
const (
	lineStart = `{"t":"2025-01-01T00:00:00Z","kind":"run_start","scenario":"s"}`
	lineBlock = `{"t":"2025-01-01T00:00:01Z","kind":"block","height":1}`
	lineEnd   = `{"t":"2025-01-01T00:00:02Z","kind":"run_end","stop_reason":"heights"}`
)

// A killed runner's stream is summarised as partial, and a torn last line
// is reported with its byte offset, not silently dropped.
func TestSummarizeFilePartial(t *testing.T) {
	off := len(lineStart) + 1 + len(lineBlock) + 1
	tests := []struct {
		name    string
		input   string
		partial bool
		reasons []string
	}{
		{"whole run", lineStart + "\n" + lineBlock + "\n" + lineEnd + "\n", false, nil},
		{"no run_end", lineStart + "\n" + lineBlock + "\n", true, []string{"no run_end event"}},
		{"torn last line", lineStart + "\n" + lineBlock + "\n" + lineEnd[:30], true,
			[]string{"no run_end event", "events.jsonl: last line truncated at byte " + strconv.Itoa(off) + " (30 bytes), ignored"}},
		{"torn after run_end", lineStart + "\n" + lineEnd + "\n" + lineBlock[:10], true,
			[]string{"events.jsonl: last line truncated at byte " + strconv.Itoa(len(lineStart)+1+len(lineEnd)+1) + " (10 bytes), ignored"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.jsonl")
			if err := os.WriteFile(path, []byte(tc.input), 0o644); err != nil {
				t.Fatal(err)
			}
			z, err := SummarizeFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s := z.Summary()
			if s.Partial != tc.partial || len(s.PartialReasons) != len(tc.reasons) {
				t.Fatalf("partial %v %q, want %v %q", s.Partial, s.PartialReasons, tc.partial, tc.reasons)
			}
			for i, want := range tc.reasons {
				if !strings.HasPrefix(s.PartialReasons[i], want) {
					t.Errorf("reason %d: %q, want it to start with %q", i, s.PartialReasons[i], want)
				}
			}
			var b strings.Builder
			if err := WriteTable(&b, s); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(b.String(), "PARTIAL"); got != tc.partial {
				t.Errorf("text report says PARTIAL: %v, want %v:\n%s", got, tc.partial, b.String())
			}
		})
	}
}
