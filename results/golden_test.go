package results

import (
	"bytes"
	"flag"
	"github.com/valnet/valnet/results/eventlog"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/valnet/valnet/internal/golden"
)

var update = flag.Bool("update", false, "regenerate testdata/events.jsonl and the golden files")

const fixturePath = "testdata/events.jsonl"

// readFixture returns the fixture's events, regenerating the fixture first
// under -update (through Writer, so the fixture is also what Writer writes).
func readFixture(t testing.TB) []eventlog.Event {
	t.Helper()
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		w, err := eventlog.NewWriter(fixturePath)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range gen(fixtureConfig()) {
			w.Emit(ev)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := eventlog.ReadFile(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got, *update)
}

func TestGolden(t *testing.T) {
	evs := readFixture(t)
	s := Summarize(evs)

	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{"summary.json", func(w io.Writer) error { return WriteSummaryJSON(w, s) }},
		{"heights.csv", func(w io.Writer) error { return WriteHeightsCSV(w, evs) }},
		{"missed.csv", func(w io.Writer) error { return WriteMissedCSV(w, s) }},
		{"junit.xml", func(w io.Writer) error { return WriteJUnit(w, s) }},
		{"summary.md", func(w io.Writer) error { return WriteMarkdown(w, s) }},
		{"table.txt", func(w io.Writer) error { return WriteTable(w, s) }},
	} {
		t.Run(f.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := f.write(&buf); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, f.name, buf.Bytes())
		})
	}
}

// TestFixtureFacts pins the facts the fixture was scripted to contain, so a
// regenerated golden file cannot silently drift from the scenario it claims
// to describe.
func TestFixtureFacts(t *testing.T) {
	s := Summarize(readFixture(t))
	if s.Heights != (HeightStats{First: 1, Last: 8, Committed: 8, Target: 8}) {
		t.Errorf("heights = %+v", s.Heights)
	}
	if s.Rounds != (RoundStats{HeightsWithRoundChange: 1, MaxCommitRound: 1, ExtraRounds: 1}) {
		t.Errorf("rounds = %+v", s.Rounds)
	}
	if s.DoubleSigns != 0 {
		t.Errorf("double_signs = %d, want 0 (v4's re-sign is the same block)", s.DoubleSigns)
	}
	type row struct{ missed, nils, counted, expected, made, errs int }
	want := map[string]row{
		"v1": {1, 0, 7, 2, 1, 2}, // proposer at 1 and 5/0 (signer failed); precommit failed at 6
		"v2": {1, 1, 7, 3, 3, 0}, // proposer at 2, 5/1, 6; nil at 2; down at 7
		"v3": {2, 0, 7, 2, 2, 0}, // absent at 3 and 4
		"v4": {0, 0, 7, 2, 2, 0}, // 9/0 is after the last commit
	}
	for _, v := range s.Validators {
		got := row{v.MissedPrecommits, v.NilPrecommits, v.PrecommitsCounted, v.Proposals.Expected, v.Proposals.Made, v.SignErrors}
		if got != want[v.Name] {
			t.Errorf("%s = %+v, want %+v", v.Name, got, want[v.Name])
		}
	}
	if v4 := s.Validators[3]; v4.InjectedLatencyMS.Count == 0 || v4.InjectedLatencyMS.P50 != 200 {
		t.Errorf("v4 injected = %+v", v4.InjectedLatencyMS)
	}
	if s.OK || len(s.Failed()) != 1 || s.Failed()[0].Validator != "v3" {
		t.Errorf("ok=%v failed=%+v, want only v3's missed_precommits", s.OK, s.Failed())
	}
}
