package results

import (
	"github.com/valnet/valnet/results/eventlog"
	"slices"
	"time"

	"github.com/valnet/valnet/internal/signfail"
)

// hr keys a (height, round).
type hr struct {
	height int64
	round  int32
}

// index holds the per-node observations that the consensus analysis
// (missed-precommit causes, late votes, round-change causes, halt causes)
// looks up. It holds them by height (hdata) only while a height is being
// judged: the Summarizer judges a height once the stream has moved on
// (settle) and drops it. What the analysis looks up across heights, by
// time (each signer's signatures in flight, where each node was, votes
// from other nodes, host samples), is kept only as far back as a height
// still to be judged may look (see prune); faults and node ups are few
// and kept whole.
//
// Every "first"/"earliest" is by event time; ties keep the first in
// stream order.
type index struct {
	latest time.Time // the latest event time seen: how long an unanswered request has been out
	// undecided: some unanswered request was judged not given up on yet
	// (gaveUp), the earliest requested at undecidedBegan.
	undecided      bool
	undecidedBegan time.Time
	names          *names
	power          []int64 // run_start voting power by name id
	totalPower     int64
	valIDs         []int32 // run_start's validators, in order
	vals           []string

	heights  map[int64]*hdata // heights still to be judged
	order    []int64          // their heights, ascending
	judgedTo int64            // every height up to this one is judged
	judged   bool
	known    *facts // what an earlier pass learned (nil: none)

	spans  map[int32][]sigSpan // by validator: signatures, sorted (see addSpan)
	marks  map[int32]*nodeMarks
	hosts  []hostMark   // host samples from bound on, stream order
	faults []faultEvent // fault events, stream order
	downs  NodeDowns    // when each validator's node was down
	ups    []time.Time  // node_up events, stream order

	// foreign holds the times of votes a node received from another
	// validator, from bound on (foreignVote).
	foreign []stamp

	// bound: everything the index dropped was older than this; a look-up
	// further back cannot be answered (see watch).
	bound time.Time
	watch *watch

	anyVote, anyMark bool
	requesters       map[int32]bool // validators with a sign_request

	// noVotes: the stream holds no vote events by design (a model run with
	// vote_events false), so who received which vote cannot be told; a
	// stream of real nodes without them is judged as before.
	noVotes bool
	emptyID int32 // the name ""
}

// hdata is what the index holds of one height while it is judged.
type hdata struct {
	height      int64
	rounds      map[int32]*rdata
	commitSteps []commitStep        // step "commit" events, stream order
	stepCommit  int32               // lowest round of a step "commit", noRound: none
	signs       map[int32][]signRec // node-side sign events by validator, stream order
	requests    map[int32][]request // sign_request events by validator, stream order
	votes       []vote              // vote events, stream order
	byRound     map[int32][]int32   // votes' indexes by round, built on first use
	blockID     string              // the block event's
	strs        map[string]string   // interned block ids and phases
	low         time.Time           // the earliest time of its anchoring events (see anchor)
	anchored    bool
	maxT        time.Time // latest event time seen of this height

	// What the Summarizer keeps for the height beyond the index.
	turns    map[[2]int32]bool // (round, proposer) named by new_round
	made     map[[2]int32]bool // (round, validator) of a successful proposal signature
	groups   map[signGroup]*dsGroup
	nodeSigs []nodeSig         // successful node-side signatures, stream order
	signer   map[sigOf]float64 // a remote signer's latency of each signature (the last one)

	// pending: sign_requests no sign event has answered yet, by
	// (validator, round, phase), for settling only.
	pending  map[signGroup][]time.Time
	nPending int
}

// rdata is one round of a height.
type rdata struct {
	start       time.Time // earliest new_round
	started     bool
	proposer    int32 // named by the first new_round that names one; -1: none
	nodes       map[int32]bool
	prevoteStep map[int32]time.Time // earliest step "prevote" per node
	proposalAt  map[int32]time.Time // earliest complete proposal per node
	marks       map[int32]time.Time // earliest new_round or step per node
}

type commitStep struct {
	node  int32
	round int32
	t     time.Time
}

// signRec is a node-side sign event.
type signRec struct {
	phase     string
	round     int32
	t         time.Time
	latencyMS float64
	blockID   string
	err       string
	failure   string // why err: internal/signfail ("" with no err)
	seq       int64  // stream position
}

type request struct {
	phase string
	round int32
	t     time.Time
	seq   int64
}

// vote is a vote event.
type vote struct {
	node, validator int32
	round           int32
	phase           string
	blockID         string
	t               time.Time
}

// signGroup keys double-sign groups: (validator, round, phase) of a height.
type signGroup struct {
	validator int32
	round     int32
	phase     string
}

type dsGroup struct {
	seq int64    // stream position of its first signature
	ids []string // distinct block ids, in signing order
}

// sigOf identifies one signature of a height: the same one seen from both
// ends of a remote-signer hop.
type sigOf struct {
	signGroup
	blockID string
}

// nodeMarks is where one node's consensus was (its new_round and step
// events), for heightAt: the highest height of its marks older than the
// index's bound, and for each height since, its earliest mark.
type nodeMarks struct {
	folded    int64
	hasFolded bool
	recent    []heightMark
	top       int64 // the highest height of all its marks
}

type heightMark struct {
	height int64
	t      time.Time
}

// faultEvent is a fault event as the analysis reads it.
type faultEvent struct {
	t                                time.Time
	action, validator, state, detail string
}

// phaseName interns the phases.
func phaseName(p string) string {
	for _, ph := range phases {
		if ph == p {
			return ph
		}
	}
	return p
}

func emptyIndex(n *names, w *watch) *index {
	return &index{names: n, heights: map[int64]*hdata{}, spans: map[int32][]sigSpan{}, marks: map[int32]*nodeMarks{},
		requesters: map[int32]bool{}, watch: w, emptyID: n.id("")}
}

// start takes run_start's validators and model.
func (x *index) start(ev *eventlog.Event) {
	x.noVotes = noVoteEvents(ev)
	seen := map[string]bool{}
	for _, v := range ev.Validators {
		if seen[v.Name] {
			continue
		}
		seen[v.Name] = true
		id := x.names.id(v.Name)
		x.grow(id)
		x.power[id] = v.Power
		x.totalPower += v.Power
		x.valIDs = append(x.valIDs, id)
		x.vals = append(x.vals, v.Name)
	}
}

func (x *index) grow(id int32) {
	for int32(len(x.power)) <= id {
		x.power = append(x.power, 0)
	}
}

// powerOf is the run_start voting power of a name id (0 for others).
func (x *index) powerOf(id int32) int64 {
	if int(id) < len(x.power) {
		return x.power[id]
	}
	return 0
}

// height is h's data, made on first use.
func (x *index) height(h int64) *hdata {
	hd := x.heights[h]
	if hd == nil {
		hd = &hdata{height: h, rounds: map[int32]*rdata{}, stepCommit: noRound, signs: map[int32][]signRec{},
			requests: map[int32][]request{}, strs: map[string]string{}, turns: map[[2]int32]bool{},
			made: map[[2]int32]bool{}, groups: map[signGroup]*dsGroup{}}
		x.heights[h] = hd
		i, _ := slices.BinarySearch(x.order, h)
		x.order = slices.Insert(x.order, i, h)
	}
	return hd
}

// isJudged reports whether height h was judged (and dropped).
func (x *index) isJudged(h int64) bool { return x.judged && h <= x.judgedTo }

// open is h's data for an event of height h, or nil when h was judged
// already: the event came too late for this pass (see watch).
func (x *index) open(h int64) *hdata {
	if x.isJudged(h) {
		x.watch.lateFor(h, "an event of a judged height arrived")
		return nil
	}
	return x.height(h)
}

// drop forgets height h, judged: it must be the lowest still held.
func (x *index) drop(h int64) {
	delete(x.heights, h)
	if len(x.order) > 0 && x.order[0] == h {
		x.order = x.order[1:]
		if cap(x.order) > 2*len(x.order)+64 {
			x.order = slices.Clone(x.order) // let the judged ones go
		}
	}
	x.judgedTo, x.judged = h, true
}

// saw notes the time of an event of the height.
func (hd *hdata) saw(t time.Time) {
	if t.After(hd.maxT) {
		hd.maxT = t
	}
}

// lowAnchor is the earliest anchor of the heights still to be judged:
// nothing older can be looked up by them (see prune).
func (x *index) lowAnchor() (time.Time, bool) {
	var low time.Time
	ok := false
	for _, hd := range x.heights {
		if hd.anchored && (!ok || hd.low.Before(low)) {
			low, ok = hd.low, true
		}
	}
	return low, ok
}

// lowestNode is the lowest height any node has reached (its highest
// new_round or step).
func (x *index) lowestNode() (int64, bool) {
	var low int64
	ok := false
	for _, m := range x.marks {
		if !ok || m.top < low {
			low, ok = m.top, true
		}
	}
	return low, ok
}

// pendingBefore reports whether a signature requested by t is still
// unanswered.
func (x *index) pendingBefore(t time.Time) bool {
	for _, h := range x.order {
		hd := x.heights[h]
		if hd.nPending == 0 {
			continue
		}
		for _, ts := range hd.pending {
			for _, at := range ts {
				if !at.After(t) {
					return true
				}
			}
		}
	}
	return false
}

func (hd *hdata) round(r int32) *rdata {
	rd := hd.rounds[r]
	if rd == nil {
		rd = &rdata{proposer: -1, nodes: map[int32]bool{}, prevoteStep: map[int32]time.Time{},
			proposalAt: map[int32]time.Time{}, marks: map[int32]time.Time{}}
		hd.rounds[r] = rd
	}
	return rd
}

// str interns s within the height (block ids repeat in every vote).
func (hd *hdata) str(s string) string {
	if v, ok := hd.strs[s]; ok {
		return v
	}
	hd.strs[s] = s
	return s
}

// anchor notes t, the time of an event that the height's look-ups start
// from (its new_round, step and block events, a halt's start): how far
// back the index must keep what it holds across heights.
func (hd *hdata) anchor(t time.Time) {
	if !hd.anchored || t.Before(hd.low) {
		hd.low = t
	}
	hd.anchored = true
}

func earliest(m map[int32]time.Time, k int32, t time.Time) {
	if old, ok := m[k]; !ok || t.Before(old) {
		m[k] = t
	}
}

// observe indexes one event; seq is its stream position.
func (x *index) observe(ev *eventlog.Event, seq int64) {
	if ev.Time.After(x.latest) {
		x.latest = ev.Time
	}
	switch ev.Kind {
	case eventlog.KindStep, eventlog.KindNewRound:
		x.observeRound(ev)
	case eventlog.KindSign:
		if ev.Side != eventlog.SideSigner && ev.Validator != "" {
			v := x.names.id(ev.Validator)
			x.addSpan(v, sigSpan{phase: phaseName(ev.Phase), height: ev.Height, round: ev.Round,
				began: ev.Time.Add(-msDuration(ev.LatencyMS)), end: ev.Time, latencyMS: ev.LatencyMS, seq: seq})
			hd := x.open(ev.Height)
			if hd == nil {
				return
			}
			hd.saw(ev.Time)
			s := signRec{phase: hd.str(ev.Phase), round: ev.Round, t: ev.Time, latencyMS: ev.LatencyMS,
				blockID: hd.str(ev.BlockID), err: ev.Error, seq: seq}
			if ev.Error != "" {
				s.failure = signfail.Of(ev.Failure)
			}
			hd.signs[v] = append(hd.signs[v], s)
			if hd.nPending > 0 {
				k := signGroup{v, ev.Round, s.phase}
				ts := hd.pending[k]
				if i := slices.IndexFunc(ts, func(t time.Time) bool { return !ev.Time.Before(t) }); i >= 0 {
					hd.pending[k] = slices.Delete(ts, i, i+1)
					hd.nPending--
				}
			}
		}
	case eventlog.KindSignRequest:
		if ev.Validator != "" {
			v := x.names.id(ev.Validator)
			if !x.requesters[v] {
				x.requesters[v] = true
				x.watch.requester(v)
			}
			hd := x.open(ev.Height)
			if hd == nil {
				return
			}
			hd.saw(ev.Time)
			r := request{phase: hd.str(ev.Phase), round: ev.Round, t: ev.Time, seq: seq}
			hd.requests[v] = append(hd.requests[v], r)
			if hd.pending == nil {
				hd.pending = map[signGroup][]time.Time{}
			}
			k := signGroup{v, ev.Round, r.phase}
			hd.pending[k] = append(hd.pending[k], ev.Time)
			hd.nPending++
		}
	case eventlog.KindHost:
		if ev.Host != nil {
			x.watch.host(ev.Time)
			x.hosts = append(x.hosts, hostMark{t: ev.Time, sample: *ev.Host})
		}
	case eventlog.KindProposal:
		if hd := x.open(ev.Height); hd != nil {
			hd.saw(ev.Time)
			earliest(hd.round(ev.Round).proposalAt, x.names.id(ev.Node), ev.Time)
		}
	case eventlog.KindVote:
		if !x.anyVote {
			x.anyVote = true
			x.watch.fact(factVote)
		}
		if ev.Node != ev.Validator {
			x.watch.foreign(ev.Time)
			x.foreign = append(x.foreign, stampOf(ev.Time))
		}
		if hd := x.open(ev.Height); hd != nil {
			hd.saw(ev.Time)
			vt := vote{node: x.names.id(ev.Node), validator: x.names.id(ev.Validator), round: ev.Round,
				phase: phaseName(ev.Phase), blockID: hd.str(ev.BlockID), t: ev.Time}
			hd.votes = append(hd.votes, vt)
			hd.byRound = nil
		}
	case eventlog.KindFault:
		x.watch.fault(ev.Time)
		x.downs.Observe(ev)
		x.faults = append(x.faults, faultEvent{t: ev.Time, action: ev.Action, validator: ev.Validator, state: ev.State, detail: ev.Detail})
	case eventlog.KindNodeUp:
		if len(x.ups) == 0 {
			x.watch.fact(factNodeUp)
		}
		x.ups = append(x.ups, ev.Time)
	}
}

// observeRound indexes a new_round or step event.
func (x *index) observeRound(ev *eventlog.Event) {
	node := x.names.id(ev.Node)
	if ev.Node != "" {
		if !x.anyMark {
			x.anyMark = true
			x.watch.fact(factMark)
		}
		x.mark(node, ev.Height, ev.Time)
	}
	hd := x.open(ev.Height)
	if hd == nil {
		return
	}
	hd.saw(ev.Time)
	rd := hd.round(ev.Round)
	if ev.Node != "" {
		earliest(rd.marks, node, ev.Time)
	}
	inRound := func() {
		if ev.Node != "" {
			rd.nodes[node] = true
		}
	}
	switch ev.Kind {
	case eventlog.KindStep:
		switch ev.Step {
		case "commit":
			hd.commitSteps = append(hd.commitSteps, commitStep{node: node, round: ev.Round, t: ev.Time})
			if hd.stepCommit == noRound || ev.Round < hd.stepCommit {
				hd.stepCommit = ev.Round
			}
			hd.anchor(ev.Time)
		case "prevote":
			inRound()
			earliest(rd.prevoteStep, node, ev.Time)
		}
	case eventlog.KindNewRound:
		inRound()
		if !rd.started || ev.Time.Before(rd.start) {
			rd.start, rd.started = ev.Time, true
		}
		if rd.proposer < 0 && ev.Proposer != "" {
			rd.proposer = x.names.id(ev.Proposer)
		}
		hd.anchor(ev.Time)
	}
}

// mark notes that node was at height at t (heightAt).
func (x *index) mark(node int32, h int64, t time.Time) {
	x.watch.mark(t)
	m := x.marks[node]
	if m == nil {
		m = &nodeMarks{top: h}
		x.marks[node] = m
	}
	m.top = max(m.top, h)
	if t.Before(x.bound) {
		m.fold(h)
		return
	}
	for i := len(m.recent) - 1; i >= 0; i-- {
		if m.recent[i].height == h {
			if t.Before(m.recent[i].t) {
				m.recent[i].t = t
			}
			return
		}
	}
	m.recent = append(m.recent, heightMark{h, t})
}

func (m *nodeMarks) fold(h int64) {
	if !m.hasFolded || h > m.folded {
		m.folded, m.hasFolded = h, true
	}
}

// resolve turns h's sign_requests that no sign event answered into
// signatures in flight that never ended (see sigSpan): a request is
// answered by the first later sign event of the same phase, height and
// round that no earlier request took.
func (x *index) resolve(hd *hdata) {
	for v, reqs := range hd.requests {
		answers := map[turn][]signRec{} // (phase, round) -> sign events not yet taken by a request
		for _, s := range hd.signs[v] {
			k := turn{round: s.round, phase: s.phase}
			answers[k] = append(answers[k], s)
		}
		for _, req := range reqs {
			k := turn{round: req.round, phase: req.phase}
			evs := answers[k]
			i := slices.IndexFunc(evs, func(s signRec) bool { return !s.t.Before(req.t) })
			if i >= 0 {
				answers[k] = evs[i+1:] // answers of one turn come in order
				continue
			}
			x.addSpan(v, sigSpan{phase: req.phase, height: hd.height, round: req.round, began: req.t, req: true, seq: req.seq})
		}
	}
	hd.requests = nil
}

// addSpan files a signature of v in order of (began, sign events before
// requests, stream order): the order of a stable sort by began of v's
// sign events followed by its unanswered requests.
func (x *index) addSpan(v int32, s sigSpan) {
	x.watch.span(s.began)
	sp := x.spans[v]
	i := len(sp)
	for i > 0 && s.before(sp[i-1]) {
		i--
	}
	x.spans[v] = slices.Insert(sp, i, s)
}

// votesAt returns the vote events of one round, in stream order.
func (x *index) votesAt(k hr) []vote {
	hd := x.heights[k.height]
	if hd == nil {
		return nil
	}
	if hd.byRound == nil {
		hd.byRound = map[int32][]int32{}
		for i, v := range hd.votes {
			hd.byRound[v.round] = append(hd.byRound[v.round], int32(i))
		}
	}
	idx := hd.byRound[k.round]
	out := make([]vote, len(idx))
	for i, j := range idx {
		out[i] = hd.votes[j]
	}
	return out
}

// signsOf is v's node-side sign events at height h, in stream order.
func (x *index) signsOf(v int32, h int64) []signRec {
	if hd := x.heights[h]; hd != nil {
		return hd.signs[v]
	}
	return nil
}

// roundOf is round k's data, nil when no event named it.
func (x *index) roundOf(k hr) *rdata {
	if hd := x.heights[k.height]; hd != nil {
		return hd.rounds[k.round]
	}
	return nil
}

// roundStart is the earliest new_round of k.
func (x *index) roundStart(k hr) (time.Time, bool) {
	if rd := x.roundOf(k); rd != nil && rd.started {
		return rd.start, true
	}
	return time.Time{}, false
}

// proposer is the validator named as k's proposer ("" none).
func (x *index) proposer(k hr) string {
	if rd := x.roundOf(k); rd != nil && rd.proposer >= 0 {
		return x.names.name(rd.proposer)
	}
	return ""
}

// firstReceipt is when node first received voter's vote of phase at k.
func (x *index) firstReceipt(node, voter int32, phase string, k hr) (t time.Time, ok bool) {
	for _, ev := range x.votesAt(k) {
		if ev.node == node && ev.validator == voter && ev.phase == phase && (!ok || ev.t.Before(t)) {
			t, ok = ev.t, true
		}
	}
	return t, ok
}

// quorum reports whether power is more than 2/3 of the total, the
// threshold CometBFT acts on.
func (x *index) quorum(power int64) bool { return x.totalPower > 0 && power*3 > x.totalPower*2 }

// prune drops what no height still to be judged can look up: answered
// signatures that ended before bound, votes from other nodes and host
// samples before it, and each node's marks before it (folded into the
// highest height). Faults stay: one long ago may still be in force.
func (x *index) prune(bound time.Time) {
	if !bound.After(x.bound) {
		return
	}
	x.bound = bound
	x.watch.pruneTo(bound)
	for v, sp := range x.spans {
		x.spans[v] = slices.DeleteFunc(sp, func(s sigSpan) bool { return s.answered() && s.end.Before(bound) })
	}
	b := stampOf(bound)
	x.foreign = slices.DeleteFunc(x.foreign, func(t stamp) bool { return t < b })
	x.hosts = slices.DeleteFunc(x.hosts, func(m hostMark) bool { return m.t.Before(bound) })
	for _, m := range x.marks {
		m.recent = slices.DeleteFunc(m.recent, func(hm heightMark) bool {
			if hm.t.Before(bound) {
				m.fold(hm.height)
				return true
			}
			return false
		})
	}
}
