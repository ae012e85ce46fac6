package scenarios

import "time"

// The raw scenario document, schema v1: what the YAML says, before defaults
// and checks. Key names are a public contract. The yaml tags are the single
// list of accepted keys: the node walker (decode.go), the JSON Schema test
// and the docs test all read them through keyLevels (keys.go), so they cannot
// drift apart. A nil pointer means "not written"; resolve.go applies the
// defaults noted on each field. Downstream code uses Plan, never these.

// rawScenario is the whole document.
type rawScenario struct {
	Name        string         `yaml:"name"`        // required; [a-z0-9-]+, starts with a letter or digit, max 48 chars
	Description string         `yaml:"description"` // default ""; free text, the first line is the summary
	Chain       *rawChain      `yaml:"chain"`       // default: all chain defaults
	Run         *rawRun        `yaml:"run"`         // default: all run defaults
	Validators  []rawValidator `yaml:"validators"`  // required; 1..200 validators after count expansion
	Expect      []rawExpect    `yaml:"expect"`      // default: no expectations
}

// rawChain is the chain's genesis and consensus configuration.
type rawChain struct {
	ChainID  *string      `yaml:"chain_id"` // default "valnet-<name>" (cut to 50 chars); non-empty, <= 50 chars
	Timeouts *rawTimeouts `yaml:"timeouts"` // default: CometBFT's defaults
}

// rawTimeouts are CometBFT's [consensus] timeouts. Defaults are CometBFT's
// config.DefaultConsensusConfig(); none may be negative, and propose, prevote
// and precommit must be > 0.
type rawTimeouts struct {
	Propose        *time.Duration `yaml:"propose"`         // default 3s
	ProposeDelta   *time.Duration `yaml:"propose_delta"`   // default 500ms
	Prevote        *time.Duration `yaml:"prevote"`         // default 1s
	PrevoteDelta   *time.Duration `yaml:"prevote_delta"`   // default 500ms
	Precommit      *time.Duration `yaml:"precommit"`       // default 1s
	PrecommitDelta *time.Duration `yaml:"precommit_delta"` // default 500ms
	Commit         *time.Duration `yaml:"commit"`          // default 1s
}

// rawRun says how and for how long to run.
type rawRun struct {
	Backend     *string        `yaml:"backend"`      // default "inprocess" (the only one available)
	Heights     *int64         `yaml:"heights"`      // default 20; >= 1; stop once this height is committed
	MaxDuration *time.Duration `yaml:"max_duration"` // default 10m; > 0; hard stop
	Seed        *int64         `yaml:"seed"`         // default 1; any int64; keys and random latency models
}

// rawValidator is one validators entry, possibly standing for several.
type rawValidator struct {
	Name   string     `yaml:"name"`   // required; [a-z0-9-]+; unique after expansion
	Count  *int64     `yaml:"count"`  // default 1; >= 1; N > 1 expands to <name>-1 .. <name>-N
	Power  *int64     `yaml:"power"`  // default 10; >= 1
	Signer *rawSigner `yaml:"signer"` // default {type: local}
}

// rawSigner picks a validator's signing backend.
type rawSigner struct {
	Type    *string     `yaml:"type"`    // default "local" (the only one available)
	Latency *rawLatency `yaml:"latency"` // default: no injected latency
}

// rawLatency is an injected signing delay. It is written either as a bare
// duration (shorthand for {dist: fixed, value: D}) or as a mapping whose
// allowed keys depend on dist (distKeys in latency.go).
type rawLatency struct {
	Dist   string         `yaml:"dist"`   // required in the mapping form; fixed|uniform|normal|lognormal
	Value  *time.Duration `yaml:"value"`  // fixed: the delay
	Min    *time.Duration `yaml:"min"`    // uniform: lower bound, <= max
	Max    *time.Duration `yaml:"max"`    // uniform: upper bound
	Mean   *time.Duration `yaml:"mean"`   // normal: mean
	Stddev *time.Duration `yaml:"stddev"` // normal: standard deviation
	P50    *time.Duration `yaml:"p50"`    // lognormal: median, > 0
	P99    *time.Duration `yaml:"p99"`    // lognormal: 99th percentile, >= p50
	Phases []string       `yaml:"phases"` // default all: proposal, prevote, precommit; no duplicates

	shorthand bool // written as a bare duration
}

// rawExpect is one expect entry: a bound on a metric of the run.
type rawExpect struct {
	Metric    string   `yaml:"metric"`    // required; a name from Metrics
	Validator string   `yaml:"validator"` // default "" (chain metric, or every validator); only for per-validator metrics
	Phase     string   `yaml:"phase"`     // default "" (all phases); only for phased metrics
	Min       *float64 `yaml:"min"`       // at least one of min and max; min <= max
	Max       *float64 `yaml:"max"`
}
