package results

import (
	"encoding/csv"
	"github.com/valnet/valnet/results/eventlog"
	"io"
	"strconv"
	"strings"
	"time"
)

// WriteHeightsCSV writes heights.csv: one row per committed height,
// ascending, with the header
//
//	height,commit_round,proposer,header_time,observed_interval_ms,absent,nil,quorum_critical,txs,block_bytes
//
// Two clocks, named so: header_time is the block header's time (BFT time,
// the proposer's clock; RFC3339Nano, UTC), observed_interval_ms the time
// between valnet's observations of this commit and the previous one (event
// time, block_interval_ms's clock). They differ: a header's time is stamped
// when the block was proposed, rounds before its commit was seen.
// commit_round and observed_interval_ms follow Summarize's definitions and
// are empty when unknown; absent and
// nil are the validators whose CommitSig for this height in block H+1's
// LastCommit is absent or nil, joined by ';' (empty when H+1 was not
// committed, as well as when nobody was absent); quorum_critical the
// validators whose precommit the quorum waited for, in the order the
// deciding node received them (empty when its votes do not show it); txs
// the block's transactions and block_bytes its encoded size (empty for a
// stream recorded before valnet reported block sizes).
func WriteHeightsCSV(w io.Writer, events []eventlog.Event) error {
	return summarizeEvents(events).WriteHeightsCSV(w)
}

// WriteHeightsCSV writes heights.csv of the events added (see the
// function WriteHeightsCSV), from the rows the Summarizer keeps; it calls
// Summary first.
func (z *Summarizer) WriteHeightsCSV(w io.Writer) error {
	z.Summary()
	c := z.c
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"height", "commit_round", "proposer", "header_time", "observed_interval_ms", "absent", "nil", "quorum_critical", "txs", "block_bytes"}); err != nil {
		return err
	}
	for _, h := range c.heights {
		b := c.row(h)
		row := make([]string, 10)
		row[0] = strconv.FormatInt(h, 10)
		if r, ok := c.commitRound(h, noRound); ok {
			row[1] = strconv.FormatInt(int64(r), 10)
		}
		row[2] = z.names.name(b.proposer)
		if b.bt != noStamp {
			row[3] = b.bt.time().UTC().Format(time.RFC3339Nano)
		}
		if ms, ok := c.intervalMS(h); ok {
			row[4] = formatMS(ms)
		}
		if nb := c.lastCommit(h); nb != nil {
			row[5] = strings.Join(c.namesOf(nb.absent), ";")
			row[6] = strings.Join(c.namesOf(nb.nils), ";")
		}
		row[7] = strings.Join(c.namesOf(b.quorum), ";")
		row[8] = strconv.Itoa(int(b.txs))
		if b.bytes > 0 {
			row[9] = strconv.Itoa(int(b.bytes))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// formatMS prints a millisecond value with at most 3 decimals and no
// trailing zeros ("1000", "1000.5").
func formatMS(ms float64) string { return FormatMS(ms) }

// FormatMS prints a figure as every report does: rounded to the
// microsecond (0.001 ms), no trailing zeros.
func FormatMS(ms float64) string {
	return strconv.FormatFloat(roundMS(ms), 'f', -1, 64)
}
