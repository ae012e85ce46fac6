package scenarios

import (
	"time"

	"github.com/valnet/valnet/latency"
)

// The raw scenario document, schema v1: what the YAML says, before defaults
// and checks. Key names are a public contract. The yaml tags are the single
// list of accepted keys: the node walker (decode.go), the JSON Schema test
// and the docs test all read them through keyLevels (keys.go), so they cannot
// drift apart. A nil pointer means "not written"; resolve.go applies the
// defaults noted on each field. Downstream code uses Plan, never these.

// rawScenario is the whole document.
type rawScenario struct {
	Name        string                `yaml:"name"`        // required; [a-z0-9-]+, starts with a letter or digit, max 48 chars
	Description string                `yaml:"description"` // default ""; free text, the first line is the summary
	Chain       *rawChain             `yaml:"chain"`       // default: all chain defaults
	Run         *rawRun               `yaml:"run"`         // default: all run defaults
	Node        *rawNode              `yaml:"node"`        // default: valnet's own node; process backend only
	App         *rawApp               `yaml:"app"`         // default: the built-in kvstore app inside each node; inprocess and process backends only
	Network     *rawNetwork           `yaml:"network"`     // default: plain links, full mesh
	Load        *rawLoad              `yaml:"load"`        // default: no transactions are sent
	Profiles    map[string]rawProfile `yaml:"profiles"`    // default: none; device profiles for simulated signers, by name
	Devices     map[string]rawDevice  `yaml:"devices"`     // default: none; signing devices shared by several signers (and other chains), by name
	Validators  []rawValidator        `yaml:"validators"`  // required; 1..200 validators after count expansion
	Faults      []rawFault            `yaml:"faults"`      // default: no faults
	Expect      []rawExpect           `yaml:"expect"`      // default: no expectations
}

// rawChain is the chain's genesis and consensus configuration.
type rawChain struct {
	ChainID  *string      `yaml:"chain_id"` // default "valnet-<name>" (cut to 50 chars); non-empty, <= 50 chars
	Timeouts *rawTimeouts `yaml:"timeouts"` // default: CometBFT's defaults
	// VoteExtensionsEnableHeight is genesis' vote_extensions_enable_height
	// (consensus_params.feature in v1, .abci in v0.38-v0.40).
	VoteExtensionsEnableHeight *int64 `yaml:"vote_extensions_enable_height"` // default 0: off; >= 0; from this height every non-nil precommit carries an extension and its signature (a second signature per precommit); needs v0.38 or later
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
	Backend     *string        `yaml:"backend"`      // default "inprocess"; inprocess|process|docker|sim
	Heights     *int64         `yaml:"heights"`      // default 20; >= 1; stop once this height is committed
	MaxDuration *time.Duration `yaml:"max_duration"` // default 10m; > 0, at most 24h (but on the sim); hard stop
	Seed        *int64         `yaml:"seed"`         // default 1; any int64; keys, random latency models and random topologies
	HaltAfter   *time.Duration `yaml:"halt_after"`   // default: round 0 + round 1 of timeouts + commit (12.5s at the defaults), at least 5 × the median block interval; > 0; a longer stretch without a commit is a halt
	Sim         *rawSim        `yaml:"sim"`          // default: the default calibration, every node its own CPU; used by the sim backend only
}

// rawSim tunes the sim backend, a virtual-time MODEL of CometBFT
// consensus (docs/sim.md).
type rawSim struct {
	Calibration *string `yaml:"calibration"`  // default "default"; a built-in calibration or a file written by valnet calibrate, relative to the scenario file
	SharedCores *int64  `yaml:"shared_cores"` // default 0: every node its own CPU, as on a real chain; k > 0: all nodes share k cores, as on one test host
}

// rawNode says what runs a validator's node. Top level: every validator;
// under a validator: that one, over the top level. Process backend only.
type rawNode struct {
	Binary  *string        `yaml:"binary"`  // default: valnet node; a CometBFT-compatible binary, relative to the scenario file's directory (process and docker backends)
	Version *string        `yaml:"version"` // default: what the binary's `version` says, v1.0 for valnet node; v0.37, v0.38, v0.39, v0.40 or v1.0 (the sim models that line's defaults)
	Config  *rawNodeConfig `yaml:"config"`  // default: none; raw config.toml settings, "section.key: value" (or nested), checked against that version's keys
}

// rawApp is the chain's own ABCI application (app.go): valnet starts one
// process of it per validator and that validator's node connects to it.
type rawApp struct {
	Command   []string `yaml:"command"`   // required; argv (no shell); must contain {addr} (the address valnet picks for it); {home} is the validator's app directory
	Transport *string  `yaml:"transport"` // default "socket"; socket|grpc (CometBFT's abci setting)
}

// rawNetwork shapes the links between validators (network.go). Every
// directed link gets latency, jitter and bandwidth, then the zone matrix
// between zoned validators, then the links overrides.
type rawNetwork struct {
	Latency   *rawLatency         `yaml:"latency"`   // default: none; one-way, every link; a duration or a latency model without phases
	Jitter    *time.Duration      `yaml:"jitter"`    // default 0; stddev of normal jitter on top of latency
	Bandwidth *string             `yaml:"bandwidth"` // default: unlimited; > 0, with a unit: bit, kbit, mbit, gbit (per second) or B, KB, MB, GB, KiB, MiB, GiB (bytes per second)
	Links     []rawLink           `yaml:"links"`     // default: none; overrides, in order (later ones win, over zones too)
	Zones     map[string][]string `yaml:"zones"`     // default: none; region (network.Regions or an AWS code) -> validators; each validator in at most one zone
	Topology  *rawTopology        `yaml:"topology"`  // default mesh; mesh | explicit | {ring: K} | {random: K}
	Peers     map[string][]string `yaml:"peers"`     // explicit topology: validator -> validators it dials; the graph must be connected
}

// rawLoad is a transaction load sent into the nodes' mempools during the
// run, as a client would (load.go).
type rawLoad struct {
	Rate     *string        `yaml:"rate"`     // required; > 0 transactions per second or minute: 200/s, 1.5/s, 30/min
	Size     *string        `yaml:"size"`     // default 1KiB; bytes of each transaction with a unit: B, KB, kB, MB, KiB, MiB; 18B..1MiB
	To       *string        `yaml:"to"`       // default "all" (round robin over the validators whose node runs); or one validator's name
	Start    *time.Duration `yaml:"start"`    // default 0; when to begin, after the first block is committed (nodes refuse transactions while they catch up)
	Duration *time.Duration `yaml:"duration"` // default: to the end of the run; > 0
}

// rawLink is one links entry: one link, both ways unless one_way. Keys
// left out take the network's default, not the zone matrix.
type rawLink struct {
	From      string         `yaml:"from"`      // required; an expanded validator name
	To        string         `yaml:"to"`        // required; another one
	Latency   *rawLatency    `yaml:"latency"`   // default: network.latency; no phases
	Jitter    *time.Duration `yaml:"jitter"`    // default: network.jitter
	Bandwidth *string        `yaml:"bandwidth"` // default: network.bandwidth; same units
	OneWay    *bool          `yaml:"one_way"`   // default false: the setting applies to from->to and to->from
}

// rawSignerLink shapes the connection between a validator's node and its
// remote signer (via tcp), as a network link: a signer in another
// datacenter pays this on every signature, both ways.
type rawSignerLink struct {
	Latency   *rawLatency    `yaml:"latency"`   // default: none; one-way; a duration or a latency model without phases
	Jitter    *time.Duration `yaml:"jitter"`    // default 0; stddev of normal jitter on top of latency
	Bandwidth *string        `yaml:"bandwidth"` // default: unlimited; same units as network.bandwidth
}

// rawTopology is mesh or explicit written as a bare word (decodeScalar),
// or a mapping with exactly one of ring and random.
type rawTopology struct {
	Ring   *int64 `yaml:"ring"`   // each validator dials the next K, wrapping; 1 <= K < validators
	Random *int64 `yaml:"random"` // each validator dials K others drawn from run.seed; 1 <= K < validators

	word string // written as a bare word
}

// rawValidator is one validators entry, possibly standing for several.
type rawValidator struct {
	Name   string     `yaml:"name"`   // required; [a-z0-9-]+; unique after expansion
	Count  *int64     `yaml:"count"`  // default 1; >= 1; N > 1 expands to <name>-1 .. <name>-N
	Power  *int64     `yaml:"power"`  // default 10; >= 1
	Signer *rawSigner `yaml:"signer"` // default {type: local}
	Node   *rawNode   `yaml:"node"`   // default: the top-level node; process backend only
}

// rawSigner picks a validator's signing backend. Keys that belong to one
// signer type only are listed in signerTypeKeys (signer.go).
type rawSigner struct {
	Type     *string        `yaml:"type"`      // default "local"; local|keyfile|simulated|pkcs11|ledger|external|threshold
	KeyType  *string        `yaml:"key_type"`  // default "ed25519"; ed25519|secp256k1
	Via      *string        `yaml:"via"`       // default "direct"; direct|tcp|unix (tcp, unix: behind CometBFT's remote-signer protocol)
	Latency  *rawLatency    `yaml:"latency"`   // default: no injected latency
	CPUScale *float64       `yaml:"cpu_scale"` // default 1; > 0; multiplies the cost of software signing
	Device   *string        `yaml:"device"`    // default: none; a name from the top-level devices: sign on that shared device (simulated, pkcs11, ledger only)
	Link     *rawSignerLink `yaml:"link"`      // default: none (the signer next to its node); via tcp only: the node<->signer connection through the link fabric, the same setting both ways
	Dialect  *string        `yaml:"dialect"`   // default "auto": the node's own; auto|v0.38|v1 (v0.37, v0.39, v0.40 speak v0.38's): the privval layout valnet answers the node in; type external: the layout your signer speaks, checked when it connects (valnet's listener reads both)

	// keyfile only
	Path           *string `yaml:"path"`            // default "" (the validator's home); relative to the scenario file's directory
	Decrypt        *string `yaml:"decrypt"`         // default "every-sign"; every-sign|once
	BcryptCost     *int64  `yaml:"bcrypt_cost"`     // default 12; 4..31
	PassphraseEnv  *string `yaml:"passphrase_env"`  // exactly one of passphrase_env and passphrase_file; an environment variable's name
	PassphraseFile *string `yaml:"passphrase_file"` // relative to the scenario file's directory

	// simulated only
	Profile *string `yaml:"profile"` // required unless on a device (then refused: the device's profile applies); a built-in profile or a key of the top-level profiles

	// pkcs11 only. With provision: softhsm the run makes its own token and
	// only module, token and key may be given; without it module, key, one
	// of token and slot, and one of pin_env and pin_file are required.
	Module    *string `yaml:"module"`    // the PKCS#11 library; relative to the scenario file's directory; provision: default the SoftHSM2 module found
	Token     *string `yaml:"token"`     // token label, 1..32 bytes; provision: default "valnet-<validator>"
	Slot      *int64  `yaml:"slot"`      // >= 0; instead of token; not with provision
	Key       *string `yaml:"key"`       // key label (CKA_LABEL); provision: default "consensus"
	PinEnv    *string `yaml:"pin_env"`   // an environment variable's name; not with provision
	PinFile   *string `yaml:"pin_file"`  // relative to the scenario file's directory; not with provision
	Provision *string `yaml:"provision"` // "softhsm": a throwaway SoftHSM2 token and key in the run directory

	// ledger only (ledger.go). Ed25519 only.
	Connection   *string        `yaml:"connection"`    // default "emulator"; hid|emulator
	Serial       *string        `yaml:"serial"`        // hid only; default "" (the first Ledger found)
	ChunkSize    *int64         `yaml:"chunk_size"`    // default 250; 1..255 bytes of APDU payload per packet
	ConfirmDelay *time.Duration `yaml:"confirm_delay"` // emulator only; default 0; the wait before the first signature is confirmed
	HostStall    *time.Duration `yaml:"host_stall"`    // emulator only; default 51ms (ledger-nano-s-plus); > 0; host side per exchange
	Wire         *time.Duration `yaml:"wire"`          // emulator only; default 3ms; > 0; USB transfer per exchange
	DeviceSign   *time.Duration `yaml:"device_sign"`   // emulator only; default 525ms; > 0; on-device signing, once per signature

	// external only (external.go): the user's own signer (tmkms, horcrux,
	// gnokms, valnet signer serve) dials the node with its own key.
	Address  *string        `yaml:"address"`  // required; tcp://host:port or unix:///path: where the node listens for the signer
	Wait     *time.Duration `yaml:"wait"`     // default 60s; > 0; how long the run waits for the signer to dial in
	Identity *string        `yaml:"identity"` // tcp only; default: any signer; the signer's SecretConnection identity (its address, 40 hex digits)

	// threshold only (threshold.go): a MODEL of a horcrux-style threshold
	// signer, its cosigners each an endpoint on the link fabric.
	Cosigners *int64         `yaml:"cosigners"` // default 3; 2..9
	Threshold *int64         `yaml:"threshold"` // default a majority (cosigners/2 + 1); more than half of cosigners, at most all
	Links     *rawSignerLink `yaml:"links"`     // default: none (cosigners side by side); every link between two cosigners, both ways; not with regions
	Regions   []string       `yaml:"regions"`   // default: none; one region per cosigner (the network.zones names): the links between cosigners get the region matrix's latency
	Timeout   *time.Duration `yaml:"timeout"`   // default 500ms (horcrux's grpcTimeout since v3.2.0; 1500ms before); > 0; how long the leader waits for each cosigner's answer
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

	shorthand bool          // written as a bare duration
	text      *latency.Spec // written as latency.Parse's text (signer serve config only)
}

// rawProfile is one entry of the top-level profiles mapping: a device's
// signing time, either as a distribution or as a table by payload size.
type rawProfile struct {
	Description string             `yaml:"description"` // default ""; free text
	Source      string             `yaml:"source"`      // default ""; where the numbers come from, free text
	Latency     *rawLatency        `yaml:"latency"`     // exactly one of latency and by_payload; no phases
	ByPayload   *[]rawPayloadPoint `yaml:"by_payload"`  // >= 2 rows, bytes strictly increasing
}

// rawDevice is one entry of the top-level devices mapping: one signing
// device that serves every signer naming it, one signature at a time.
type rawDevice struct {
	Profile    *string        `yaml:"profile"`    // default: none; required with background or a simulated signer on the device; a built-in profile or a key of profiles
	Background *rawBackground `yaml:"background"` // default: none; MODEL load of other chains on the same device
}

// rawBackground is a MODEL of the signing load of other chains a device
// serves: each asks for a proposal (on its turns), a prevote and a
// precommit per block.
type rawBackground struct {
	Chains        *int64         `yaml:"chains"`         // required; 0..1000 other chains
	BlockTime     *time.Duration `yaml:"block_time"`     // default 6s; > 0; each other chain's block time
	ProposerShare *float64       `yaml:"proposer_share"` // default 0.25; 0..1; share of a chain's blocks whose proposal the device signs
	Spacing       *time.Duration `yaml:"spacing"`        // default 100ms; >= 0; proposal -> prevote -> precommit within a block; 2 × spacing + jitter < block_time
	Jitter        *time.Duration `yaml:"jitter"`         // default 50ms; >= 0; each block starts late by a uniform draw in [0, jitter)
}

// rawPayloadPoint is one row of a profile's by_payload table.
type rawPayloadPoint struct {
	Bytes   *int64         `yaml:"bytes"`   // required; >= 1
	Latency *time.Duration `yaml:"latency"` // required; >= 0
}

// rawFault is one faults entry. Which keys each action takes, requires or
// refuses is in faultActions (faults.go).
type rawFault struct {
	Action    string         `yaml:"action"`    // required; a name from faultActions
	Target    string         `yaml:"target"`    // an expanded validator name; required, optional or refused by action
	At        *rawFaultAt    `yaml:"at"`        // required; exactly one of height and time
	Duration  *time.Duration `yaml:"duration"`  // meaning depends on the action (docs/scenario.md)
	Latency   *rawLatency    `yaml:"latency"`   // signer-delay and network-latency, required there; no phases (they go on the fault)
	Phases    []string       `yaml:"phases"`    // default all; signer-delay, signer-drop, signer-error only
	From      string         `yaml:"from"`      // network-latency: one link, with to; not with target
	To        string         `yaml:"to"`        // network-latency: with from
	OneWay    *bool          `yaml:"one_way"`   // network-latency, with from and to; default false (both ways)
	Jitter    *time.Duration `yaml:"jitter"`    // network-latency; default 0
	Bandwidth *string        `yaml:"bandwidth"` // network-latency; default unlimited; same units as network.bandwidth
	Groups    [][]string     `yaml:"groups"`    // partition, required there: >= 2 disjoint, non-empty lists of validators
}

// rawFaultAt is when a fault starts.
type rawFaultAt struct {
	Height *int64         `yaml:"height"` // >= 1
	Round  *int64         `yaml:"round"`  // >= 0; only with height, only for signer-drop and signer-error
	Time   *time.Duration `yaml:"time"`   // > 0; time since the network started
}

// rawExpect is one expect entry: a bound on a metric of the run.
type rawExpect struct {
	Metric    string   `yaml:"metric"`    // required; a name from Metrics
	Validator string   `yaml:"validator"` // default "" (chain metric, or every validator); only for per-validator metrics
	Phase     string   `yaml:"phase"`     // default "" (all phases); only for phased metrics
	Min       *float64 `yaml:"min"`       // at least one of min and max; min <= max
	Max       *float64 `yaml:"max"`
}
