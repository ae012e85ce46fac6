package results

import (
	"encoding/json"
	"fmt"
	"github.com/valnet/valnet/results/eventlog"
	"io"
	"slices"
	"sort"
	"time"

	"github.com/valnet/valnet/internal/phase"
)

// Summary is summary.json: everything a report says about a run, derived
// from its events alone (see Summarize for the definitions). JSON keys are a
// public contract: add keys, never rename them.
type Summary struct {
	Scenario   string `json:"scenario"`
	Backend    string `json:"backend"`
	ChainID    string `json:"chain_id"`
	Seed       int64  `json:"seed"`
	OK         bool   `json:"ok"`
	StopReason string `json:"stop_reason"`
	// InterruptedStage is run_end's: the stage Ctrl-C arrived in, if it
	// did (StageSetup ... StageStop).
	InterruptedStage string `json:"interrupted_stage,omitempty"`
	Error            string `json:"error"`
	// DurationMS is the run's length on its event clock: wall time for
	// real nodes, virtual time for a MODEL run (the sim). WallMS is run_end's
	// wall-clock length on this host (0 for a stream recorded before valnet
	// wrote it, or one without run_end).
	DurationMS int64 `json:"duration_ms"`
	WallMS     int64 `json:"wall_ms,omitempty"`
	// Partial: the stream is not the whole run (no run_end: the runner
	// was killed; a torn last line). PartialReasons says why, one line
	// each. The figures cover the events recorded.
	Partial        bool     `json:"partial,omitempty"`
	PartialReasons []string `json:"partial_reasons,omitempty"`

	// Model is run_start's: the run is a MODEL, not real nodes (nil for
	// real nodes). Unavailable names the values it cannot tell (see
	// summarizeUnavailable): metrics of `expect` and summary keys, left at
	// 0 in this summary but never judged, compared or shown as 0.
	Model       *eventlog.ModelInfo `json:"model,omitempty"`
	Unavailable []string            `json:"unavailable,omitempty"`

	Heights         HeightStats        `json:"heights"`
	Rounds          RoundStats         `json:"rounds"`
	RoundChanges    []RoundChange      `json:"round_changes"`
	BlockIntervalMS IntervalStats      `json:"block_interval_ms"`
	Validators      []ValidatorSummary `json:"validators"`

	Faults []FaultWindow `json:"faults,omitempty"`
	// Halts are stretches with no commit longer than the halt threshold
	// (see haltThreshold: run.halt_after when set, else the longer of two
	// rounds of timeouts plus timeout_commit and 5 × the median block
	// interval).
	Halts []Halt `json:"halts"`

	// QuorumHeights counts the committed heights whose deciding node's
	// vote events show the +2/3 of precommits that decided them: the
	// denominator of each validator's quorum_critical.
	QuorumHeights int `json:"quorum_heights"`

	DoubleSigns       int          `json:"double_signs"`
	DoubleSignDetails []DoubleSign `json:"double_sign_details,omitempty"`

	// Load is the transaction load and what became of it; nil for a run
	// without one (load.go).
	Load *LoadSummary `json:"load,omitempty"`
	// Nodes are the nodes that are not validators (run_start's nodes):
	// heights and how late blocks reached them (peernodes.go).
	Nodes []PeerNodeSummary `json:"nodes,omitempty"`

	// Host is the machine the run ran on, measured every second; nil for a
	// stream without host events.
	Host *HostSummary `json:"host,omitempty"`

	// Devices are the shared signing devices of the run, by name, from
	// run_start and device events; nil without devices.
	Devices map[string]*DeviceSummary `json:"devices,omitempty"`
	// Threshold are the threshold signers (a MODEL of the protocol), by
	// validator, from cosign events; nil without any.
	Threshold map[string]*ThresholdSummary `json:"threshold,omitempty"`

	// NodeErrors lists node_error events: the stream may be missing events
	// after them, so every number above may undercount.
	NodeErrors []NodeError `json:"node_errors,omitempty"`

	Expectations []ExpectationResult `json:"expectations"`

	// Missed is every missed precommit with its cause, as missed.csv lists
	// them (MissedPrecommits). Not part of summary.json: missed_by_cause
	// counts them there.
	Missed []MissedPrecommit `json:"-"`
}

// HeightStats: committed heights.
type HeightStats struct {
	First     int64 `json:"first"`
	Last      int64 `json:"last"`
	Committed int   `json:"committed"`
	Target    int64 `json:"target,omitempty"` // run_start's heights
}

// RoundStats: how many rounds heights took to commit.
type RoundStats struct {
	HeightsWithRoundChange int   `json:"heights_with_round_change"`
	MaxCommitRound         int32 `json:"max_commit_round"`
	ExtraRounds            int64 `json:"extra_rounds"`
	// UnknownCommitRound counts committed heights left out of the stats
	// above because their commit round could not be determined.
	UnknownCommitRound int `json:"unknown_commit_round"`
}

// IntervalStats: observed time between consecutive commits, ms.
type IntervalStats struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	Max   float64 `json:"max"`
}

// ValidatorSummary is one validator's row in summary.json.
type ValidatorSummary struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	Signer  string `json:"signer"`
	// Node: a stock binary that ran its node (ValidatorInfo.Node); ""
	// for valnet's own.
	Node  string `json:"node,omitempty"`
	Power int64  `json:"power"`

	MissedPrecommits  int `json:"missed_precommits"`
	NilPrecommits     int `json:"nil_precommits"`
	PrecommitsCounted int `json:"precommits_counted"`
	// MissedBlocks is MissedPrecommits under the name operators' alerting
	// uses; MissedByCause splits the same count by cause.
	MissedBlocks         int           `json:"missed_blocks"`
	MissedByCause        MissedByCause `json:"missed_by_cause"`
	ConsecutiveMissedMax int           `json:"consecutive_missed_max"`
	LatePrevotes         int           `json:"late_prevotes"`
	LatePrecommits       int           `json:"late_precommits"`
	// QuorumCritical counts the heights (of the summary's quorum_heights)
	// whose quorum waited for this validator's precommit: it was among the
	// precommits that first gave the deciding node +2/3 (see
	// index.quorumCritical).
	QuorumCritical int `json:"quorum_critical"`

	Proposals            ProposalStats `json:"proposals"`
	ProposalsNotReceived int           `json:"proposals_not_received"`

	SignLatencyMS     PhaseLatency `json:"sign_latency_ms"`
	InjectedLatencyMS LatencyStats `json:"injected_latency_ms"`
	SignErrors        int          `json:"sign_errors"`
	// SignFailures splits SignErrors by why each signature did not reach
	// the node; SignErrorsUnexplained counts those no fault on the
	// validator (its node, signer or cosigners) explains: the signer's
	// own, which the default expectation fails (docs/results.md).
	SignFailures          SignFailures `json:"sign_failures"`
	SignErrorsUnexplained int          `json:"sign_errors_unexplained"`

	// With a remote signer: signing latency as the signer saw it (inside
	// the backend), and the transport's share of each signature (node side
	// minus signer side, matched signature by signature).
	SignerLatencyMS     *PhaseLatency `json:"signer_latency_ms,omitempty"`
	TransportOverheadMS *LatencyStats `json:"transport_overhead_ms,omitempty"`

	// On a shared signing device: its name, the wait in its queue of
	// each successful signature (part of sign_latency_ms), and the rest
	// of each signature's latency (latency - queue): the device's service
	// time plus the decorators around it (the guard, injected faults and
	// a signer.latency delay, which sit outside the device).
	Device        string        `json:"device,omitempty"`
	SignQueueMS   *LatencyStats `json:"sign_queue_ms,omitempty"`
	SignServiceMS *LatencyStats `json:"sign_service_ms,omitempty"`
}

// ProposalStats: the validator's proposer turns and what it did with them.
type ProposalStats struct {
	Expected int `json:"expected"`
	Made     int `json:"made"`
	Missed   int `json:"missed"` // max(Expected-Made, 0)
}

// PhaseLatency holds signing latency per phase, and over all phases together
// (what a sign_latency_* expectation without a phase checks).
type PhaseLatency struct {
	Proposal  LatencyStats `json:"proposal"`
	Prevote   LatencyStats `json:"prevote"`
	Precommit LatencyStats `json:"precommit"`
	All       LatencyStats `json:"all"`
}

// DoubleSign is one conflicting (validator, height, round, phase) group.
type DoubleSign struct {
	Validator string   `json:"validator"`
	Height    int64    `json:"height"`
	Round     int32    `json:"round"`
	Phase     string   `json:"phase"`
	BlockIDs  []string `json:"block_ids"` // in signing order; "" is a nil vote
}

// FaultWindow is one scenario fault as it happened: from its start event to
// its end event (EndMS 0: it never ended during the run), in ms since the
// run started.
type FaultWindow struct {
	Action  string `json:"action"`
	Target  string `json:"target"`
	StartMS int64  `json:"start_ms"`
	EndMS   int64  `json:"end_ms,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

// NodeError is a node_error event.
type NodeError struct {
	Time  time.Time `json:"t"`
	Node  string    `json:"node"`
	Error string    `json:"error"`
}

// phases are the signing phases (Event.Phase), in consensus order.
var phases = phase.All()

// Failed returns the expectations that did not hold.
func (s *Summary) Failed() []ExpectationResult {
	var out []ExpectationResult
	for _, e := range s.Expectations {
		if !e.OK {
			out = append(out, e)
		}
	}
	return out
}

// Summarize derives the summary of a run from its events (stream order):
// it feeds them to a Summarizer (see Summarizer), again if a pass asks for
// it; a stream in a file is better summarized by SummarizeFile, which
// never holds it.
//
// Definitions:
//   - Height H is committed when a block event for H exists. heights.first
//     and .last are the min and max committed height, .committed the number
//     of distinct committed heights.
//   - The commit round of H is block H+1's last_commit_round; for a height
//     without an H+1 block (the last one) the lowest round of a step
//     "commit" event at H; else unknown and excluded from round stats.
//     rounds: heights with commit round > 0, the max, and the sum (extra
//     rounds spent beyond round 0).
//   - block_interval_ms: time between the block events (event time t) of
//     H-1 and H, for every committed H whose H-1 is committed.
//   - missed_precommits(v): committed heights H with a block H+1 whose
//     last_commit_absent names v; nil_precommits likewise with
//     last_commit_nil; precommits_counted: the number of such H (the
//     denominator of both).
//   - proposals.expected(v): distinct (height, round) named by a new_round
//     event with proposer v, within the committed window: height <= last
//     committed and round <= the height's commit round when known (rounds
//     after the decision, or of the unfinished height, were not needed).
//     proposals.made(v): distinct (height, round) in the same window with a
//     successful proposal sign event by v. Using one window for both keeps
//     made <= expected in practice, so missed = expected - made is the
//     number of wasted turns.
//   - missed_by_cause(v): each missed precommit classified (see
//     MissedPrecommits and docs/results.md); missed_blocks = missed_precommits;
//     consecutive_missed_max: the longest run of consecutive heights with v
//     absent.
//   - late_prevotes/late_precommits(v): (height, round) whose vote of v
//     reached a majority of the other nodes that got +2/3 of that phase
//     only after they had it (see index.lateVotes).
//   - round_changes: each round r < commit round of a committed height, with
//     its cause (see index.roundChanges); proposals_not_received(v): those
//     of v's turns whose proposal most other nodes lacked when prevoting.
//   - sign_latency_ms: per phase (and all phases together) over successful
//     sign events, latency_ms; injected_latency_ms: injected_ms of the
//     successful sign events that were delayed (injected_ms > 0), so it
//     reads as the latency model's actual draws; sign_errors: sign events
//     with an error.
//   - double_signs: (validator, height, round, phase) groups whose successful
//     sign events carry more than one distinct block_id ("" for nil counts as
//     one). Re-signing the same block_id is what FilePV does on a retry and
//     is not a double sign.
//   - scenario, backend, chain_id, seed and the validator list (order
//     included) come from run_start; validators that only appear in other
//     events are appended by name. stop_reason and error come from run_end;
//     without one the run is an error. duration_ms runs from run_start to
//     run_end (to the last event if run_end is missing).
//   - expectations: each `expect` entry of run_start, judged on the values
//     above: ok when min <= value <= max. A per-validator metric without a
//     validator yields one result per validator. An entry that cannot be
//     evaluated (unknown metric, validator or phase) fails with an error.
//   - devices: one entry per device named in run_start's validators or by
//     a device event; its counters are the last device event's (see
//     devices.go); sign_queue_ms(v): queue_ms of v's successful sign events,
//     sign_service_ms(v): latency_ms - queue_ms of the same events
//     (both present for a validator on a device).
//   - model: run_start's model (a MODEL run: virtual time, not real
//     nodes). unavailable: in a model run without vote events
//     (vote_events false), VoteEventValues, and every halts_<cause> when
//     a halt's cause needed vote events (its cause is then unknown); their
//     fields stay 0, an expectation on them fails with "cannot tell", and
//     reports show them as n/a.
//   - node_errors: node_error events, listed as a warning that the stream
//     may be incomplete; they do not change ok by themselves.
//   - ok: every expectation holds and the run neither errored nor was
//     interrupted (stop_reason heights or max_duration).
func Summarize(events []eventlog.Event) *Summary { return summarizeEvents(events).Summary() }

// summarize builds the summary once the stream has ended and every
// height is judged (see Summarizer.Summary).
func (z *Summarizer) summarize() *Summary {
	s := &Summary{Validators: []ValidatorSummary{}, Expectations: []ExpectationResult{}, RoundChanges: []RoundChange{}}
	start := z.start
	s.NodeErrors = z.nodeErrors
	z.summarizeRun(s)
	s.Host = z.host.result()
	s.Devices = summarizeDevices(start, z.devices)
	s.Threshold = z.summarizeThreshold()

	summarizeChain(s, z.c, &z.intervals)
	z.summarizeValidators(s)
	s.Load = z.load.result(start)
	s.Nodes = z.peers.result()
	z.summarizeConsensus(s)
	z.summarizeFaults(s)
	s.Halts = z.halts
	summarizeUnavailable(s, start)

	if start != nil {
		for _, exp := range start.Expect {
			s.Expectations = append(s.Expectations, evaluate(s, exp)...)
		}
	}
	if s.Host != nil && s.Host.Overloaded {
		for i := range s.Expectations {
			s.Expectations[i].Warning = OverloadedNotice
		}
	}
	// A run that hit max_duration never reached run.heights: it fails even
	// when its expectations hold, so a stalled chain cannot pass CI.
	s.OK = len(s.Failed()) == 0 && s.StopReason == eventlog.StopHeights
	return s
}

// summarizeFaults pairs each fault's start and end events.
func (z *Summarizer) summarizeFaults(s *Summary) {
	var t0 time.Time
	if z.start != nil {
		t0 = z.start.Time
	}
	open := map[string]int{} // action/target -> index of the open window
	for _, ev := range z.x.faults {
		key := ev.action + "/" + ev.validator
		ms := max(ev.t.Sub(t0).Milliseconds(), 0)
		switch ev.state {
		case eventlog.FaultStart:
			open[key] = len(s.Faults)
			s.Faults = append(s.Faults, FaultWindow{Action: ev.action, Target: ev.validator, StartMS: ms, Detail: ev.detail})
		case eventlog.FaultEnd:
			if j, ok := open[key]; ok {
				s.Faults[j].EndMS = ms
				delete(open, key)
			}
		}
	}
}

func (z *Summarizer) summarizeRun(s *Summary) {
	start, end := z.start, z.end
	if start != nil {
		s.Scenario, s.Backend, s.ChainID, s.Seed = start.Scenario, start.Backend, start.ChainID, start.Seed
		s.Model = start.Model
		s.Heights.Target = start.Heights
	}
	switch {
	case end == nil:
		s.StopReason, s.Error = eventlog.StopError, "run did not finish (no run_end event)"
	case end.StopReason == "":
		s.StopReason, s.Error = eventlog.StopError, end.Error
		if s.Error == "" {
			s.Error = "run_end event has no stop_reason"
		}
	default:
		s.StopReason, s.Error = end.StopReason, end.Error
	}
	if end != nil {
		s.InterruptedStage = end.InterruptedStage
	} else {
		s.Partial = true
		s.PartialReasons = append(s.PartialReasons, fmt.Sprintf("no run_end event: the runner stopped before the run was over (killed?); the figures cover the %d events recorded", z.n))
	}
	if z.torn != "" {
		s.Partial = true
		s.PartialReasons = append(s.PartialReasons, z.torn)
	}
	if start == nil {
		return
	}
	stop := start.Time
	if end != nil {
		stop = end.Time
	} else if z.latest.After(stop) {
		stop = z.latest
	}
	s.DurationMS = max(stop.Sub(start.Time).Milliseconds(), 0)
	if end != nil {
		s.WallMS = end.WallMS
	}
}

// DurationText says how long the run took, and on which clock: a MODEL
// run's event time is virtual, so both clocks are named ("7m51s of
// virtual time, 55s wall"); a real run's is the wall clock.
func (s *Summary) DurationText() string {
	d := func(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() }
	if s.Model == nil {
		return d(s.DurationMS)
	}
	if s.WallMS <= 0 {
		return d(s.DurationMS) + " of virtual time (MODEL)"
	}
	return fmt.Sprintf("%s of virtual time (MODEL), %s wall", d(s.DurationMS), d(s.WallMS))
}

// WallSeconds is the run's wall-clock length in seconds: WallMS, or for a
// stream without it the duration of a real run (a MODEL run's virtual
// time is not wall time, so 0).
func (s *Summary) WallSeconds() float64 {
	switch {
	case s.WallMS > 0:
		return float64(s.WallMS) / 1000
	case s.Model == nil:
		return float64(s.DurationMS) / 1000
	}
	return 0
}

// summarizeChain: heights, rounds and block intervals (the intervals'
// samples kept as blocks came).
func summarizeChain(s *Summary, c *chain, intervals *samples) {
	s.Heights.First, s.Heights.Last, s.Heights.Committed = c.first(), c.last(), len(c.heights)
	for _, h := range c.heights {
		if r, ok := c.commitRound(h, noRound); !ok {
			s.Rounds.UnknownCommitRound++
		} else if r > 0 {
			s.Rounds.HeightsWithRoundChange++
			s.Rounds.MaxCommitRound = max(s.Rounds.MaxCommitRound, r)
			s.Rounds.ExtraRounds += int64(r)
		}
	}
	st := intervals.stats()
	s.BlockIntervalMS = IntervalStats{Count: st.Count, P50: st.P50, P95: st.P95, Max: st.Max}
}

// turn keys signatures by (height, round, phase) and double-sign groups
// by (validator, height, round, phase).
type turn struct {
	validator string
	height    int64
	round     int32
	phase     string
}

// valAcc accumulates one validator's counts and samples.
type valAcc struct {
	missed, nils, signErrors int
	unexplained              int // sign errors no fault explains
	failures                 SignFailures
	latency                  [3]samples // by phase (phases' order)
	all                      samples
	injected                 samples
	queue                    samples
	service                  samples    // latency - queue of each signature on a device
	signer                   [3]samples // remote signer's side, by phase
	signerAll                samples
	overhead                 samples
	turns                    int // proposer turns, (height, round) in the window
	made                     int // signed proposals in the window
}

// phaseIndex is p's place in phases, -1 for another phase.
func phaseIndex(p string) int {
	for i, ph := range phases {
		if ph == p {
			return i
		}
	}
	return -1
}

func (z *Summarizer) summarizeValidators(s *Summary) {
	c := z.c
	counted := 0
	for _, h := range c.heights {
		nb := c.lastCommit(h)
		if nb == nil {
			continue
		}
		counted++
		for _, name := range c.namesOf(nb.absent) {
			if name != "" {
				z.acc(z.names.id(name)).missed++
			}
		}
		for _, name := range c.namesOf(nb.nils) {
			if name != "" {
				z.acc(z.names.id(name)).nils++
			}
		}
	}

	slices.SortStableFunc(z.doubleSigns, func(a, b seqDoubleSign) int { return cmpInt(a.seq, b.seq) })
	for _, ds := range z.doubleSigns {
		s.DoubleSignDetails = append(s.DoubleSignDetails, ds.DoubleSign)
	}
	s.DoubleSigns = len(s.DoubleSignDetails)

	// Validators in run_start order, then any others the events mention.
	rows := []ValidatorSummary{} // [] not null in JSON
	listed := map[string]bool{}
	if z.start != nil {
		for _, v := range z.start.Validators {
			if !listed[v.Name] {
				listed[v.Name] = true
				rows = append(rows, ValidatorSummary{Name: v.Name, Address: v.Address, Signer: v.Signer, Power: v.Power, Device: v.Device, Node: v.Node})
			}
		}
	}
	var others []string
	for id := range z.vals {
		if name := z.names.name(id); !listed[name] {
			others = append(others, name)
		}
	}
	sort.Strings(others)
	for _, name := range others {
		rows = append(rows, ValidatorSummary{Name: name})
	}

	for i := range rows {
		v := &rows[i]
		a := z.acc(z.names.id(v.Name))
		v.MissedPrecommits, v.NilPrecommits, v.PrecommitsCounted = a.missed, a.nils, counted
		v.SignErrors, v.SignFailures, v.SignErrorsUnexplained = a.signErrors, a.failures, a.unexplained
		v.Proposals = ProposalStats{Expected: a.turns, Made: a.made}
		v.Proposals.Missed = max(v.Proposals.Expected-v.Proposals.Made, 0)
		v.SignLatencyMS = PhaseLatency{
			Proposal:  a.latency[0].stats(),
			Prevote:   a.latency[1].stats(),
			Precommit: a.latency[2].stats(),
			All:       a.all.stats(),
		}
		v.InjectedLatencyMS = a.injected.stats()
		if a.signerAll.len() > 0 {
			v.SignerLatencyMS = &PhaseLatency{
				Proposal:  a.signer[0].stats(),
				Prevote:   a.signer[1].stats(),
				Precommit: a.signer[2].stats(),
				All:       a.signerAll.stats(),
			}
		}
		if a.overhead.len() > 0 {
			st := a.overhead.stats()
			v.TransportOverheadMS = &st
		}
		if v.Device != "" || a.queue.len() > 0 {
			queue, service := a.queue.stats(), a.service.stats()
			v.SignQueueMS, v.SignServiceMS = &queue, &service
		}
	}
	s.Validators = rows
}

// WriteSummaryJSON writes summary.json: s as indented JSON with a trailing
// newline. The runner writes it through internal/atomicfile, so readers
// never see half a summary.
func WriteSummaryJSON(w io.Writer, s *Summary) error {
	enc := json.NewEncoder(w) // Encode adds the trailing newline
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // keep signer names like "a<b>" readable
	return enc.Encode(s)
}
