package results

import (
	"fmt"
	"github.com/valnet/valnet/results/eventlog"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/internal/action"
	"github.com/valnet/valnet/internal/phase"
)

// settleStreams are streams to settle: the fixtures, generated runs with
// every cause the generator scripts, a halt, and each of them shuffled
// (events swapped with one up to n later), so that events come late.
func settleStreams(t *testing.T) map[string][]eventlog.Event {
	base := map[string][]eventlog.Event{
		"fixture":       readFixture(t),
		"model":         modelEvents(t),
		"stream":        gen(streamConfig(200)),
		"halt-resumed":  stuckRun(cat(enterRound(2100, 3, 0, "v1", "v2", "v3", "v4"), []eventlog.Event{block(3, 30000, 0, nil, nil)})...),
		"halt-unending": stuckRun(cat(enterRound(2100, 3, 0, "v1", "v2", "v3", "v4"), prevotes(2200, 3, 0, nil, "v1", "v2"))...),
	}
	down := streamConfig(120)
	down.nodeDown, down.absent = map[int64]int{30: 1}, map[int64][]int{7: {2}, 23: {1}, 30: {1}}
	down.precommitErr, down.absent[40] = map[int64]int{40: 3}, []int{3}
	down.injected = map[int]float64{2: 150}
	base["down"] = gen(down)
	out := map[string][]eventlog.Event{}
	rng := rand.New(rand.NewPCG(7, 11))
	for name, evs := range base {
		out[name] = evs
		for _, n := range []int{4, 40} {
			sh := slices.Clone(evs)
			for i := range sh {
				j := i + rng.IntN(n)
				if j < len(sh) && sh[i].Kind != eventlog.KindRunStart && sh[j].Kind != eventlog.KindRunStart {
					sh[i], sh[j] = sh[j], sh[i]
				}
			}
			out[fmt.Sprintf("%s~%d", name, n)] = sh
		}
	}
	return out
}

// eager judges a height as soon as the next block has come.
var eager = settlePlan{horizon: 1}

// latePasses summarizes evs with the eager plan, where something comes
// too late for its first pass: that pass must say so (Retry), and the
// passes Retry asks for must end with the whole stream's reports (nothing
// judged before the end). It returns the first pass and the whole's.
func latePasses(t *testing.T, evs []eventlog.Event) (first, whole *Summarizer) {
	t.Helper()
	first = newSummarizer(eager)
	feedEvents(evs)(first)
	if first.Retry() == nil {
		t.Fatalf("one pass claims to be exact:\n%s", reportsOf(t, first)["summary.json"])
	}
	whole = summarizeWith(settlePlan{keepAll: true}, feedEvents(evs))
	want := reportsOf(t, whole)
	for f, got := range reportsOf(t, summarizeWith(eager, feedEvents(evs))) {
		if got != want[f] {
			t.Errorf("after the passes Retry asked for, %s is not the whole stream's", f)
		}
	}
	return first, whole
}

// TestSettleMissesNothing: a Summarizer that judges heights as early as it
// can (the next block, no slack, no waiting for nodes behind) either
// gives the summary and reports of the whole stream, or says it may not
// (Retry); and the passes Retry asks for end with the whole stream's.
func TestSettleMissesNothing(t *testing.T) {
	whole := defaultPlan()
	whole.keepAll = true
	exact, streams := 0, settleStreams(t)
	for name, evs := range streams {
		feed := feedEvents(evs)
		want := reportsOf(t, summarizeWith(whole, feed))
		for _, horizon := range []int64{0, 1} {
			t.Run(fmt.Sprintf("%s/horizon-%d", name, horizon), func(t *testing.T) {
				eager := settlePlan{horizon: horizon, slack: 0, lagMax: 0}
				z := newSummarizer(eager)
				feed(z)
				if z.Retry() == nil {
					exact++
					for f, got := range reportsOf(t, z) {
						if got != want[f] {
							t.Errorf("one pass claims to be exact, but its %s is not the whole stream's", f)
						}
					}
				}
				for f, got := range reportsOf(t, summarizeWith(eager, feed)) {
					if got != want[f] {
						t.Errorf("after the passes Retry asked for, %s is not the whole stream's", f)
					}
				}
			})
		}
	}
	if exact == 0 || exact == 2*len(streams) {
		t.Errorf("%d of %d eager passes were exact: the test settles nothing, or nothing comes late", exact, 2*len(streams))
	}
}

// TestSettleWaitsForLateSigner: a signer whose precommit returns heights
// after the others moved on (its sign_request pending meanwhile) does not
// cost a second pass: its height waits for the answer.
func TestSettleWaitsForLateSigner(t *testing.T) {
	evs := gen(streamConfig(120))
	// v3's precommit at height 20 is answered 5 s (five heights) late.
	var out []eventlog.Event
	var held *eventlog.Event
	for _, ev := range evs {
		if ev.Kind == eventlog.KindSign && ev.Validator == "v3" && ev.Phase == phase.Precommit && ev.Height == 20 {
			req := eventlog.Event{Time: ev.Time.Add(-msDuration(ev.LatencyMS)), Kind: eventlog.KindSignRequest, Node: "v3", Validator: "v3", Phase: ev.Phase, Height: 20, Round: ev.Round}
			out = append(out, req)
			late := ev
			late.Time = late.Time.Add(5 * time.Second)
			late.LatencyMS += 5000
			held = &late
			continue
		}
		if held != nil && ev.Time.After(held.Time) {
			out = append(out, *held)
			held = nil
		}
		out = append(out, ev)
	}
	z := NewSummarizer()
	feedEvents(out)(z)
	if z.Retry() != nil {
		t.Fatalf("asks for a second pass: %s", z.w.why)
	}
	got, want := reportsOf(t, z), reportsOf(t, summarizeWith(settlePlan{keepAll: true}, feedEvents(out)))
	for f := range want {
		if got[f] != want[f] {
			t.Errorf("%s differs from the whole stream's", f)
		}
	}
}

// TestSettleSignatureOfTheNextHeight: v4's node decides height 2 first
// and v4 starts signing its height-3 prevote before the others decide 2;
// the signature returns when height 2 is judged already, though height 3
// is not. Height 2's missed precommit of v4 was the signer's doing (it was
// still on that signature at the decision): the watch sees that the
// judgement needed it, and a second pass says so.
func TestSettleSignatureOfTheNextHeight(t *testing.T) {
	nodes := []string{"v1", "v2", "v3", "v4"}
	evs := []eventlog.Event{runStart(nodes...)}
	for h := int64(1); h <= 5; h++ {
		ms := float64(h) * 1000
		for _, n := range nodes {
			evs = append(evs, eventlog.Event{Time: at(ms - 900), Kind: eventlog.KindNewRound, Node: n, Height: h, Proposer: "v1"})
		}
		commit := ms - 100
		for _, n := range nodes {
			if h == 2 && n == "v4" {
				evs = append(evs, stepAt(commit-150, n, h, 0, "commit"))
				continue
			}
			evs = append(evs, signAt(commit-50, n, phase.Precommit, h, 0, "B", 1), stepAt(commit, n, h, 0, "commit"))
		}
		var absent []string
		if h == 3 {
			absent = []string{"v4"}
		}
		evs = append(evs, block(h, ms, 0, absent, nil))
		if h == 3 {
			// v4's height-3 prevote, begun at 1850 (before the others
			// decided height 2 at 1900), returns at 3600.
			evs = append(evs, signAt(3600, "v4", phase.Prevote, 3, 0, "B", 1750))
		}
	}
	evs = append(evs, runEnd(5500, eventlog.StopHeights))
	first, whole := latePasses(t, evs)
	m := whole.Summary().Missed
	if len(m) != 1 || m[0].Cause != CauseSignerLate || !strings.Contains(m[0].Detail, "h3 prevote r0") {
		t.Errorf("missed = %+v, want v4's at height 2 signer-late, on its height-3 prevote", m)
	}
	if reflect.DeepEqual(first.Summary().Missed, m) {
		t.Errorf("the first pass saw it too: %+v", m)
	}
}

// settleRun: four validators, heights 1..6 a second apart (height h
// decided at h·1000-100 ms, its block at h·1000); v4's precommit for 3 is
// absent, and from height 3 on v4's node shows nothing (it is behind).
// late comes right after block 4: once height 3 is judged, before 4 is.
func settleRun(late ...eventlog.Event) []eventlog.Event {
	nodes := []string{"v1", "v2", "v3", "v4"}
	evs := []eventlog.Event{runStart(nodes...)}
	for h := int64(1); h <= 6; h++ {
		ms := float64(h) * 1000
		for _, n := range nodes {
			if n == "v4" && h >= 3 {
				continue
			}
			evs = append(evs, eventlog.Event{Time: at(ms - 900), Kind: eventlog.KindNewRound, Node: n, Height: h, Proposer: "v1"},
				signAt(ms-150, n, phase.Precommit, h, 0, "B", 1), stepAt(ms-100, n, h, 0, "commit"))
		}
		var absent []string
		if h >= 4 {
			absent = []string{"v4"}
		}
		evs = append(evs, block(h, ms, 0, absent, nil))
		if h == 4 {
			evs = append(evs, late...)
		}
	}
	return append(evs, runEnd(6500, eventlog.StopHeights))
}

// TestSettleLateArrivals: something of an earlier time that height 3's
// judgement needed comes after it, from no judged height: the watch sees
// it, and the passes end with the whole stream's missed precommits.
func TestSettleLateArrivals(t *testing.T) {
	tests := []struct {
		name string
		late []eventlog.Event
	}{
		{"where v4's node was (a mark of height 4 before the decision of 3)",
			[]eventlog.Event{stepAt(2850, "v4", 4, 0, "new_height")}},
		{"a fault that had v4's node down", []eventlog.Event{faultAt(2000, "v4", action.NodePause, eventlog.FaultStart)}},
		{"a saturated host second", []eventlog.Event{hostAt(2800, true)}},
		{"a signature of height 4 in flight at the decision", []eventlog.Event{signAt(4100, "v4", phase.Prevote, 4, 0, "B", 1500)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, whole := latePasses(t, settleRun(tt.late...))
			if got, want := first.Summary().Missed, whole.Summary().Missed; reflect.DeepEqual(got, want) {
				t.Fatalf("the late event changes nothing: %+v", want)
			}
		})
	}
}

// TestSettleLateVoteOfAHalt: a vote one node received from another
// during a halt, recorded after the halt's height was judged: whether any
// node heard another is part of the halt's cause.
func TestSettleLateVoteOfAHalt(t *testing.T) {
	all := []string{"v1", "v2", "v3", "v4"}
	evs := stuckRun(cat(enterRound(2100, 3, 0, all...), prevotes(2200, 3, 0, nil, all...),
		[]eventlog.Event{block(3, 30000, 0, nil, nil), block(4, 31000, 0, nil, nil),
			voteAt(5000, "v2", "v1", phase.Prevote, 4, 0, ""), block(5, 32000, 0, nil, nil)})...)
	first, whole := latePasses(t, evs)
	want := whole.Summary().Halts
	if len(want) != 1 || strings.Contains(want[0].Detail, "no peers connected") {
		t.Fatalf("halts %+v, want one in which a node heard another", want)
	}
	if got := first.Summary().Halts; reflect.DeepEqual(got, want) {
		t.Errorf("the first pass saw it too: %+v", got)
	}
}

// TestSettleLateFacts: what only the end of a stream tells, read by a
// judgement before it: the halt threshold (5 × the median interval, the
// intervals still to come), whether a validator's signatures are ever
// requested, whether the stream has votes or consensus events. A pass
// that read it wrong says so.
func TestSettleLateFacts(t *testing.T) {
	all := []string{"v1", "v2", "v3", "v4"}
	blocks := func(from int64, ms ...float64) []eventlog.Event {
		var evs []eventlog.Event
		for i, at := range ms {
			evs = append(evs, block(from+int64(i), at, 0, nil, nil))
		}
		return evs
	}
	slowThenFast := func() []eventlog.Event {
		start := runStart(all...)
		start.HaltAfterMS = 1000
		evs := []eventlog.Event{start}
		evs = append(evs, blocks(1, 3000, 6000, 9000, 12000, 24000)...) // a 12 s stretch before block 5
		for i := int64(0); i < 20; i++ {
			evs = append(evs, block(6+i, 25000+float64(i)*1000, 0, nil, nil)) // then a block a second
		}
		return append(evs, runEnd(46000, eventlog.StopHeights))
	}
	requestLater := settleRun(requestAt(4050, "v4", phase.Prevote, 4, 0))
	for i, ev := range requestLater { // v4 prevotes at height 3, and its node asks for nothing else there
		if ev.Kind == eventlog.KindBlock && ev.Height == 3 {
			requestLater = slices.Insert(requestLater, i, signAt(2500, "v4", phase.Prevote, 3, 0, "B", 1))
			break
		}
	}
	// Three of four prevote at height 3 (signed), and no vote event
	// shows where they went, until one of height 4.
	firstVoteLate := stuckRun(cat(enterRound(2100, 3, 0, all...),
		[]eventlog.Event{signAt(2200, "v1", phase.Prevote, 3, 0, "", 1), signAt(2200, "v2", phase.Prevote, 3, 0, "", 1),
			signAt(2200, "v3", phase.Prevote, 3, 0, "", 1), block(3, 30000, 0, nil, nil), block(4, 31000, 0, nil, nil),
			voteAt(31500, "v1", "v1", phase.Prevote, 4, 0, ""), block(5, 32000, 0, nil, nil)})...)
	firstMarkLate := stuckRun(block(3, 30000, 0, nil, nil), block(4, 31000, 0, nil, nil),
		stepAt(31500, "v1", 5, 0, "new_height"), block(5, 32000, 0, nil, nil))
	tests := []struct {
		name string
		evs  []eventlog.Event
	}{
		{"the threshold: a stretch no halt by the intervals so far is one by all of them", slowThenFast()},
		{"v4's first sign_request comes after its missed precommit was judged", requestLater},
		{"the first vote event comes after a halt was judged", firstVoteLate},
		{"the first consensus event comes after a halt was judged", firstMarkLate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, whole := latePasses(t, tt.evs)
			if reflect.DeepEqual(reportsOf(t, first), reportsOf(t, whole)) {
				t.Fatalf("the late fact changes nothing")
			}
		})
	}
}

// TestSettleLoadOutOfStep: a transaction is counted once, with its first
// accepted submission and the lowest block carrying it; one block out of
// height order or a submission again after it was counted asks for a
// pass that counts at the end.
func TestSettleLoadOutOfStep(t *testing.T) {
	tx := func(ms float64, hash, result string) eventlog.Event {
		return eventlog.Event{Time: at(ms), Kind: eventlog.KindTx, Node: "v1", Tx: hash, Result: result}
	}
	withTxs := func(ev eventlog.Event, hashes ...string) eventlog.Event {
		ev.TxHashes, ev.Txs = hashes, len(hashes)
		return ev
	}
	start := runStart("v1")
	start.Load = &eventlog.LoadInfo{Rate: 10, SizeBytes: 100, To: "all"}
	tests := []struct {
		name string
		evs  []eventlog.Event
	}{
		{"blocks out of height order", []eventlog.Event{start, tx(100, "aa", eventlog.TxAccepted), block(1, 1000, 0, nil, nil),
			withTxs(block(3, 3000, 0, nil, nil), "aa"), withTxs(block(2, 2000, 0, nil, nil), "aa"), runEnd(3500, eventlog.StopHeights)}},
		{"submitted again once counted", []eventlog.Event{start, tx(100, "aa", eventlog.TxAccepted), withTxs(block(1, 1000, 0, nil, nil), "aa"),
			tx(1500, "aa", eventlog.TxAccepted), withTxs(block(2, 2000, 0, nil, nil), "aa"), runEnd(2500, eventlog.StopHeights)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, whole := latePasses(t, tt.evs)
			if got, want := first.Summary().Load, whole.Summary().Load; reflect.DeepEqual(got, want) || want.Committed != 1 {
				t.Errorf("load %+v, want one committed, unlike the first pass's %+v", want, got)
			}
		})
	}
}
