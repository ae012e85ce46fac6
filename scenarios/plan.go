package scenarios

import "time"

// Plan is a scenario after parsing, defaulting, expansion and validation.
// Everything downstream (runner, reports) works from a Plan, never from the
// raw YAML: every default is applied here, every duration is a time.Duration,
// and `count:` has been expanded into individual validators.
type Plan struct {
	Name        string
	Description string
	Source      string // file path, or "builtin:<name>"
	Text        []byte // the scenario text as parsed, kept beside a run's results
	ChainID     string
	Timeouts    Timeouts
	Run         RunPlan
	Validators  []ValidatorPlan // expanded, in declaration order
	Expect      []Expectation
}

// Timeouts are CometBFT's [consensus] timeouts, defaults already applied.
type Timeouts struct {
	Propose        time.Duration
	ProposeDelta   time.Duration
	Prevote        time.Duration
	PrevoteDelta   time.Duration
	Precommit      time.Duration
	PrecommitDelta time.Duration
	Commit         time.Duration
}

// RunPlan says how and for how long the network runs.
type RunPlan struct {
	Backend     string        // "inprocess"
	Heights     int64         // stop once this height is committed
	MaxDuration time.Duration // hard stop
	Seed        int64         // keys and random models
}

// ValidatorPlan is one validator after `count:` expansion.
type ValidatorPlan struct {
	Name   string
	Power  int64
	Signer SignerPlan
}

// SignerPlan is the signing backend of one validator.
type SignerPlan struct {
	Type    string       // "local"
	Latency *LatencyPlan // nil: no injected latency
}

// Latency distributions.
const (
	DistFixed     = "fixed"
	DistUniform   = "uniform"
	DistNormal    = "normal"
	DistLognormal = "lognormal"
)

// Signing phases (message types a validator signs).
const (
	PhaseProposal  = "proposal"
	PhasePrevote   = "prevote"
	PhasePrecommit = "precommit"
)

// AllPhases in consensus order.
var AllPhases = []string{PhaseProposal, PhasePrevote, PhasePrecommit}

// LatencyPlan is an injected delay model. Only the fields of Dist are set:
// fixed: Value; uniform: Min, Max; normal: Mean, Stddev; lognormal: P50, P99.
type LatencyPlan struct {
	Dist   string
	Value  time.Duration
	Min    time.Duration
	Max    time.Duration
	Mean   time.Duration
	Stddev time.Duration
	P50    time.Duration
	P99    time.Duration
	Phases []string // phases the delay applies to; never empty after resolution (default: all)
}

// Expectation is one `expect:` entry. Min and/or Max is set (both allowed).
type Expectation struct {
	Metric    string
	Validator string // empty: a chain metric, or a validator metric checked for every validator
	Phase     string // only for sign_latency_* metrics; empty means all phases together
	Min       *float64
	Max       *float64
	Pos       Pos // where it was written, for messages
}

// Pos is a position in a scenario file.
type Pos struct {
	File string
	Line int
	Col  int
}
