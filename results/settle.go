package results

import (
	"time"
)

// A Summarizer judges a height (its missed precommits, late votes,
// round changes, quorum and halt) once the stream has moved on, and then
// drops what it held of it: that is what keeps its memory flat in the
// number of heights. "Moved on" is a guess about what is still to come;
// the watch checks it against what does come. When something arrives that
// a judged height would have looked at, the summary of that pass may not
// be what the whole stream says, and the Summarizer says so (Retry): the
// same stream fed again with a plan drawn from the first pass (a later
// settle, the facts the first pass learned, or, as a last resort, nothing
// judged before the end) gives the summary the whole stream gives, the
// same one every time.

// Settling: height H is judged once all of these hold, lowest height
// first (a height only after every lower one).
const (
	// settleHorizon: the block of H+settleHorizon has been seen.
	settleHorizon = 2
	// settleSlack: the stream has reached settleSlack past H's last event
	// and its next block (what comes late comes late by little: a signer's
	// queue, a host sample covering the last second).
	settleSlack = 2 * time.Second
	// settleLagMax: no node is still at H or below, and no signature
	// requested before H's end is still unanswered, unless H is this many
	// heights behind the highest block (a node that stopped for good, a
	// signer that hangs). A node that lags behind and catches up later
	// sends events of heights the others have long committed.
	settleLagMax = 128
	// maxPasses bounds the passes over a stream: the last keeps every
	// height to the end, which cannot miss anything.
	maxPasses = 4
)

// settlePlan is how a Summarizer settles, and what an earlier pass over the
// same stream learned.
type settlePlan struct {
	pass    int
	horizon int64 // settleHorizon, or more after a late event
	lagMax  int64
	slack   time.Duration
	keepAll bool // judge nothing before the end
	// loadAll: keep every transaction to the end (blocks out of order).
	loadAll bool
	// known holds what the previous pass learned by its end.
	known *facts
}

func defaultPlan() settlePlan {
	return settlePlan{horizon: settleHorizon, lagMax: settleLagMax, slack: settleSlack}
}

// facts are what only the end of a stream tells, yet judging a height
// may read: the halt threshold and the network's start, and whether the
// stream has vote events, consensus events, node ups, and which
// validators' signatures were requested.
type facts struct {
	threshold  time.Duration
	netStart   time.Time
	flags      [nFacts]bool
	requesters map[string]bool
	// end is the stream's latest event time: how long a request still
	// unanswered at the end had been out (index.gaveUp).
	end time.Time
}

// Facts a height's judgement may read before the end.
const (
	factVote   = iota // the stream has vote events
	factMark          // some node has a new_round or step event
	factNodeUp        // the stream has node_up events
	nFacts
)

// Look-ups across heights, by what they read.
const (
	lookSpans   = iota // signatures in flight
	lookMarks          // where each node was
	lookForeign        // votes from other nodes
	lookHost           // host samples
	lookFault          // faults and node downs
	nLooks
)

// watch notices what a Summarizer's settling missed.
type watch struct {
	front int64 // the highest block so far

	// The latest time each kind of look-up has read, over the heights
	// judged so far.
	looked    [nLooks]time.Time
	hasLooked [nLooks]bool
	// The height being judged, and the latest time its look-ups read.
	judging       bool
	q             time.Time
	hasQ          bool
	judged        []judgedHeight // the last ones judged, in order (ascending)
	forgot        bool           // judged lost its first ones
	bound         time.Time      // what the index dropped was older
	pruned        bool
	needHorizon   int64 // a horizon that would have kept open every height something late arrived for
	keepAll       bool  // something late that no horizon mends
	usedFacts     [nFacts]bool
	usedRequester map[int32]bool // validators judged as having no sign_request
	changed       bool           // a fact a judgement read changed after it
	why           string         // the first miss, for tests
}

type judgedHeight struct {
	height int64
	q      stamp // noStamp: no look-up
}

// judgedKept bounds the judged heights the watch remembers: a late
// arrival that reaches further back asks for a pass that keeps all.
const judgedKept = 1024

func (w *watch) miss(why string) {
	if w.why == "" {
		w.why = why
	}
}

// lateFor: an event of judged height h arrived.
func (w *watch) lateFor(h int64, why string) {
	w.needHorizon = max(w.needHorizon, w.front-h+1)
	w.miss(why)
}

// lateAt: something of time t arrived that the look-ups of the heights
// judged so far, back to one that read t or later, may have needed.
func (w *watch) lateAt(kind int, t time.Time, why string) {
	if !w.hasLooked[kind] || t.After(w.looked[kind]) {
		return
	}
	lowest, quiet := int64(0), 0
	found := false
	st := stampOf(t)
	i := len(w.judged) - 1
	for ; i >= 0 && quiet < 256; i-- {
		j := w.judged[i]
		if j.q != noStamp && j.q >= st {
			lowest, found, quiet = j.height, true, 0
		} else {
			quiet++
		}
	}
	if !found || i < 0 && quiet < 256 && w.forgot {
		w.keepAll = true
	} else {
		w.needHorizon = max(w.needHorizon, w.front-lowest+1)
	}
	w.miss(why)
}

func (w *watch) span(began time.Time) {
	w.lateAt(lookSpans, began, "a signature in flight arrived late")
}
func (w *watch) mark(t time.Time)    { w.lateAt(lookMarks, t, "a consensus event arrived late") }
func (w *watch) foreign(t time.Time) { w.lateAt(lookForeign, t, "a vote arrived late") }
func (w *watch) fault(t time.Time)   { w.lateAt(lookFault, t, "a fault arrived late") }
func (w *watch) host(t time.Time) {
	w.lateAt(lookHost, t.Add(-hostSamplePeriod), "a host sample arrived late")
}

// fact: a fact turned true; requester: v's first sign_request.
func (w *watch) fact(f int) {
	if w.usedFacts[f] {
		w.changed = true
		w.miss("a fact changed after a height read it")
	}
}

func (w *watch) requester(v int32) {
	if w.usedRequester[v] {
		w.changed = true
		w.miss("a sign_request came after a height read that there was none")
	}
}

// look records a look-up of kind over [from, to] by the height being
// judged. One that reaches back before what the index dropped cannot be
// answered.
func (w *watch) look(kind int, from, to time.Time) {
	if !w.judging {
		return
	}
	if w.pruned && from.Before(w.bound) && kind != lookFault {
		w.keepAll = true
		w.miss("a look-up reached back before what was dropped")
	}
	if !w.hasLooked[kind] || to.After(w.looked[kind]) {
		w.looked[kind], w.hasLooked[kind] = to, true
	}
	if !w.hasQ || to.After(w.q) {
		w.q, w.hasQ = to, true
	}
}

func (w *watch) begin() { w.judging, w.hasQ = true, false }

func (w *watch) end(h int64) {
	q := noStamp
	if w.hasQ {
		q = stampOf(w.q)
	}
	if len(w.judged) == judgedKept {
		w.judged, w.forgot = append(w.judged[:0], w.judged[judgedKept/2:]...), true
	}
	w.judged = append(w.judged, judgedHeight{h, q})
	w.judging = false
}

func (w *watch) pruneTo(bound time.Time) { w.bound, w.pruned = bound, true }

// missed reports whether the pass may not be exact.
func (w *watch) missed() bool { return w.keepAll || w.needHorizon > 0 || w.changed }

// looked records a look-up of the index (see watch.look).
func (x *index) looked(kind int, from, to time.Time) { x.watch.look(kind, from, to) }

// has reads a fact, from the plan when an earlier pass knows it.
func (x *index) has(f int) bool {
	if x.known != nil {
		return x.known.flags[f]
	}
	var v bool
	switch f {
	case factVote:
		v = x.anyVote
	case factMark:
		v = x.anyMark
	case factNodeUp:
		v = len(x.ups) > 0
	}
	if !v {
		x.watch.usedFacts[f] = true
	}
	return v
}

// requested reports whether validator v's signatures were requested
// (sign_request events) anywhere in the stream.
func (x *index) requested(v int32) bool {
	if x.known != nil {
		return x.known.requesters[x.names.name(v)]
	}
	if x.requesters[v] {
		return true
	}
	if x.watch.usedRequester == nil {
		x.watch.usedRequester = map[int32]bool{}
	}
	x.watch.usedRequester[v] = true
	return false
}

// downDuring is v's down window that overlaps [from, to], if any.
func (x *index) downDuring(v string, from, to time.Time) *downWindow {
	x.looked(lookFault, from, to)
	return x.downs.downDuring(v, from, to)
}
