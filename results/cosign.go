package results

import (
	"fmt"
	"github.com/valnet/valnet/results/eventlog"
	"slices"
	"strconv"
	"strings"
)

// ThresholdSummary is one validator's threshold signer over the run, from
// its cosign events. QuorumMS covers the signatures that reached the
// quorum; Answered[k-1] counts the quorums cosigner k was in, and
// Unanswered[k-1] the rounds it was asked in and did not answer.
type ThresholdSummary struct {
	Model      string        `json:"model"`
	Cosigners  int           `json:"cosigners"`
	Threshold  int           `json:"threshold"`
	Signatures int           `json:"signatures"` // rounds run, one per signature asked
	NoQuorum   int           `json:"no_quorum"`  // of which failed
	QuorumMS   *LatencyStats `json:"quorum_ms"`
	NonceMS    *LatencyStats `json:"nonce_ms"`
	Leaders    map[int]int   `json:"leaders"` // leader -> signatures it led
	Answered   []int         `json:"answered"`
	Unanswered []int         `json:"unanswered"`
}

// cosignAgg folds one validator's cosign events as they stream by.
type cosignAgg struct {
	s              ThresholdSummary
	quorum, nonces samples
}

func (z *Summarizer) cosign(ev *eventlog.Event) {
	c := ev.Cosign
	if c == nil || ev.Validator == "" || c.Cosigners <= 0 {
		return
	}
	a := z.cosigns[ev.Validator]
	if a == nil {
		a = &cosignAgg{s: ThresholdSummary{Model: c.Model, Cosigners: c.Cosigners, Threshold: c.Threshold,
			Leaders: map[int]int{}, Answered: make([]int, c.Cosigners), Unanswered: make([]int, c.Cosigners)}}
		z.cosigns[ev.Validator] = a
	}
	s := &a.s
	s.Signatures++
	if c.Leader > 0 {
		s.Leaders[c.Leader]++
	}
	count := func(into []int, k int) {
		if k >= 1 && k <= len(into) {
			into[k-1]++
		}
	}
	for _, f := range c.Failed {
		count(s.Unanswered, f.Cosigner)
	}
	if ev.Error != "" {
		s.NoQuorum++
		return
	}
	for _, k := range c.Answered {
		count(s.Answered, k)
	}
	a.quorum.add(c.QuorumMS)
	a.nonces.add(c.NonceMS)
}

// summarizeThreshold is summary.json's threshold: one entry per validator
// with a threshold signer; nil without any.
func (z *Summarizer) summarizeThreshold() map[string]*ThresholdSummary {
	if len(z.cosigns) == 0 {
		return nil
	}
	out := make(map[string]*ThresholdSummary, len(z.cosigns))
	for name, a := range z.cosigns {
		s := a.s
		if a.quorum.len() > 0 {
			q, n := a.quorum.stats(), a.nonces.stats()
			s.QuorumMS, s.NonceMS = &q, &n
		}
		out[name] = &s
	}
	return out
}

// thresholdNote explains the threshold tables, and what is a MODEL.
const thresholdNote = "a MODEL of the protocol: the message rounds (nonces to every other cosigner, then partial signatures from the quorum), the links and timeouts are real, the threshold cryptography is not (the node's signature is made with one full key); " +
	"quorum = from the leader's receipt of the request until the threshold's partial signatures were in, ms; a cosigner's answered = quorums it was in, unanswered = rounds it was asked in and did not answer"

// thresholdTables are the threshold-signer sections of the text table,
// summary.md and report.html: one row per signer, one per cosigner.
type thresholdTables struct {
	Note      string
	Signers   textTable
	Cosigners textTable
}

func (t *thresholdTables) Tables() []textTable { return []textTable{t.Signers, t.Cosigners} }

// ID and Title head the section in report.html.
func (t *thresholdTables) ID() string    { return "threshold" }
func (t *thresholdTables) Title() string { return "Threshold signers (MODEL)" }

func newThresholdTables(s *Summary) *thresholdTables {
	if len(s.Threshold) == 0 {
		return nil
	}
	t := &thresholdTables{Note: thresholdNote,
		Signers:   textTable{Head: []string{"validator", "model", "threshold", "signatures", "no quorum", "nonce round p50/p99", "quorum p50", "quorum p95", "quorum max", "leaders"}},
		Cosigners: textTable{Head: []string{"validator", "cosigner", "answered", "unanswered"}}}
	names := make([]string, 0, len(s.Threshold))
	for name := range s.Threshold {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		th := s.Threshold[name]
		q, n := statsOrZero(th.QuorumMS), statsOrZero(th.NonceMS)
		ms := func(x float64) string {
			if q.Count == 0 {
				return "-"
			}
			return formatLatency(x)
		}
		leaders := make([]int, 0, len(th.Leaders))
		for k := range th.Leaders {
			leaders = append(leaders, k)
		}
		slices.Sort(leaders)
		var lead []string
		for _, k := range leaders {
			lead = append(lead, fmt.Sprintf("%d: %d", k, th.Leaders[k]))
		}
		t.Signers.Rows = append(t.Signers.Rows, []string{name, th.Model, fmt.Sprintf("%d of %d", th.Threshold, th.Cosigners),
			strconv.Itoa(th.Signatures), strconv.Itoa(th.NoQuorum), p50p99(n), ms(q.P50), ms(q.P95), ms(q.Max), orDash(strings.Join(lead, ", "))})
		for k := 1; k <= th.Cosigners && k <= len(th.Answered) && k <= len(th.Unanswered); k++ {
			t.Cosigners.Rows = append(t.Cosigners.Rows, []string{name, strconv.Itoa(k), strconv.Itoa(th.Answered[k-1]), strconv.Itoa(th.Unanswered[k-1])})
		}
	}
	return t
}
