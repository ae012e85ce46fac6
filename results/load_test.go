package results

import (
	"encoding/json"
	"github.com/valnet/valnet/results/eventlog"
	"reflect"
	"strings"
	"testing"
	"time"
)

// loadStream is a run with a load: five submissions, two blocks.
func loadStream(t0 time.Time) []eventlog.Event {
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tx := func(ms int, hash, result, err string) eventlog.Event {
		return eventlog.Event{Time: at(ms), Kind: eventlog.KindTx, Node: "v1", Tx: hash, Result: result, Error: err, LatencyMS: 1}
	}
	return []eventlog.Event{
		{Time: at(0), Kind: eventlog.KindRunStart, Scenario: "load", Heights: 2,
			Load: &eventlog.LoadInfo{Rate: 10, SizeBytes: 1024, To: "all"}},
		tx(100, "aa", eventlog.TxAccepted, ""),
		tx(200, "bb", eventlog.TxAccepted, ""),
		tx(300, "cc", eventlog.TxRejected, "CheckTx code 1"),
		tx(400, "dd", eventlog.TxFailed, "connection refused"),
		tx(500, "ee", eventlog.TxAccepted, ""),
		{Time: at(600), Kind: eventlog.KindBlock, Height: 1, Txs: 3, BlockBytes: 3500, TxHashes: []string{"aa", "dd", "bb"}},
		// A transaction not sent by the load, then one already committed.
		{Time: at(1600), Kind: eventlog.KindBlock, Height: 2, Txs: 2, BlockBytes: 2400, TxHashes: []string{"zz", "aa"}},
		{Time: at(1700), Kind: eventlog.KindRunEnd, StopReason: eventlog.StopHeights},
	}
}

func TestSummarizeLoad(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	s := Summarize(loadStream(t0))
	want := &LoadSummary{Rate: 10, SizeBytes: 1024, To: "all",
		Sent: 5, Accepted: 3, Rejected: 1, Failed: 1,
		Committed: 2, Pending: 1, CommittedNotAccepted: 1,
		SentPerS:        10, // 4 intervals in 0.4 s
		TxPerS:          4,  // 2 committed from 100 ms to 600 ms
		CommitLatencyMS: LatencyStats{Count: 2, P50: 400, P95: 500, P99: 500, Max: 500},
		Errors:          map[string]int{"CheckTx code 1": 1, "connection refused": 1},
	}
	if !reflect.DeepEqual(s.Load, want) {
		t.Errorf("load\n got %+v\nwant %+v", *s.Load, *want)
	}
	if s.Load.Sent != s.Load.Accepted+s.Load.Rejected+s.Load.Failed || s.Load.Committed > s.Load.Accepted {
		t.Errorf("accounting does not add up: %+v", *s.Load)
	}
	for name, v := range map[string]float64{"txs_sent": 5, "txs_rejected": 1, "txs_failed": 1, "txs_committed": 2,
		"tx_per_s": 4, "tx_commit_latency_p50_ms": 400, "tx_commit_latency_p95_ms": 500, "tx_commit_latency_max_ms": 500} {
		if got, err := s.Metric(name, "", ""); err != nil || got != v {
			t.Errorf("%s = %v, %v; want %v", name, got, err, v)
		}
	}

	var table, md strings.Builder
	if err := WriteTable(&table, s); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, s); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{table.String(), md.String()} {
		if !strings.Contains(out, "sent 5 (10/s), accepted 3, rejected 1, failed 1; committed 2 (4 tx/s), pending 1; commit latency ms p50 / p95 / max 400 / 500 / 500") {
			t.Errorf("no load line in\n%s", out)
		}
	}

	// What valnet report reads back is the same summary.
	var back []eventlog.Event
	for _, ev := range loadStream(t0) {
		line, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var e eventlog.Event
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatal(err)
		}
		back = append(back, e)
	}
	if got := Summarize(back).Load; !reflect.DeepEqual(got, s.Load) {
		t.Errorf("from JSON lines: %+v, want %+v", *got, *s.Load)
	}
}

func TestSummarizeLoadBehindAndNone(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	evs := loadStream(t0)
	evs[0].Load.Rate = 100 // asked 100/s, sent 10/s
	if s := Summarize(evs); s.Load.Note == "" {
		t.Errorf("a generator at 10/s of 100/s has no note")
	}
	evs = loadStream(t0)
	if s := Summarize(evs); s.Load.Note != "" {
		t.Errorf("note %q at the asked rate", s.Load.Note)
	}
	plain := []eventlog.Event{{Time: t0, Kind: eventlog.KindRunStart}, {Time: t0.Add(time.Second), Kind: eventlog.KindBlock, Height: 1}}
	s := Summarize(plain)
	if s.Load != nil {
		t.Errorf("a run without load has load %+v", *s.Load)
	}
	if _, n, err := s.metric("txs_committed", "", ""); err != nil || n != 0 {
		t.Errorf("txs_committed without load: samples %d, err %v; want no samples", n, err)
	}
	// A load that ran and got nothing committed: 0 tx/s is what happened
	// (a value, not "no samples"); the commit latency has none.
	uncommitted := Summary{Load: &LoadSummary{Sent: 20, Accepted: 20}}
	if v, n, err := uncommitted.metric("tx_per_s", "", ""); err != nil || v != 0 || n == 0 {
		t.Errorf("tx_per_s with 20 sent, 0 committed: %g (samples %d, err %v); want 0 with samples", v, n, err)
	}
	if _, n, _ := uncommitted.metric("tx_commit_latency_p50_ms", "", ""); n != 0 {
		t.Errorf("commit latency with 0 committed: samples %d, want none", n)
	}
	if _, n, _ := (&Summary{Load: &LoadSummary{}}).metric("tx_per_s", "", ""); n != 0 {
		t.Errorf("tx_per_s of a load that sent nothing: samples %d, want none", n)
	}
	// A load that sent nothing still reports itself.
	empty := []eventlog.Event{{Time: t0, Kind: eventlog.KindRunStart, Load: &eventlog.LoadInfo{Rate: 5, SizeBytes: 100, To: "v1"}}}
	if s := Summarize(empty); s.Load == nil || s.Load.Sent != 0 || s.Load.To != "v1" {
		t.Errorf("load that sent nothing: %+v", s.Load)
	}
}
