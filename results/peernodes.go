package results

import (
	"fmt"
	"time"

	"github.com/valnet/valnet/results/eventlog"
)

// PeerNodeSummary is one node that is not a validator (a full node, a seed,
// a sentry): what it saw of the chain. It votes nothing, so it has no
// missed precommits; its figures are the heights it committed and how
// late each block reached it.
type PeerNodeSummary struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	SentryOf string `json:"sentry_of,omitempty"`
	// HeightsCommitted counts the heights it reached its commit step for,
	// LastHeight the highest.
	HeightsCommitted int   `json:"heights_committed"`
	LastHeight       int64 `json:"last_height"`
	// CommitLagMS is, per height it committed, the time from the first
	// node's commit of that height (the block event) to its own commit
	// step, in ms (event time): how late blocks reach it.
	CommitLagMS LatencyStats `json:"commit_lag_ms"`
}

// peerNodes follows the non-validator nodes' commit steps.
type peerNodes struct {
	order   []string
	byName  map[string]*peerNodeAcc
	blockAt map[int64]time.Time // height -> the block event's time
	pending map[int64][]pendingCommit
}

type peerNodeAcc struct {
	info      eventlog.PeerNodeInfo
	committed map[int64]bool
	last      int64
	lag       samples
}

type pendingCommit struct {
	acc *peerNodeAcc
	at  time.Time
}

func (p *peerNodes) start(ev *eventlog.Event) {
	p.byName = map[string]*peerNodeAcc{}
	p.blockAt = map[int64]time.Time{}
	p.pending = map[int64][]pendingCommit{}
	for _, n := range ev.Nodes {
		p.order = append(p.order, n.Name)
		p.byName[n.Name] = &peerNodeAcc{info: n, committed: map[int64]bool{}}
	}
}

func (p *peerNodes) observe(ev *eventlog.Event) {
	if len(p.byName) == 0 {
		return
	}
	switch {
	case ev.Kind == eventlog.KindBlock:
		if _, seen := p.blockAt[ev.Height]; seen {
			return
		}
		p.blockAt[ev.Height] = ev.Time
		for _, c := range p.pending[ev.Height] {
			c.acc.lag.add(0) // it committed before the block was reported: no later
		}
		delete(p.pending, ev.Height)
	case ev.Kind == eventlog.KindStep && ev.Step == "commit":
		a := p.byName[ev.Node]
		if a == nil || a.committed[ev.Height] {
			return
		}
		a.committed[ev.Height] = true
		a.last = max(a.last, ev.Height)
		if at, ok := p.blockAt[ev.Height]; ok {
			a.lag.add(max(float64(ev.Time.Sub(at).Microseconds())/1000, 0))
		} else {
			p.pending[ev.Height] = append(p.pending[ev.Height], pendingCommit{a, ev.Time})
		}
	}
}

func (p *peerNodes) result() []PeerNodeSummary {
	var out []PeerNodeSummary
	for _, name := range p.order {
		a := p.byName[name]
		out = append(out, PeerNodeSummary{Name: name, Role: a.info.Role, SentryOf: a.info.SentryOf,
			HeightsCommitted: len(a.committed), LastHeight: a.last, CommitLagMS: a.lag.stats()})
	}
	return out
}

// peerNodeTables is the nodes section of the text table, summary.md and
// report.html; nil without non-validator nodes.
type peerNodeTables struct {
	Note  string
	Nodes textTable
}

const peerNodeNote = "they vote nothing: heights they committed, and commit lag = ms from the first node's commit of a height to its own, p50/p95"

func newPeerNodeTables(s *Summary) *peerNodeTables {
	if len(s.Nodes) == 0 {
		return nil
	}
	t := &peerNodeTables{Note: peerNodeNote, Nodes: textTable{Head: []string{"node", "role", "heights", "commit lag"}}}
	for _, n := range s.Nodes {
		t.Nodes.Rows = append(t.Nodes.Rows, []string{n.Name, peerRole(n),
			fmt.Sprintf("%d (to %d)", n.HeightsCommitted, n.LastHeight), p50p95(n.CommitLagMS)})
	}
	return t
}

func (t *peerNodeTables) Tables() []textTable { return []textTable{t.Nodes} }

// ID and Title head the section in report.html.
func (t *peerNodeTables) ID() string    { return "nodes" }
func (t *peerNodeTables) Title() string { return "Nodes that are not validators" }

// peerRole is "sentry of v-1", "full", "seed".
func peerRole(n PeerNodeSummary) string {
	if n.SentryOf != "" {
		return n.Role + " of " + n.SentryOf
	}
	return n.Role
}

func p50p95(st LatencyStats) string {
	if st.Count == 0 {
		return "-"
	}
	return formatLatency(st.P50) + "/" + formatLatency(st.P95)
}
