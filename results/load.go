package results

import (
	"fmt"
	"github.com/valnet/valnet/results/eventlog"
	"hash/fnv"
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

// loadAgg streams tx and block events into a LoadSummary. It keeps a
// transaction from its submission only until a block carries it (or the
// end): then it counts it, and remembers its hash (8 bytes) to know it.
type loadAgg struct {
	ls          LoadSummary
	first, last time.Time
	pending     map[string]*txState
	counted     map[uint64]bool // hashes of transactions counted
	latencies   samples
	lastCommit  time.Time
	keepAll     bool // count at the end only (plan.loadAll)
	outOfOrder  bool // a block carried transactions below a higher block: keepAll would be exact
	resent      bool // a counted transaction was submitted again: likewise
}

// txState is one transaction as far as the stream told: its submission
// (the first accepted, else the first) and the lowest block carrying it.
type txState struct {
	sub      time.Time
	accepted bool
	hasSub   bool
	height   int64
	block    time.Time
	hasBlock bool
}

func newLoadAgg(keepAll bool) *loadAgg {
	return &loadAgg{pending: map[string]*txState{}, counted: map[uint64]bool{}, keepAll: keepAll}
}

func (a *loadAgg) tx(ev *eventlog.Event) {
	ls := &a.ls
	ls.Sent++
	switch ev.Result {
	case eventlog.TxAccepted:
		ls.Accepted++
	case eventlog.TxRejected:
		ls.Rejected++
	default:
		ls.Failed++
	}
	if ev.Result != eventlog.TxAccepted {
		ls.countError(ev.Error)
	}
	if a.first.IsZero() || ev.Time.Before(a.first) {
		a.first = ev.Time
	}
	if ev.Time.After(a.last) {
		a.last = ev.Time
	}
	st := a.pending[ev.Tx]
	if st == nil {
		if a.counted[txKey(ev.Tx)] {
			a.resent = true // what the first submission said stands; a later block would not count again
		}
		st = &txState{}
		a.pending[ev.Tx] = st
	}
	if !st.hasSub || !st.accepted && ev.Result == eventlog.TxAccepted {
		st.sub, st.accepted, st.hasSub = ev.Time, ev.Result == eventlog.TxAccepted, true
	}
	a.settle(ev.Tx, st)
}

// block takes a block's transactions; below is whether a higher block
// came before it.
func (a *loadAgg) block(ev *eventlog.Event, below bool) {
	if below && len(ev.TxHashes) > 0 {
		a.outOfOrder = true
	}
	for _, hash := range ev.TxHashes {
		st := a.pending[hash]
		if st == nil {
			if a.counted[txKey(hash)] {
				continue // a transaction is committed once
			}
			st = &txState{}
			a.pending[hash] = st
		}
		if !st.hasBlock || ev.Height < st.height {
			st.height, st.block, st.hasBlock = ev.Height, ev.Time, true
		}
		a.settle(hash, st)
	}
}

// settle counts a transaction whose accepted submission and block are
// both known; one submitted without being accepted may still be accepted
// by a later submission, so it waits for the end.
func (a *loadAgg) settle(hash string, st *txState) {
	if a.keepAll || !st.hasSub || !st.accepted || !st.hasBlock {
		return
	}
	a.count(st)
	delete(a.pending, hash)
	a.counted[txKey(hash)] = true
}

func (a *loadAgg) count(st *txState) {
	if !st.accepted {
		a.ls.CommittedNotAccepted++
		return
	}
	a.ls.Committed++
	a.latencies.add(float64(st.block.Sub(st.sub).Nanoseconds()) / 1e6)
	if st.block.After(a.lastCommit) {
		a.lastCommit = st.block
	}
}

func txKey(hash string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(hash))
	return h.Sum64()
}

// result is s.Load: nil for a run without a load in run_start or tx
// events.
func (a *loadAgg) result(start *eventlog.Event) *LoadSummary {
	for _, st := range a.pending {
		if st.hasSub && st.hasBlock {
			a.count(st)
		}
	}
	a.pending = nil
	ls := a.ls
	if start != nil && start.Load != nil {
		ls.Rate, ls.SizeBytes, ls.To = start.Load.Rate, start.Load.SizeBytes, start.Load.To
	}
	if ls.Sent == 0 && (start == nil || start.Load == nil) {
		return nil
	}
	ls.Pending = ls.Accepted - ls.Committed
	ls.CommitLatencyMS = a.latencies.stats()
	if span := a.last.Sub(a.first).Seconds(); ls.Sent > 1 && span > 0 {
		ls.SentPerS = roundRate(float64(ls.Sent-1) / span)
	}
	if span := a.lastCommit.Sub(a.first).Seconds(); ls.Committed > 0 && span > 0 {
		ls.TxPerS = roundRate(float64(ls.Committed) / span)
	}
	if ls.Rate > 0 && ls.Sent > 1 && ls.SentPerS < behindRatio*ls.Rate {
		ls.Note = fmt.Sprintf("the generator sent %.4g/s of the %.4g/s asked: it could not keep up (workers waiting on slow RPC answers, or a busy host)", ls.SentPerS, ls.Rate)
	}
	return &ls
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
