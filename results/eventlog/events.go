// Package eventlog is the event contract of a run: the Event types, their
// line in events.jsonl (codec), the Writer and the readers. It is all a
// backend imports to record what it saw (nodes, the sim, the runner); the
// analysis (package results) and the reports read events only, so
// events.jsonl is the one road from a run to a report.
package eventlog

import "time"

// Kind names the type of an Event. The set is closed; readers ignore kinds
// they do not know so that old reports can read newer runs.
type Kind string

const (
	// KindRunStart opens every stream: Scenario, Backend, Seed, ChainID,
	// Validators (the genesis validator set with names), Heights (target),
	// and Model when the run is a MODEL (a simulation) rather than real
	// nodes.
	KindRunStart Kind = "run_start"
	// KindNodeUp: node Node is running; RPC and P2P hold its addresses.
	KindNodeUp Kind = "node_up"
	// KindSign: validator Validator finished signing Phase at Height/Round.
	// LatencyMS is the whole call as the node saw it (injected delay
	// included), InjectedMS the delay added by the latency model, BlockID the
	// hash signed ("" = a nil vote), Error set when the signer refused.
	KindSign Kind = "sign"
	// KindSignRequest: validator Validator's node asked its signer for a
	// Phase signature at Height/Round (the node's view; with the process
	// and docker backends, where the request reached the runner's signer).
	// Its sign event follows when the signer answers: a request without
	// one is a signature the signer never returned.
	KindSignRequest Kind = "sign_request"
	// KindVote: node Node received (or cast) a vote of Validator for
	// Phase (prevote|precommit) at Height/Round for BlockID ("" = nil).
	KindVote Kind = "vote"
	// KindNewRound: node Node entered Height/Round; Proposer is the
	// validator whose turn it is to propose.
	KindNewRound Kind = "new_round"
	// KindStep: node Node entered Step of Height/Round.
	KindStep Kind = "step"
	// KindProposal: node Node has the complete proposal for Height/Round.
	KindProposal Kind = "proposal"
	// KindBlock: the first node to commit Height reports the block. Proposer,
	// BlockTime (header time), Txs; LastCommit* describe block Height-1 as
	// recorded in this block: its commit round and which validators'
	// CommitSig is absent or nil.
	KindBlock Kind = "block"
	// KindFault: a scenario fault on Validator (the target) changed State
	// ("start" or "end"): Action (e.g. signer-delay), Detail (what it does).
	KindFault Kind = "fault"
	// No kind records a missed precommit or its cause: both are derived at
	// report time from blocks, signatures and faults (missed.csv), so a
	// better classifier re-reads old runs. Streams written before 2026-12
	// hold "missed" lines (with "cause"); readers keep and ignore them.
	// KindNodeError: something went wrong inside node Node (Error), e.g. an
	// event subscription that CometBFT cancelled; events may be missing.
	KindNodeError Kind = "node_error"
	// KindHost: one second of the machine the run runs on, measured by the
	// runner (Host): CPU busy against cores, scheduling lag, memory. A
	// saturated host slows every node at once; results say so rather than
	// blame the network.
	KindHost Kind = "host"
	// KindTx: the load generator submitted transaction Tx (TxHash) to node
	// Node's RPC broadcast_tx_sync at Time; Result says what came back
	// (TxAccepted, TxRejected, TxFailed) and Error why it was not accepted;
	// LatencyMS is the call's round trip.
	KindTx Kind = "tx"
	// KindDevice: the account so far of a shared signing device (Device),
	// recorded every few seconds and once at the end; counters are
	// cumulative, so the last one per device is its whole run.
	KindDevice Kind = "device"
	// KindRunEnd closes a stream: StopReason, Error, WallMS.
	KindRunEnd Kind = "run_end"
)

// SideSigner marks a sign event seen from the remote signer's side.
const SideSigner = "signer"

// Results of a load transaction (KindTx).
const (
	// TxAccepted: CheckTx passed (code 0); the node holds it in its mempool.
	TxAccepted = "accepted"
	// TxRejected: the node answered and refused it (a CheckTx code, or a
	// JSON-RPC error such as a full mempool or a transaction already in
	// the cache).
	TxRejected = "rejected"
	// TxFailed: no answer: the node is down, the connection failed or the
	// call timed out. The node may still have taken it.
	TxFailed = "failed"
)

// Fault states. A window is a start and its end; an instant is a fault
// event that is no window: a fault that was not applied, or an action
// (node-start, node-resume, heal) that only ends others' windows and had
// none to end.
const (
	FaultStart   = "start"
	FaultEnd     = "end"
	FaultInstant = "instant"
)

// Stop reasons, as summary.json reports them.
const (
	StopHeights     = "heights"
	StopMaxDuration = "max_duration"
	StopInterrupted = "interrupted"
	StopError       = "error"
)

// Stages of a run, as interrupted_stage names them.
const (
	StageSetup  = "setup"  // layout, signers, genesis, link fabric: no node started yet
	StageStart  = "start"  // starting the nodes
	StageRun    = "run"    // the network runs; faults are applied
	StageStop   = "stop"   // stopping the nodes, closing the signers
	StageReport = "report" // writing summary.json and the derived files
)

// Event is one line of events.jsonl. Fields that do not apply to a Kind are
// left empty and omitted from the JSON.
type Event struct {
	Time time.Time `json:"t"`
	Kind Kind      `json:"kind"`

	Node      string `json:"node,omitempty"`      // node that observed the event
	Validator string `json:"validator,omitempty"` // validator the event is about
	Height    int64  `json:"height,omitempty"`
	Round     int32  `json:"round,omitempty"`
	Phase     string `json:"phase,omitempty"` // proposal | prevote | precommit
	Step      string `json:"step,omitempty"`  // propose, prevote, prevote_wait, precommit, precommit_wait, commit, new_height, new_round
	BlockID   string `json:"block_id,omitempty"`

	// sign. Side is "" for the node's view of a signature (request sent ->
	// signature back; the only view for a direct signer) and "signer" for
	// the remote signer's view of the same signature (inside the backend).
	Side       string  `json:"side,omitempty"`
	LatencyMS  float64 `json:"latency_ms,omitempty"`
	InjectedMS float64 `json:"injected_ms,omitempty"`
	// QueueMS is the part of LatencyMS spent waiting for a shared device
	// before it started on the signature; present (0 included) only for a
	// signer on a device, on the side that saw the queue.
	QueueMS *float64 `json:"queue_ms,omitempty"`
	Error   string   `json:"error,omitempty"`
	// Failure says why a sign event's signature did not reach the node
	// (set with Error): signer-failed (an error answer),
	// signature-invalid (it does not verify; withheld), signer-conflict
	// (a double-sign rule withheld it) or signer-not-answering (no
	// answer). "" in streams written before it existed: read as
	// signer-failed.
	Failure string `json:"failure,omitempty"`

	// new_round, block
	Proposer string `json:"proposer,omitempty"`

	// block. TxHashes: TxHash of each transaction in the block, in block
	// order; BlockBytes: the block's encoded size.
	BlockTime        *time.Time `json:"block_time,omitempty"`
	Txs              int        `json:"txs,omitempty"`
	BlockBytes       int        `json:"block_bytes,omitempty"`
	TxHashes         []string   `json:"tx_hashes,omitempty"`
	LastCommitRound  int32      `json:"last_commit_round,omitempty"`
	LastCommitAbsent []string   `json:"last_commit_absent,omitempty"`
	LastCommitNil    []string   `json:"last_commit_nil,omitempty"`

	// node_up
	RPC string `json:"rpc,omitempty"`
	P2P string `json:"p2p,omitempty"`

	// run_start
	Scenario   string          `json:"scenario,omitempty"`
	Backend    string          `json:"backend,omitempty"`
	ChainID    string          `json:"chain_id,omitempty"`
	Seed       int64           `json:"seed,omitempty"`
	Heights    int64           `json:"heights,omitempty"`
	Validators []ValidatorInfo `json:"validators,omitempty"`
	// Nodes are the run's nodes that are not validators (full nodes,
	// seeds, sentries): their events count for heights and block
	// latency, never for votes.
	Nodes  []PeerNodeInfo `json:"nodes,omitempty"`
	Expect []Expectation  `json:"expect,omitempty"`
	// HaltAfterMS and HaltAfterExplicit: the scenario's run.halt_after
	// (explicit: a gap without a commit longer than this is a halt), or the
	// runner's default from the consensus timeouts, which the summary
	// raises to 5 × the run's median block interval (see haltThreshold).
	HaltAfterMS       int64 `json:"halt_after_ms,omitempty"`
	HaltAfterExplicit bool  `json:"halt_after_explicit,omitempty"`

	// tx (and TxHashes of a block)
	Tx     string `json:"tx,omitempty"`
	Result string `json:"result,omitempty"`

	// run_start: the scenario's load, when it has one
	Load *LoadInfo `json:"load,omitempty"`

	// run_start: set by a backend that is a MODEL of consensus (virtual
	// time, no real nodes), nil for real nodes. Every report says so, and
	// what the model did not record is reported as unknown (see ModelInfo).
	Model *ModelInfo `json:"model,omitempty"`

	// fault
	Action string `json:"action,omitempty"`
	State  string `json:"state,omitempty"` // start | end
	Detail string `json:"detail,omitempty"`

	// host
	Host *HostSample `json:"host,omitempty"`

	// device
	Device *DeviceSample `json:"device,omitempty"`

	// cosign
	Cosign *CosignSample `json:"cosign,omitempty"`

	// run_end
	StopReason string `json:"stop_reason,omitempty"`
	// InterruptedStage is the stage of the run (see the Stage constants)
	// when Ctrl-C (SIGINT or SIGTERM) arrived, if it did: with stop_reason
	// interrupted, where the run was cut short; with another stop_reason,
	// the run had ended by itself and was interrupted while stopping.
	InterruptedStage string `json:"interrupted_stage,omitempty"`
	// WallMS is how long the run took on this host's clock, from its
	// start to run_end. Event times are the backend's clock: the same for
	// real backends, virtual time for the sim (whose wall time is this).
	WallMS int64 `json:"wall_ms,omitempty"`
}

// HostSample is one second of the host, as the runner measured it.
type HostSample struct {
	Cores int `json:"cores"` // CPUs the runner may use
	// CPUBusy is the share of all cores busy over the second (0..1), for
	// the whole machine (/proc/stat): nodes in other processes count.
	CPUBusy float64 `json:"cpu_busy"`
	// SchedLagP99MS is the 99th percentile over the second of how long the
	// runner's goroutines waited to run once runnable (Go's
	// /sched/latencies:seconds), and TickLagMS the worst lateness of a
	// 10 ms ticker in the runner: both grow when the cores are saturated.
	SchedLagP99MS float64 `json:"sched_lag_p99_ms"`
	TickLagMS     float64 `json:"tick_lag_ms"`
	RSSMB         float64 `json:"rss_mb"`               // the runner process's resident memory
	Overloaded    bool    `json:"overloaded,omitempty"` // this second the host was saturated (see Saturated)
}

// LoadInfo is the scenario's load as recorded in run_start.
type LoadInfo struct {
	Rate       float64 `json:"rate"` // transactions per second asked
	SizeBytes  int     `json:"size_bytes"`
	To         string  `json:"to"` // "all" or a validator
	StartMS    int64   `json:"start_ms,omitempty"`
	DurationMS int64   `json:"duration_ms,omitempty"` // 0: to the end of the run
}

// ModelInfo is run_start's model: the run is a MODEL of CometBFT
// consensus in virtual time (e.g. run.backend sim), not real nodes. Its
// events have the shape of a real run's, so the summary and every report
// are derived the same way, and each report labels the run MODEL
// (ModelLabel).
type ModelInfo struct {
	Name string `json:"name"` // the model, e.g. "valnet-sim"
	// Calibration names the profile (or the path of the file) the
	// model's timings come from.
	Calibration string `json:"calibration,omitempty"`
	// VoteEvents says whether the stream holds vote events (each node's
	// receipt of each vote). A model of many validators may leave them
	// out (N² per height): then every value derived from them (late votes,
	// quorum-critical precommits, halt causes that need to know who
	// received what) is unknown, listed in the summary's unavailable and
	// shown as "n/a (not recorded)", never as 0.
	VoteEvents bool `json:"vote_events"`
	// Notes say what the model simplifies; reports list them.
	Notes []string `json:"notes,omitempty"`
}

// ValidatorInfo describes one genesis validator in run_start.
type ValidatorInfo struct {
	Name    string `json:"name"`
	Address string `json:"address"` // hex, as CometBFT prints it
	Power   int64  `json:"power"`
	Signer  string `json:"signer"`           // e.g. "local", "local+latency(fixed 200ms)"
	Device  string `json:"device,omitempty"` // the shared signing device it signs on, if any
	// Node is what ran its node when it is not valnet's own: a stock
	// binary, "cometbft 0.38.26 (v0.38)" (what its version printed, and
	// its line). "" for valnet's node.
	Node string `json:"node,omitempty"`
}

// PeerNodeInfo is a node that is not a validator, as run_start records it.
type PeerNodeInfo struct {
	Name     string `json:"name"`
	Role     string `json:"role"`                // full, seed or sentry
	SentryOf string `json:"sentry_of,omitempty"` // sentry: the validator it guards
}

// Expectation is an `expect:` entry as recorded in run_start, so that the
// summary (and its pass/fail) can be rebuilt from events alone.
type Expectation struct {
	Metric    string   `json:"metric"`
	Validator string   `json:"validator,omitempty"`
	Phase     string   `json:"phase,omitempty"`
	Min       *float64 `json:"min,omitempty"`
	Max       *float64 `json:"max,omitempty"`
	// Default: valnet's own expectation, not written in the scenario
	// (sign_errors_unexplained <= 0 unless the scenario names sign errors).
	Default bool `json:"default,omitempty"`
}

// KindCosign: validator Validator's threshold signer (a MODEL of a
// horcrux-style protocol) ran its rounds for Phase at Height/Round: Cosign
// says who led, how long the nonce round and the quorum took, which
// cosigners' partial signatures made the quorum and which did not answer;
// Error is set when there was no quorum (the signature failed).
const KindCosign Kind = "cosign"

// CosignSample is one signature's rounds in a threshold signer.
type CosignSample struct {
	Model     string `json:"model"` // e.g. "horcrux-v3 protocol MODEL"
	Cosigners int    `json:"cosigners"`
	Threshold int    `json:"threshold"`
	Leader    int    `json:"leader"` // 1-based; 0: none was up
	// NonceMS: the nonce round, until threshold-1 other cosigners
	// answered; QuorumMS: until the threshold's partial signatures were in
	// hand (both from the leader's receipt of the request).
	NonceMS  float64         `json:"nonce_ms"`
	QuorumMS float64         `json:"quorum_ms"`
	Answered []int           `json:"answered"`
	Failed   []CosignFailure `json:"failed,omitempty"`
}

// CosignFailure is a cosigner that did not answer one of the rounds.
type CosignFailure struct {
	Cosigner int    `json:"cosigner"`
	Round    string `json:"round"` // nonce | sign
	Reason   string `json:"reason"`
}

// DeviceSample is a shared signing device's account since the network
// started, as the runner read it (cumulative).
type DeviceSample struct {
	Name    string `json:"name"`
	Profile string `json:"profile,omitempty"` // "" = none (real signers only)
	// Signatures of this chain's signers, and of the background chains (a
	// MODEL load; BackgroundChains of them), served by the device.
	Signatures           int64   `json:"signatures"`
	BackgroundSignatures int64   `json:"background_signatures"`
	BackgroundChains     int     `json:"background_chains,omitempty"`
	BusyMS               float64 `json:"busy_ms"` // time the device spent signing
	WallMS               float64 `json:"wall_ms"` // time since the network started
}
