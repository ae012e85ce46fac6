package results

import (
	"fmt"
	"math"
	"time"
)

// LoadSummary is summary.json's load: what the transaction load sent and
// what the chain did with it, from tx and block events alone.
type LoadSummary struct {
	Rate      float64 `json:"rate"` // transactions per second asked
	SizeBytes int     `json:"size_bytes"`
	To        string  `json:"to"`

	// Sent = Accepted + Rejected + Failed (Result of each tx event).
	Sent     int `json:"sent"`
	Accepted int `json:"accepted"`
	Rejected int `json:"rejected"`
	Failed   int `json:"failed"`
	// Committed: accepted transactions found in a committed block, so
	// Committed <= Accepted; Pending = Accepted - Committed (still in a
	// mempool, or lost, when the run ended). CommittedNotAccepted: rejected
	// or failed submissions that a block carried anyway (a call that timed
	// out after the node took it); they are in no other count here.
	Committed            int `json:"committed"`
	Pending              int `json:"pending"`
	CommittedNotAccepted int `json:"committed_not_accepted,omitempty"`

	// SentPerS: the rate the generator achieved, (sent-1) over the time
	// from its first submission to its last. TxPerS: committed over the
	// time from the first submission to the last block that carried one.
	SentPerS float64 `json:"sent_per_s"`
	TxPerS   float64 `json:"tx_per_s"`
	// CommitLatencyMS: for each committed transaction, its block event's
	// time (the first node to commit it) minus its submission time.
	CommitLatencyMS LatencyStats `json:"commit_latency_ms"`
	// Errors counts the rejected and failed submissions by error text
	// (the first 10 distinct texts; the rest under "other").
	Errors map[string]int `json:"errors,omitempty"`
	// Note says when the numbers are not what was asked, e.g. a generator
	// that could not keep up.
	Note string `json:"note,omitempty"`
}

// behindRatio: a generator that sent less than this share of the asked
// rate fell behind (pacing is otherwise within a few per cent).
const behindRatio = 0.95

// maxLoadErrors bounds the distinct error texts listed.
const maxLoadErrors = 10

// summarizeLoad fills s.Load when run_start has a load or the stream has
// tx events.
func summarizeLoad(s *Summary, events []Event, start *Event, c *chain) {
	ls := &LoadSummary{}
	if start != nil && start.Load != nil {
		ls.Rate, ls.SizeBytes, ls.To = start.Load.Rate, start.Load.SizeBytes, start.Load.To
	}
	submitted := map[string]*Event{} // tx hash -> its first submission
	var first, last time.Time
	for i := range events {
		ev := &events[i]
		if ev.Kind != KindTx {
			continue
		}
		ls.Sent++
		switch ev.Result {
		case TxAccepted:
			ls.Accepted++
		case TxRejected:
			ls.Rejected++
		default:
			ls.Failed++
		}
		if ev.Result != TxAccepted {
			ls.countError(ev.Error)
		}
		if prev, ok := submitted[ev.Tx]; !ok || prev.Result != TxAccepted && ev.Result == TxAccepted {
			submitted[ev.Tx] = ev
		}
		if first.IsZero() || ev.Time.Before(first) {
			first = ev.Time
		}
		if ev.Time.After(last) {
			last = ev.Time
		}
	}
	if ls.Sent == 0 && (start == nil || start.Load == nil) {
		return
	}
	var latencies []float64
	var lastCommit time.Time
	for _, h := range c.heights {
		b := c.blocks[h]
		for _, hash := range b.TxHashes {
			sub, ok := submitted[hash]
			if !ok {
				continue // not a load transaction
			}
			delete(submitted, hash) // a transaction is committed once
			if sub.Result != TxAccepted {
				ls.CommittedNotAccepted++
				continue
			}
			ls.Committed++
			latencies = append(latencies, float64(b.Time.Sub(sub.Time).Nanoseconds())/1e6)
			if b.Time.After(lastCommit) {
				lastCommit = b.Time
			}
		}
	}
	ls.Pending = ls.Accepted - ls.Committed
	ls.CommitLatencyMS = latencyStats(latencies)
	if span := last.Sub(first).Seconds(); ls.Sent > 1 && span > 0 {
		ls.SentPerS = roundRate(float64(ls.Sent-1) / span)
	}
	if span := lastCommit.Sub(first).Seconds(); ls.Committed > 0 && span > 0 {
		ls.TxPerS = roundRate(float64(ls.Committed) / span)
	}
	if ls.Rate > 0 && ls.Sent > 1 && ls.SentPerS < behindRatio*ls.Rate {
		ls.Note = fmt.Sprintf("the generator sent %.4g/s of the %.4g/s asked: it could not keep up (workers waiting on slow RPC answers, or a busy host)", ls.SentPerS, ls.Rate)
	}
	s.Load = ls
}

func (ls *LoadSummary) countError(text string) {
	if text == "" {
		text = "(no error text)"
	}
	if ls.Errors == nil {
		ls.Errors = map[string]int{}
	}
	if _, ok := ls.Errors[text]; !ok && len(ls.Errors) >= maxLoadErrors {
		text = "other"
	}
	ls.Errors[text]++
}

// roundRate keeps 3 decimals of a rate.
func roundRate(v float64) float64 { return math.Round(v*1000) / 1000 }

// loadText is the load in one line, for the table, summary.md and the
// HTML report.
func loadText(l *LoadSummary) string {
	lat := "-"
	if c := l.CommitLatencyMS; c.Count > 0 {
		lat = formatMS(c.P50) + " / " + formatMS(c.P95) + " / " + formatMS(c.Max)
	}
	text := fmt.Sprintf("%g/s of %d B asked to %s: sent %d (%g/s), accepted %d, rejected %d, failed %d; committed %d (%g tx/s), pending %d; commit latency ms p50 / p95 / max %s",
		l.Rate, l.SizeBytes, l.To, l.Sent, l.SentPerS, l.Accepted, l.Rejected, l.Failed, l.Committed, l.TxPerS, l.Pending, lat)
	if l.Note != "" {
		text += "; " + l.Note
	}
	return text
}
