package results

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/valnet/valnet/internal/action"
	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/results/eventlog"
	"slices"
	"strings"
	"time"
)

// genConfig scripts a synthetic but CometBFT-shaped run: every node enters
// each round, the proposer signs, everyone prevotes and precommits, and the
// first node to commit reports the block, whose LastCommit describes the
// previous height. Used for the golden fixture and the benchmarks.
type genConfig struct {
	validators int
	heights    int64
	start      time.Time

	commitRound map[int64]int32        // height -> round it commits in (default 0)
	signerFails map[int64]bool         // failed rounds: the proposer's signer errors (else it is just silent)
	absent      map[int64][]int        // height -> validators missing from its commit (precommit arrived late)
	nilVotes    map[int64][]int        // height -> validators that prevote and precommit nil in the commit round
	injected    map[int]float64        // validator -> injected delay on its precommits, ms
	resign      map[int64]int          // height -> validator that signs its precommit twice (same block)
	expect      []eventlog.Expectation // recorded in run_start
	nextHeight  bool                   // the run is stopped while height+1 has begun
	gossip      bool                   // every node receives every vote (vote events at each node); else only its own

	// Causes of the absent entries: a validator listed here is also listed
	// in absent; one absent for no listed reason signs in time but its
	// precommit reaches no other node (it is lost on the way).
	lateSign     map[int64]int      // height -> validator whose commit-round precommit returns after the decision
	precommitErr map[int64]int      // height -> validator whose commit-round precommit signature fails
	nodeDown     map[int64]int      // height -> validator whose node is paused for the whole height (node-pause fault)
	names        func(i int) string // validator name, default v1..vN

	// every > 0 repeats the script of heights 1..every over all heights:
	// height h does what height (h-1)%every+1 says (a long run in little
	// memory).
	every int64
}

// gen returns the event stream of the scripted run.
func gen(c genConfig) []eventlog.Event {
	var evs []eventlog.Event
	genEach(c, func(ev *eventlog.Event) { evs = append(evs, *ev) })
	return evs
}

// genEach hands the events of the scripted run to fn one by one, in
// stream order (fn must copy what it keeps).
func genEach(c genConfig, fn func(*eventlog.Event)) {
	if c.names == nil {
		c.names = func(i int) string { return fmt.Sprintf("v%d", i+1) }
	}
	name := c.names
	t := c.start
	emit := func(ev eventlog.Event) {
		ev.Time = t
		fn(&ev)
	}
	at := func(h int64) int64 {
		if c.every > 0 && h > 0 {
			return (h-1)%c.every + 1
		}
		return h
	}
	advance := func(ms float64) { t = t.Add(time.Duration(ms * float64(time.Millisecond))) }
	// Deterministic "local signer" latency in 0.05..0.5 ms.
	local := func(h int64, v, phase int) float64 {
		return 0.05 + float64((int(h)*7+v*13+phase*5)%10)*0.05
	}
	in := func(list []int, v int) bool { return slices.Contains(list, v) }

	var vals []eventlog.ValidatorInfo
	for i := range c.validators {
		sum := sha256.Sum256([]byte(name(i)))
		signer := "local"
		if ms, ok := c.injected[i]; ok {
			signer = fmt.Sprintf("local+latency(fixed %gms, precommit)", ms)
		}
		vals = append(vals, eventlog.ValidatorInfo{Name: name(i), Address: strings.ToUpper(hex.EncodeToString(sum[:20])), Power: 10, Signer: signer})
	}
	emit(eventlog.Event{Kind: eventlog.KindRunStart, Scenario: "fixture", Backend: "inprocess", ChainID: "valnet-fixture", Seed: 7,
		Heights: c.heights, Validators: vals, Expect: c.expect})
	advance(120)
	for i := range c.validators {
		emit(eventlog.Event{Kind: eventlog.KindNodeUp, Node: name(i), RPC: fmt.Sprintf("tcp://127.0.0.1:%d", 26657+10*i), P2P: fmt.Sprintf("tcp://127.0.0.1:%d", 26656+10*i)})
	}
	advance(900)

	blockID := func(h int64) string {
		sum := sha256.Sum256(fmt.Appendf(nil, "block %d", h))
		return strings.ToUpper(hex.EncodeToString(sum[:]))
	}
	sign := func(v int, ph string, h int64, r int32, id string) {
		pi := slices.Index(phases, ph)
		lat := local(h, v, pi)
		ev := eventlog.Event{Kind: eventlog.KindSign, Node: name(v), Validator: name(v), Phase: ph, Height: h, Round: r, BlockID: id}
		if ms, ok := c.injected[v]; ok && ph == phase.Precommit {
			ev.InjectedMS = ms
			lat += ms
		}
		ev.LatencyMS = roundMS(lat)
		advance(lat)
		emit(ev)
	}
	proposer := func(h int64, r int32) int { return int((h - 1 + int64(r)) % int64(c.validators)) }
	down := -1 // the validator whose node is paused at the current height
	nodes := func(f func(i int)) {
		for i := range c.validators {
			if i != down {
				f(i)
			}
		}
	}
	// rotated visits the nodes starting at h mod n, so that who votes last
	// (and is late by the +2/3 definition) changes from height to height.
	rotated := func(h int64, f func(i int)) {
		for k := range c.validators {
			if i := (int(h) + k) % c.validators; i != down {
				f(i)
			}
		}
	}
	// cast: node i casts its vote; with gossip every other node receives it
	// at once, unless it is lost.
	cast := func(i int, phase string, h int64, r int32, id string, lost bool) {
		emit(eventlog.Event{Kind: eventlog.KindVote, Node: name(i), Validator: name(i), Phase: phase, Height: h, Round: r, BlockID: id})
		if !c.gossip || lost {
			return
		}
		nodes(func(j int) {
			if j != i {
				emit(eventlog.Event{Kind: eventlog.KindVote, Node: name(j), Validator: name(i), Phase: phase, Height: h, Round: r, BlockID: id})
			}
		})
	}

	startHeight := func(h int64, r int32) {
		p := proposer(h, r)
		nodes(func(i int) {
			emit(eventlog.Event{Kind: eventlog.KindNewRound, Node: name(i), Height: h, Round: r, Proposer: name(p)})
			emit(eventlog.Event{Kind: eventlog.KindStep, Node: name(i), Height: h, Round: r, Step: "propose"})
		})
	}

	for h := int64(1); h <= c.heights; h++ {
		cr := c.commitRound[at(h)]
		down = -1
		if v, ok := c.nodeDown[at(h)]; ok {
			down = v
			emit(eventlog.Event{Kind: eventlog.KindFault, Validator: name(v), Action: action.NodePause, State: eventlog.FaultStart, Height: h, Detail: "node paused"})
		}
		id := blockID(h)
		for r := int32(0); r <= cr; r++ {
			startHeight(h, r)
			p := proposer(h, r)
			if r < cr {
				// The proposer fails this round: its signer errors or it is
				// silent; everyone times out, prevotes and precommits nil.
				if c.signerFails[at(h)] {
					advance(3)
					emit(eventlog.Event{Kind: eventlog.KindSign, Node: name(p), Validator: name(p), Phase: phase.Proposal, Height: h, Round: r, LatencyMS: 3, Error: "signer: connection reset"})
				}
				advance(3000) // timeout_propose
				rotated(h, func(i int) {
					emit(eventlog.Event{Kind: eventlog.KindStep, Node: name(i), Height: h, Round: r, Step: "prevote"})
					sign(i, phase.Prevote, h, r, "")
					cast(i, phase.Prevote, h, r, "", false)
				})
				advance(1000) // timeout_prevote
				nodes(func(i int) {
					emit(eventlog.Event{Kind: eventlog.KindStep, Node: name(i), Height: h, Round: r, Step: "precommit"})
					sign(i, phase.Precommit, h, r, "")
					cast(i, phase.Precommit, h, r, "", false)
				})
				advance(1000) // timeout_precommit
				continue
			}
			sign(p, phase.Proposal, h, r, id)
			advance(2)
			nodes(func(i int) {
				emit(eventlog.Event{Kind: eventlog.KindProposal, Node: name(i), Height: h, Round: r, BlockID: id})
			})
			vote := func(i int) string {
				if in(c.nilVotes[at(h)], i) {
					return ""
				}
				return id
			}
			rotated(h, func(i int) {
				emit(eventlog.Event{Kind: eventlog.KindStep, Node: name(i), Height: h, Round: r, Step: "prevote"})
				sign(i, phase.Prevote, h, r, vote(i))
				cast(i, phase.Prevote, h, r, vote(i), false)
			})
			advance(4)
			late, isLate := c.lateSign[at(h)]
			var lateFrom time.Time
			nodes(func(i int) {
				emit(eventlog.Event{Kind: eventlog.KindStep, Node: name(i), Height: h, Round: r, Step: "precommit"})
				if isLate && late == i {
					lateFrom = t // its signature returns after the commit
					return
				}
				if v, ok := c.precommitErr[at(h)]; ok && v == i {
					advance(1)
					emit(eventlog.Event{Kind: eventlog.KindSign, Node: name(i), Validator: name(i), Phase: phase.Precommit, Height: h, Round: r, LatencyMS: 1, Error: "signer: connection refused"})
					return
				}
				sign(i, phase.Precommit, h, r, vote(i))
				if v, ok := c.resign[at(h)]; ok && v == i {
					sign(i, phase.Precommit, h, r, vote(i)) // FilePV retry: same vote again
				}
				cast(i, phase.Precommit, h, r, vote(i), in(c.absent[at(h)], i))
			})
			advance(4)
			nodes(func(i int) {
				emit(eventlog.Event{Kind: eventlog.KindStep, Node: name(i), Height: h, Round: r, Step: "commit"})
			})
			if isLate {
				advance(40)
				emit(eventlog.Event{Kind: eventlog.KindSign, Node: name(late), Validator: name(late), Phase: phase.Precommit, Height: h, Round: r,
					BlockID: vote(late), LatencyMS: roundMS(float64(t.Sub(lateFrom).Nanoseconds()) / 1e6)})
				cast(late, phase.Precommit, h, r, vote(late), true) // too late for the others
			}
		}
		bt := t.Add(-7 * time.Millisecond)
		blk := eventlog.Event{Kind: eventlog.KindBlock, Node: name(0), Height: h, Proposer: name(proposer(h, cr)), BlockTime: &bt, Txs: int(h % 3)}
		if h > 1 {
			blk.LastCommitRound = c.commitRound[at(h-1)]
			for _, v := range c.absent[at(h-1)] {
				blk.LastCommitAbsent = append(blk.LastCommitAbsent, name(v))
			}
			for _, v := range c.nilVotes[at(h-1)] {
				blk.LastCommitNil = append(blk.LastCommitNil, name(v))
			}
		}
		emit(blk)
		if down >= 0 {
			emit(eventlog.Event{Kind: eventlog.KindFault, Validator: name(down), Action: action.NodePause, State: eventlog.FaultEnd, Height: h, Detail: "node resumed"})
			down = -1
		}
		nodes(func(i int) {
			emit(eventlog.Event{Kind: eventlog.KindStep, Node: name(i), Height: h + 1, Step: "new_height"})
		})
		advance(1000) // timeout_commit
	}
	if c.nextHeight {
		// Stopped mid-height: a turn and a proposal outside the window.
		h := c.heights + 1
		startHeight(h, 0)
		sign(proposer(h, 0), phase.Proposal, h, 0, blockID(h))
	}
	advance(15)
	emit(eventlog.Event{Kind: eventlog.KindRunEnd, StopReason: eventlog.StopHeights})
}

// fixtureConfig is the run behind testdata/events.jsonl: 4 validators, 8
// heights, every vote gossiped to every node; height 5 needs round 1
// because v1's signer fails in round 0 (proposal-missing); v2 precommits
// nil at height 2; v3's precommit is missing from the commits of heights 3
// (signed after the decision: signer-late) and 4 (signed in time, lost on
// the way: network), two in a row; v1's precommit signature fails at
// height 6 (signer-failed); v2's node is paused during height 7
// (node-down); v4 signs precommits with 200 ms injected latency, so its
// precommits are always the late ones, and re-signs one (not a double
// sign); one expectation fails (v3's misses).
func fixtureConfig() genConfig {
	f := func(v float64) *float64 { return &v }
	return genConfig{
		validators:  4,
		heights:     8,
		start:       time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC),
		commitRound: map[int64]int32{5: 1},
		signerFails: map[int64]bool{5: true},
		absent:      map[int64][]int{3: {2}, 4: {2}, 6: {0}, 7: {1}},
		nilVotes:    map[int64][]int{2: {1}},
		injected:    map[int]float64{3: 200},
		resign:      map[int64]int{7: 3},
		nextHeight:  true,
		gossip:      true,

		lateSign:     map[int64]int{3: 2},
		precommitErr: map[int64]int{6: 0},
		nodeDown:     map[int64]int{7: 1},
		expect: []eventlog.Expectation{
			{Metric: "heights_committed", Min: f(8)},
			{Metric: "max_commit_round", Max: f(1)},
			{Metric: "double_signs", Max: f(0)},
			{Metric: "missed_precommits", Max: f(1)},
			{Metric: "proposals_missed", Validator: "v1", Max: f(1)},
			{Metric: "sign_latency_p99_ms", Validator: "v4", Phase: phase.Precommit, Min: f(150), Max: f(300)},
			{Metric: "block_interval_p95_ms", Max: f(8000)},
		},
	}
}

// benchConfig: 25 validators, 1000 heights, a round change every 50
// heights and a few missed precommits.
func benchConfig() genConfig {
	c := genConfig{
		validators:  25,
		heights:     1000,
		start:       time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
		commitRound: map[int64]int32{},
		signerFails: map[int64]bool{},
		absent:      map[int64][]int{},
		nilVotes:    map[int64][]int{},
		injected:    map[int]float64{24: 150},
		resign:      map[int64]int{},
	}
	for h := int64(50); h <= c.heights; h += 50 {
		c.commitRound[h] = 1
		c.signerFails[h] = true
		c.absent[h+1] = []int{int(h/50) % 25}
	}
	return c
}
