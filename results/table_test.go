package results

import (
	"bytes"
	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/results/eventlog"
	"strings"
	"testing"
)

func TestResultLine(t *testing.T) {
	pass := eventlog.Expectation{Metric: "heights_committed", Min: fp(1)}
	fail := eventlog.Expectation{Metric: "heights_committed", Min: fp(100)}
	errEnd := eventlog.Event{Time: at(10), Kind: eventlog.KindRunEnd, StopReason: eventlog.StopError, Error: "node v2 crashed"}
	tests := []struct {
		name   string
		events []eventlog.Event
		want   string
	}{
		{"pass", expectRun(eventlog.StopHeights, pass), "RESULT: PASS"},
		{"max duration fails", expectRun(eventlog.StopMaxDuration, pass), "RESULT: FAIL (stopped at max_duration before reaching run.heights)"},
		{"max duration and a failed expectation", expectRun(eventlog.StopMaxDuration, fail), "RESULT: FAIL (1 expectation(s) failed; stopped at max_duration before reaching run.heights)"},
		{"fail", expectRun(eventlog.StopHeights, pass, fail, fail), "RESULT: FAIL (2 expectation(s) failed)"},
		{"interrupted beats expectations", expectRun(eventlog.StopInterrupted, fail), "RESULT: ERROR (interrupted)"},
		{"error with message", []eventlog.Event{runStart("v1"), errEnd}, "RESULT: ERROR (node v2 crashed)"},
		{"no run_end", []eventlog.Event{runStart("v1")}, "RESULT: ERROR (run did not finish (no run_end event))"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteTable(&buf, Summarize(tt.events)); err != nil {
				t.Fatal(err)
			}
			out := strings.TrimRight(buf.String(), "\n")
			if last := out[strings.LastIndex(out, "\n")+1:]; last != tt.want {
				t.Errorf("last line = %q, want %q\n%s", last, tt.want, out)
			}
		})
	}
}

func TestTableCells(t *testing.T) {
	evs := expectRun(eventlog.StopHeights, eventlog.Expectation{Metric: "sign_latency_p50_ms", Phase: phase.Proposal, Max: fp(1)})
	evs = append(evs, signEv("v1", phase.Precommit, 1, 0, "A"), signEv("v1", phase.Precommit, 1, 0, "B"),
		eventlog.Event{Time: at(7), Kind: eventlog.KindNodeError, Node: "v2", Error: "event subscription cancelled"})
	var buf bytes.Buffer
	if err := WriteTable(&buf, Summarize(evs)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"2/2", // v1 missed 2 of 2 counted heights
		"1/1", // v1 made its one proposal
		"-",   // v2 never signed a proposal
		"FAIL  sign_latency_p50_ms[v1,proposal]",
		"0 (no samples)",             // v2's proposal latency
		"v1 h1 r0 precommit: A vs B", // double-sign detail
		"1, events may be missing (first: v2: event subscription cancelled)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestHeightsCSV(t *testing.T) {
	bt := at(-5)
	b1 := block(1, 0, 0, nil, nil)
	b1.Proposer, b1.BlockTime = "v1", &bt
	b1.Txs, b1.BlockBytes = 2, 2650
	evs := []eventlog.Event{
		b1,
		block(2, 1000.5, 0, []string{"v2", "v3"}, []string{"v1"}),
		block(3, 3000, 2, nil, nil),
		block(5, 9000, 0, nil, nil), // 4 never reported: no interval for 5
	}
	var buf bytes.Buffer
	if err := WriteHeightsCSV(&buf, evs); err != nil {
		t.Fatal(err)
	}
	want := `height,commit_round,proposer,header_time,observed_interval_ms,absent,nil,quorum_critical,txs,block_bytes
1,0,v1,2024-12-31T23:59:59.995Z,,v2;v3,v1,,2,2650
2,2,,,1000.5,,,,0,
3,,,,1999.5,,,,0,
5,,,,,,,,0,
`
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}
