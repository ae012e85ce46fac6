package results

import (
	"github.com/valnet/valnet/results/eventlog"
	"math"
	"slices"
	"time"
)

// chain is what the stream says about committed heights, one compact row
// per block: the one place that defines "committed", "commit round" and
// "block interval", which summary.json, heights.csv and report.html must
// agree on. It holds numbers, not events, so a summary keeps it for a
// whole run.
type chain struct {
	rows    []blockRow      // one per committed height, in arrival order (sorted by height once done)
	dense   []int32         // height-denseBase -> 1 + index in rows, 0: none
	sparse  map[int64]int32 // heights far from the others
	base    int64
	pool    []int32 // name ids of rows' lists
	heights []int64 // committed heights, ascending (set by done)
	target  int64   // run_start's heights; 0: none
	names   *names
}

// blockRow is one committed height: its block event (the first one seen)
// and what the summary derives for it. Absent and nil describe the
// previous height (this block's LastCommit); quorum this height.
type blockRow struct {
	height     int64
	t, bt      stamp // block event time; header time (noStamp: none)
	proposer   int32 // name id
	txs, bytes int32
	lcRound    int32 // LastCommitRound: the previous height's commit round
	stepCommit int32 // lowest round of a step "commit" at this height, noRound: none
	absent     nameList
	nils       nameList
	quorum     nameList // quorum_critical of this height, once judged
}

// nameList is a run of chain.pool.
type nameList struct{ off, n uint32 }

// noRound marks an unknown round.
const noRound = math.MinInt32

// stamp is an instant as nanoseconds since the Unix epoch, exact for the
// years 1678 to 2262 (valnet's events); zeroStamp is the zero time.Time
// (an event without a time) and noStamp no time at all.
type stamp int64

const (
	noStamp   stamp = math.MinInt64
	zeroStamp stamp = math.MinInt64 + 1
)

func stampOf(t time.Time) stamp {
	if t.IsZero() {
		return zeroStamp
	}
	return stamp(t.UnixNano())
}

func (s stamp) time() time.Time {
	if s == zeroStamp || s == noStamp {
		return time.Time{}
	}
	return time.Unix(0, int64(s)).UTC()
}

func emptyChain(n *names) *chain { return &chain{names: n} }

// addBlock records ev, a block event, unless its height already has one:
// only the first committing node should report a block; if a height is
// reported twice the first report wins, since its time is the one closest
// to the actual commit. It returns the row, and whether it is new.
func (c *chain) addBlock(ev *eventlog.Event) (*blockRow, bool) {
	if r := c.row(ev.Height); r != nil {
		return r, false
	}
	r := blockRow{height: ev.Height, t: stampOf(ev.Time), bt: noStamp, proposer: c.names.id(ev.Proposer),
		txs: int32(ev.Txs), bytes: int32(ev.BlockBytes), lcRound: ev.LastCommitRound, stepCommit: noRound,
		absent: c.list(ev.LastCommitAbsent), nils: c.list(ev.LastCommitNil)}
	if ev.BlockTime != nil {
		r.bt = stampOf(*ev.BlockTime)
	}
	c.rows = append(c.rows, r)
	c.index(ev.Height, len(c.rows))
	return &c.rows[len(c.rows)-1], true
}

func (c *chain) list(names []string) nameList {
	l := nameList{off: uint32(len(c.pool)), n: uint32(len(names))}
	for _, n := range names {
		c.pool = append(c.pool, c.names.id(n))
	}
	return l
}

// setList replaces l with ids (a height's quorum).
func (c *chain) setList(l *nameList, ids []int32) {
	*l = nameList{off: uint32(len(c.pool)), n: uint32(len(ids))}
	c.pool = append(c.pool, ids...)
}

// names of a list, in order.
func (c *chain) namesOf(l nameList) []string {
	if l.n == 0 {
		return nil
	}
	out := make([]string, l.n)
	for i, id := range c.pool[l.off : l.off+l.n] {
		out[i] = c.names.name(id)
	}
	return out
}

// index maps height to 1 + its row, densely while heights are near one
// another.
func (c *chain) index(h int64, i int) {
	if i == 1 && c.dense == nil && c.sparse == nil {
		c.base = h
	}
	if off := h - c.base; off >= 0 && off < int64(len(c.dense))+1<<16 {
		for int64(len(c.dense)) <= off {
			c.dense = append(c.dense, 0)
		}
		c.dense[off] = int32(i)
		return
	}
	if c.sparse == nil {
		c.sparse = map[int64]int32{}
	}
	c.sparse[h] = int32(i)
}

// row of height h, or nil when h has no block.
func (c *chain) row(h int64) *blockRow {
	i := int32(0)
	if off := h - c.base; off >= 0 && off < int64(len(c.dense)) {
		i = c.dense[off]
	}
	if i == 0 && c.sparse != nil {
		i = c.sparse[h]
	}
	if i == 0 {
		return nil
	}
	return &c.rows[i-1]
}

// done sorts the rows by height once the stream has ended.
func (c *chain) done() {
	slices.SortFunc(c.rows, func(a, b blockRow) int { return cmpInt(a.height, b.height) })
	c.dense, c.sparse, c.heights = nil, nil, make([]int64, len(c.rows))
	if len(c.rows) > 0 {
		c.base = c.rows[0].height
	}
	for i := range c.rows {
		c.heights[i] = c.rows[i].height
		c.index(c.rows[i].height, i+1)
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// first and last committed heights; 0 when nothing was committed (after
// done).
func (c *chain) first() int64 {
	if len(c.heights) == 0 {
		return 0
	}
	return c.heights[0]
}

func (c *chain) last() int64 {
	if len(c.heights) == 0 {
		return 0
	}
	return c.heights[len(c.heights)-1]
}

// next returns the row of height h+1, whose LastCommit describes how h was
// committed, or nil if h+1 was not committed (so far).
func (c *chain) next(h int64) *blockRow { return c.row(h + 1) }

// lastCommit returns the row whose LastCommit says who signed h (block
// h+1), or nil when h is not judged: h+1 was not committed during the run,
// or h is beyond the target. The run waits for the block after the
// target and stops; a later block is only there because the run had not
// stopped yet, so nobody was waited for and nothing is counted there.
func (c *chain) lastCommit(h int64) *blockRow {
	if c.target > 0 && h > c.target {
		return nil
	}
	return c.next(h)
}

// commitRound is the round in which height h was decided. The authoritative
// source is block h+1's LastCommit round (what the chain itself recorded).
// The last height of a run has no h+1 block, so we fall back to the lowest
// round of any node's step "commit" at h: CometBFT reports a node's current
// round there, which is never below the decision round but may be above it
// for a node that had already moved on, so the lowest is the best estimate.
// Without either source the round is unknown (ok=false) and the height is
// left out of round statistics rather than guessed as 0. stepCommit is h's
// lowest step-commit round when h is still being judged (its row's is set
// once it has been).
func (c *chain) commitRound(h int64, stepCommit int32) (round int32, ok bool) {
	if nb := c.next(h); nb != nil {
		return nb.lcRound, true
	}
	if r := c.row(h); r != nil && r.stepCommit != noRound {
		return r.stepCommit, true
	}
	return stepCommit, stepCommit != noRound
}

// intervalMS is the observed time between the commits of h-1 and h: the
// difference of their block events' times, as seen by the run (not header
// times, which CometBFT derives from votes). ok=false when h-1 is missing.
func (c *chain) intervalMS(h int64) (ms float64, ok bool) {
	b, prev := c.row(h), c.row(h-1)
	if b == nil || prev == nil {
		return 0, false
	}
	return float64(b.t.time().Sub(prev.t.time()).Nanoseconds()) / 1e6, true
}

// names interns the names of a stream (validators and nodes, which share
// a namespace: a validator's node has its name).
type names struct {
	ids  map[string]int32
	list []string
}

func newNames() *names { return &names{ids: map[string]int32{}} }

func (n *names) id(s string) int32 {
	if i, ok := n.ids[s]; ok {
		return i
	}
	i := int32(len(n.list))
	n.ids[s] = i
	n.list = append(n.list, s)
	return i
}

// lookup is s's id without interning it; ok false when s was never seen.
func (n *names) lookup(s string) (int32, bool) {
	i, ok := n.ids[s]
	return i, ok
}

func (n *names) name(id int32) string { return n.list[id] }
