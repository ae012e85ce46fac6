package results

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/results/eventlog"
)

// Summarizer folds a run's events, in stream order, into its Summary and
// what the other reports draw (heights.csv, report.html), without keeping
// the events: per height it keeps a compact row (the chain), per
// signature a latency sample (see samples: repeated values cost nothing),
// and the working state of a height (its votes, rounds, signatures) only
// until the height is judged (see settle.go). Its memory is flat in the
// number of heights, however long the run.
//
// Add the events, then call Summary. A summary needs the whole stream to
// be exact; a Summarizer judges heights as the stream moves on, and when
// the stream brought something late that a judged height would have
// looked at, Retry returns a Summarizer to feed the same events again
// (planned from this pass); Summarize and SummarizeFile do that.
type Summarizer struct {
	plan  settlePlan
	names *names
	c     *chain
	x     *index
	w     *watch

	n            int64  // events added
	torn         string // the torn last line SummarizeFile ignored, described; "": none
	start, end   *eventlog.Event
	first        time.Time // the first event's time
	latest       time.Time // the latest event time
	host         hostAgg
	faults       faultSpans // fault windows by validator: which sign errors were injected
	nodeErrors   []NodeError
	devices      map[string]eventlog.DeviceSample // the last sample of each device
	cosigns      map[string]*cosignAgg            // each threshold signer's rounds, by validator
	vals         map[int32]*valAcc
	load         *loadAgg
	peers        peerNodes
	intervals    samples // block intervals
	judgedAny    bool
	firstHeight  int64 // the lowest committed height so far
	firstBlockAt time.Time

	// What judged heights leave.
	missed         []MissedPrecommit
	changes        []RoundChange
	notReceived    map[string]int
	latePrevotes   map[int32]int
	latePrecommits map[int32]int
	quorumHeights  int
	critical       map[int32]int
	doubleSigns    []seqDoubleSign
	scheduled      map[int64][]haltSpan // halts to explain when their height is judged
	explained      map[haltKey]Halt
	starts         roundStarts

	halts   []Halt
	summary *Summary
}

type seqDoubleSign struct {
	seq int64
	DoubleSign
}

// haltKey identifies a halt's explanation: its stretch and its evidence.
type haltKey struct {
	fromHeight int64
	from, to   stamp
	at         stamp
	resumed    bool
}

// NewSummarizer returns a Summarizer for one stream.
func NewSummarizer() *Summarizer { return newSummarizer(defaultPlan()) }

func newSummarizer(p settlePlan) *Summarizer {
	n := newNames()
	w := &watch{}
	z := &Summarizer{plan: p, names: n, c: emptyChain(n), w: w, devices: map[string]eventlog.DeviceSample{}, cosigns: map[string]*cosignAgg{},
		vals: map[int32]*valAcc{}, load: newLoadAgg(p.loadAll || p.keepAll), notReceived: map[string]int{},
		latePrevotes: map[int32]int{}, latePrecommits: map[int32]int{}, critical: map[int32]int{},
		scheduled: map[int64][]haltSpan{}, explained: map[haltKey]Halt{}}
	z.x = emptyIndex(n, w)
	z.x.known = p.known
	return z
}

func (z *Summarizer) acc(id int32) *valAcc {
	a := z.vals[id]
	if a == nil {
		a = &valAcc{}
		z.vals[id] = a
	}
	return a
}

// Add folds in the next event of the stream. ev is not kept: it may be
// reused for the next one. Add after Summary panics.
func (z *Summarizer) Add(ev *eventlog.Event) {
	if z.summary != nil {
		panic("results: Summarizer.Add after Summary")
	}
	seq := z.n
	z.n++
	if seq == 0 {
		z.first = ev.Time
	}
	if ev.Time.After(z.latest) || seq == 0 {
		z.latest = ev.Time
	}
	switch ev.Kind {
	case eventlog.KindRunStart:
		if z.start == nil {
			st := *ev
			st.Validators, st.Expect = slices.Clone(ev.Validators), slices.Clone(ev.Expect)
			z.start = &st
			z.x.start(ev)
			z.peers.start(ev)
			z.c.target = ev.Heights
			if len(z.c.rows) > 0 {
				z.starts.bound(z.startBound())
			}
			if z.judgedAny {
				z.w.keepAll = true // heights were judged without it
				z.w.miss("run_start came after judged heights")
			}
		}
	case eventlog.KindRunEnd:
		if z.end == nil {
			e := *ev
			z.end = &e
		}
	case eventlog.KindNodeError:
		z.nodeErrors = append(z.nodeErrors, NodeError{Time: ev.Time, Node: ev.Node, Error: ev.Error})
	case eventlog.KindHost:
		z.host.add(ev.Host)
	case eventlog.KindDevice:
		if ev.Device != nil && ev.Device.Name != "" {
			z.devices[ev.Device.Name] = *ev.Device
		}
	case eventlog.KindCosign:
		z.cosign(ev)
	case eventlog.KindTx:
		z.load.tx(ev)
	case eventlog.KindBlock:
		z.block(ev)
	case eventlog.KindFault:
		z.faults.observe(ev)
	case eventlog.KindSign:
		z.sign(ev, seq)
	case eventlog.KindNewRound:
		if ev.Proposer != "" {
			if hd := z.x.open(ev.Height); hd != nil {
				hd.turns[[2]int32{ev.Round, z.names.id(ev.Proposer)}] = true
			}
		}
	}
	z.x.observe(ev, seq)
	z.peers.observe(ev)
	if ev.Kind == eventlog.KindBlock || seq%1024 == 0 {
		z.settle()
	}
}

// block takes a block event: the chain's row, and the halt before it.
func (z *Summarizer) block(ev *eventlog.Event) {
	h := ev.Height
	if z.c.row(h) != nil {
		return // the first report of a height wins
	}
	for _, j := range []int64{h - 1, h} {
		if z.x.isJudged(j) {
			z.w.lateFor(j, "a block arrived after a height it tells about was judged")
		}
	}
	hadRows := len(z.c.rows) > 0
	below := hadRows && h < z.w.front
	var prev blockRow
	if r := z.c.row(z.w.front); r != nil {
		prev = *r
	}
	z.c.addBlock(ev)
	if hd := z.x.open(h); hd != nil {
		hd.blockID = hd.str(ev.BlockID)
		hd.anchor(ev.Time)
		hd.saw(ev.Time)
	}
	z.load.block(ev, below)
	for _, k := range []int64{h, h + 1} {
		if ms, ok := z.c.intervalMS(k); ok {
			z.intervals.add(ms)
		}
	}
	// The first committed height starts the chain: what comes before it
	// is the network's start (networkStart).
	if !hadRows || h < z.firstHeight {
		if z.judgedAny && ev.Time.After(z.firstBlockAt) {
			z.w.keepAll = true // the starts kept before it no longer tell
			z.w.miss("a lower first block came later")
		}
		z.firstHeight, z.firstBlockAt = h, ev.Time
		z.starts.bound(z.startBound())
	}
	switch {
	case !hadRows:
		z.schedule(haltSpan{Halt: Halt{Resumed: true}, to: ev.Time}) // from the network's start
	case !below && prev.height == z.w.front:
		if gap := ev.Time.Sub(prev.t.time()); gap > z.haltFloor() {
			z.schedule(haltSpan{Halt: Halt{FromHeight: prev.height, DurationMS: gap.Milliseconds(), Resumed: true}, from: prev.t.time(), to: ev.Time})
		}
	}
	if !hadRows || h > z.w.front {
		z.w.front = h
	}
}

// haltFloor: no stretch up to this long can be a halt (haltThreshold is
// never below it).
func (z *Summarizer) haltFloor() time.Duration {
	if k := z.plan.known; k != nil {
		return k.threshold
	}
	return haltThreshold(z.start, 0)
}

// schedule notes a stretch that may be a halt, to be explained when the
// height that could not commit is judged.
func (z *Summarizer) schedule(sp haltSpan) {
	h := sp.FromHeight + 1
	hd := z.x.open(h)
	if hd == nil {
		return // a late block: the pass is missed already
	}
	if !sp.from.IsZero() {
		hd.anchor(sp.from)
	}
	z.scheduled[h] = append(z.scheduled[h], sp)
}

// sign takes what a sign event says about its validator.
func (z *Summarizer) sign(ev *eventlog.Event, seq int64) {
	if ev.Validator == "" {
		return
	}
	id := z.names.id(ev.Validator)
	a := z.acc(id)
	if ev.QueueMS != nil && ev.Error == "" {
		a.queue.add(*ev.QueueMS) // only the side that saw the queue has it
		a.service.add(max(ev.LatencyMS-*ev.QueueMS, 0))
	}
	p := phaseIndex(ev.Phase)
	if ev.Side == eventlog.SideSigner {
		if ev.Error == "" && p >= 0 {
			a.signer[p].add(ev.LatencyMS)
			a.signerAll.add(ev.LatencyMS)
			if hd := z.x.open(ev.Height); hd != nil {
				if hd.signer == nil {
					hd.signer = map[sigOf]float64{}
				}
				hd.signer[sigOf{signGroup{id, ev.Round, hd.str(ev.Phase)}, hd.str(ev.BlockID)}] = ev.LatencyMS
			}
		}
		return // the node side of the same signature counts it
	}
	if ev.Error != "" {
		a.signErrors++
		a.failures.add(ev.Failure)
		if !z.faults.explains(ev.Validator, ev.Time) {
			a.unexplained++
		}
		return
	}
	if p >= 0 {
		a.latency[p].add(ev.LatencyMS)
		a.all.add(ev.LatencyMS)
	}
	if ev.InjectedMS > 0 {
		a.injected.add(ev.InjectedMS)
	}
	hd := z.x.open(ev.Height)
	if hd == nil {
		return
	}
	if ev.Phase == phase.Proposal {
		hd.made[[2]int32{ev.Round, id}] = true
	}
	k := signGroup{id, ev.Round, hd.str(ev.Phase)}
	blockID := hd.str(ev.BlockID)
	hd.nodeSigs = append(hd.nodeSigs, nodeSig{sigOf{k, blockID}, ev.LatencyMS})
	g := hd.groups[k]
	if g == nil {
		g = &dsGroup{seq: seq}
		hd.groups[k] = g
	}
	if !slices.Contains(g.ids, blockID) {
		g.ids = append(g.ids, blockID)
	}
}

// nodeSig is a successful node-side signature and its latency.
type nodeSig struct {
	sigOf
	latencyMS float64
}

// settle judges the heights the stream has moved on from (see settle.go),
// lowest first, and drops what no height still to be judged can look up.
func (z *Summarizer) settle() {
	if z.plan.keepAll {
		return
	}
	judged := false
	for len(z.x.order) > 0 {
		hd := z.x.heights[z.x.order[0]]
		if !z.ready(hd) {
			break
		}
		z.judge(hd, false)
		judged = true
	}
	if judged {
		if b, ok := z.x.lowAnchor(); ok {
			z.x.prune(b)
		}
	}
}

// ready reports whether hd can be judged now.
func (z *Summarizer) ready(hd *hdata) bool {
	h := hd.height
	if z.w.front < h+z.plan.horizon {
		return false
	}
	end := hd.maxT
	if nb := z.c.row(h + 1); nb != nil && nb.t.time().After(end) {
		end = nb.t.time()
	}
	if z.latest.Before(end.Add(z.plan.slack)) {
		return false
	}
	if z.w.front-h <= z.plan.lagMax {
		if low, ok := z.x.lowestNode(); ok && low <= h {
			return false // a node is still there: its events are still to come
		}
		if z.x.pendingBefore(end.Add(z.plan.slack)) {
			return false // a signature requested by then is still unanswered
		}
	}
	return true
}

// judge derives everything height hd says and drops it; final: the stream
// has ended.
func (z *Summarizer) judge(hd *hdata, final bool) {
	h := hd.height
	c, x := z.c, z.x
	x.resolve(hd)
	z.w.begin()
	row := c.row(h)
	cr, crOK := c.commitRound(h, hd.stepCommit)

	// Proposer turns and signed proposals within the committed window:
	// height <= last committed and round <= the height's commit round
	// when known (see Summarize).
	last := z.w.front
	if final {
		last = c.last()
	}
	inWindow := func(r int32) bool { return h <= last && (!crOK || r <= cr) }
	for k := range hd.turns {
		if inWindow(k[0]) {
			z.acc(k[1]).turns++
		}
	}
	for k := range hd.made {
		if inWindow(k[0]) {
			z.acc(k[1]).made++
		}
	}
	for k, g := range hd.groups {
		if len(g.ids) > 1 {
			z.doubleSigns = append(z.doubleSigns, seqDoubleSign{g.seq, DoubleSign{Validator: z.names.name(k.validator),
				Height: h, Round: k.round, Phase: k.phase, BlockIDs: g.ids}})
		}
	}
	// Transport overhead: the node's latency minus the signer's, for
	// every signature seen from both sides.
	for _, s := range hd.nodeSigs {
		if sl, ok := hd.signer[s.sigOf]; ok {
			z.acc(s.validator).overhead.add(max(0, s.latencyMS-sl))
		}
	}
	x.lateVotes(hd, z.latePrevotes, z.latePrecommits)
	if row != nil && crOK {
		if voters, ok := x.quorumAt(hd, cr); ok {
			c.setList(&c.row(h).quorum, voters)
			z.quorumHeights++
			for _, v := range voters {
				z.critical[v]++
			}
		}
		z.changes = append(z.changes, x.roundChanges(c, hd, cr, z.notReceived)...)
	}
	if row != nil {
		if nb := c.lastCommit(h); nb != nil {
			z.missed = append(z.missed, x.missedAt(c, hd, nb)...)
		}
	}
	for _, sp := range z.scheduled[h] {
		z.explain(hd, sp)
	}
	delete(z.scheduled, h)
	if row := c.row(h); row != nil {
		row.stepCommit = hd.stepCommit
	}
	for _, rd := range hd.rounds {
		if rd.started {
			z.starts.add(rd.start)
		}
	}
	z.w.end(h)
	x.drop(h)
	z.judgedAny = true
}

// explain explains the halt sp, if it is one, now that its height hd is
// judged: with the threshold as far as the stream tells so far (known
// from an earlier pass, or from the intervals so far), checked at the end.
func (z *Summarizer) explain(hd *hdata, sp haltSpan) {
	threshold := z.threshold()
	if k := z.plan.known; k != nil {
		threshold = k.threshold
	}
	if sp.FromHeight == 0 && sp.from.IsZero() { // from the network's start
		ns := z.netStart()
		if k := z.plan.known; k != nil {
			ns = k.netStart
		}
		if ns.IsZero() {
			return
		}
		sp.from = ns
		sp.DurationMS = sp.to.Sub(sp.from).Milliseconds()
	}
	if threshold <= 0 || sp.to.Sub(sp.from) <= threshold {
		return
	}
	h := z.x.explainHalt(z.c, hd, sp, threshold)
	z.explained[keyOf(sp, threshold)] = h
}

func keyOf(sp haltSpan, threshold time.Duration) haltKey {
	at := sp.from.Add(threshold)
	if at.After(sp.to) {
		at = sp.to
	}
	return haltKey{fromHeight: sp.FromHeight, from: stampOf(sp.from), to: stampOf(sp.to), at: stampOf(at), resumed: sp.Resumed}
}

// threshold is the halt threshold as far as the stream tells (at its
// end: the summary's).
func (z *Summarizer) threshold() time.Duration {
	return haltThreshold(z.start, z.intervals.stats().P50)
}

// DoubleSignsSoFar are the double signs of the heights judged so far, in
// stream order: the run-wide detector while the stream goes on (valnet
// soak checks it during a run). Summary's DoubleSignDetails has them all.
func (z *Summarizer) DoubleSignsSoFar() []DoubleSign {
	out := make([]DoubleSign, 0, len(z.doubleSigns))
	for _, ds := range z.doubleSigns {
		out = append(out, ds.DoubleSign)
	}
	return out
}

// Summary returns the summary of the events added, judging what is left
// (the last heights) first. It is computed once; Add may not follow.
func (z *Summarizer) Summary() *Summary {
	if z.summary == nil {
		z.finish()
		z.summary = z.summarize()
	}
	return z.summary
}

// finish judges the heights left at the end of the stream, and the halts.
func (z *Summarizer) finish() {
	c, x := z.c, z.x
	c.done()
	for _, h := range x.order {
		x.resolve(x.heights[h])
	}
	threshold, ns := z.threshold(), z.netStart()
	var stop time.Time
	if z.end != nil {
		stop = z.end.Time
	}
	// Every halt is explained when its height is judged: the heights left
	// now, or one judged before with the same evidence.
	spans := findHalts(c, threshold, ns, stop)
	clear(z.scheduled)
	halts := make([]*Halt, len(spans))
	for i, sp := range spans {
		h := sp.FromHeight + 1
		if x.isJudged(h) {
			if e, ok := z.explained[keyOf(sp, threshold)]; ok {
				halts[i] = &e
				continue
			}
			z.w.changed = true
			z.w.miss("a halt's height was judged before the halt was known")
			continue
		}
		hd := x.height(h)
		halts[i] = new(Halt)
		*halts[i] = x.explainHalt(c, hd, sp, threshold)
	}
	z.halts = []Halt{} // [] not null in JSON
	for _, h := range halts {
		if h != nil {
			z.halts = append(z.halts, *h)
		}
	}
	for len(x.order) > 0 {
		z.judge(x.heights[x.order[0]], true)
	}
	if x.undecided && x.latest.Sub(x.undecidedBegan) >= privvalTimeout {
		// A request judged young enough to come back was, by the end,
		// out longer than a node waits: judged again, knowing the end.
		z.w.changed = true
		z.w.miss("an unanswered request outlived the node's wait after it was judged")
	}
}

// Retry reports whether the summary may not be what the whole stream
// says, because the stream brought something late (see Summarizer): then
// it returns a Summarizer to feed the same events again, planned from
// this pass; nil when this pass is exact. It calls Summary first.
func (z *Summarizer) Retry() *Summarizer {
	z.Summary()
	if z.plan.keepAll || !z.w.missed() && !(!z.load.keepAll && (z.load.outOfOrder || z.load.resent)) {
		return nil // a pass that keeps everything to the end misses nothing
	}
	p := z.plan
	p.pass++
	if z.w.keepAll || p.pass >= maxPasses-1 {
		p.keepAll = true
	}
	if n := z.w.needHorizon; n > p.horizon {
		p.horizon, p.lagMax = n, max(p.lagMax, n)
	}
	p.loadAll = p.loadAll || z.load.outOfOrder || z.load.resent
	p.known = z.facts()
	return newSummarizer(p)
}

// facts are what this pass learned by its end.
func (z *Summarizer) facts() *facts {
	f := &facts{threshold: z.threshold(), netStart: z.netStart(), requesters: map[string]bool{}, end: z.x.latest}
	f.flags[factVote], f.flags[factMark], f.flags[factNodeUp] = z.x.anyVote, z.x.anyMark, len(z.x.ups) > 0
	for v := range z.x.requesters {
		f.requesters[z.names.name(v)] = true
	}
	return f
}

// Events is the number of events added.
func (z *Summarizer) Events() int64 { return z.n }

// HasRunStart reports whether a run_start event was added.
func (z *Summarizer) HasRunStart() bool { return z.start != nil }

// summarizeEvents summarizes events, again as long as a pass asks for it.
func summarizeEvents(events []eventlog.Event) *Summarizer {
	return summarizeWith(defaultPlan(), feedEvents(events))
}

// feedEvents feeds events to a Summarizer, in order.
func feedEvents(events []eventlog.Event) func(*Summarizer) error {
	return func(z *Summarizer) error {
		for i := range events {
			z.Add(&events[i])
		}
		return nil
	}
}

// summarizeWith runs the passes of plan p over a stream fed by feed.
func summarizeWith(p settlePlan, feed func(*Summarizer) error) *Summarizer {
	z := newSummarizer(p)
	for {
		if err := feed(z); err != nil {
			return z
		}
		next := z.Retry()
		if next == nil {
			return z
		}
		z = next
	}
}

// SummarizeFile streams an events.jsonl file through a Summarizer, and
// again when a pass asks for it (see Summarizer): the file is read line by
// line, never whole. The error is the reader's (see Stream); the
// Summarizer then holds the events before it.
func SummarizeFile(path string) (*Summarizer, error) {
	var err error
	z := summarizeWith(defaultPlan(), func(z *Summarizer) error {
		var torn *eventlog.TornLine
		torn, err = eventlog.StreamFileTorn(path, z.Add)
		if torn != nil {
			z.torn = fmt.Sprintf("%s: last line truncated at byte %d (%d bytes), ignored", filepath.Base(path), torn.Offset, torn.Bytes)
		}
		return err
	})
	return z, err
}

// SummarizeLive is SummarizeFile's first pass over a stream read while
// it is written (a run's events.jsonl teed by its Writer, the same
// bytes), decoded on the caller's goroutine alone (eventlog.StreamSerial:
// it runs beside the model): the Summarizer when that pass is exact, nil
// when the stream asks for another pass (Retry) or ends in a torn line;
// then the caller summarizes the file.
func SummarizeLive(r io.Reader) (*Summarizer, error) {
	z := newSummarizer(defaultPlan())
	torn, err := eventlog.StreamSerial(r, z.Add)
	if err != nil || torn != nil || z.Retry() != nil {
		return nil, err
	}
	return z, nil
}

// roundStarts tracks, for networkStart, the earliest new_round of every
// round of the judged heights: those no later than the start bound (the
// later of run_start and the first block) one by one, the others as
// their earliest.
type roundStarts struct {
	limit     time.Time
	hasLimit  bool
	early     []time.Time
	above     time.Time
	haveAbove bool
}

func (r *roundStarts) add(t time.Time) {
	if !r.hasLimit || !t.After(r.limit) {
		r.early = append(r.early, t)
		return
	}
	if !r.haveAbove || t.Before(r.above) {
		r.above, r.haveAbove = t, true
	}
}

// bound lowers the limit (a first block came): starts above it are folded.
func (r *roundStarts) bound(limit time.Time) {
	r.limit, r.hasLimit = limit, true
	early := r.early[:0]
	for _, t := range r.early {
		if t.After(limit) {
			if !r.haveAbove || t.Before(r.above) {
				r.above, r.haveAbove = t, true
			}
			continue
		}
		early = append(early, t)
	}
	r.early = early
}

// startBound is the latest the network's start can be: run_start or the
// first block, the later.
func (z *Summarizer) startBound() time.Time {
	b := z.firstBlockAt
	if z.start != nil && z.start.Time.After(b) {
		b = z.start.Time
	}
	return b
}

// netStart is when the chain could first commit (as far as the stream
// tells): the first new_round after the last node_up before the first
// commit (consensus started; the nodes wait for the genesis time before
// it, which is no stall), or that node_up when no node entered a round (a
// network that never started consensus stalls from there), or run_start.
func (z *Summarizer) netStart() time.Time {
	var t time.Time
	if z.start != nil {
		t = z.start.Time
	}
	for _, up := range z.x.ups {
		if len(z.c.rows) > 0 && up.After(z.firstBlockAt) {
			continue
		}
		if up.After(t) {
			t = up
		}
	}
	var consensus time.Time
	consider := func(at time.Time) {
		if !at.Before(t) && (consensus.IsZero() || at.Before(consensus)) {
			consensus = at
		}
	}
	for _, at := range z.starts.early {
		consider(at)
	}
	if z.starts.haveAbove {
		consider(z.starts.above)
	}
	for _, hd := range z.x.heights {
		for _, rd := range hd.rounds {
			if rd.started {
				consider(rd.start)
			}
		}
	}
	if !consensus.IsZero() {
		return consensus
	}
	return t
}
