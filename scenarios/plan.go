package scenarios

import (
	"strconv"
	"strings"
	"time"

	"github.com/valnet/valnet/internal/action"

	"github.com/valnet/valnet/latency"
)

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
	// VoteExtensionsEnableHeight is chain.vote_extensions_enable_height:
	// 0 off, else the first height whose precommits carry extensions.
	VoteExtensionsEnableHeight int64
	Run                        RunPlan
	// Node is the top-level node: (what the sim models; each validator's
	// own, merged, is ValidatorPlan.Node).
	Node       NodePlan
	Validators []ValidatorPlan // expanded, in declaration order
	// Nodes are the nodes that are not validators (nodes:, and the
	// validators' sentries), expanded: full nodes and seeds in declaration
	// order, then the sentries in validator order.
	Nodes  []PeerNodePlan
	Expect []Expectation
	// Profiles defined by the scenario's top-level `profiles:` key, by
	// name. Built-in profiles are not copied here; SignerPlan.Profile names
	// either.
	Profiles map[string]ProfilePlan
	Faults   []FaultPlan // in declaration order
	Network  NetworkPlan
	Load     *LoadPlan // nil: no transactions are sent (load.go)
	// App is the chain's own ABCI application; nil: the built-in kvstore
	// inside each node (app.go).
	App *AppPlan
	// Devices are the shared signing devices (top-level `devices:`), by
	// name; SignerPlan.Device names one.
	Devices map[string]DevicePlan
	// validatorGroups maps a written name with count > 1 to the span it
	// expands to ("v-1..v-3"), so a reference to it can say so.
	validatorGroups map[string]string
}

// DevicePlan is one shared signing device: one queue, one signature at a
// time, for every signer naming it and the background load.
type DevicePlan struct {
	Name       string
	Profile    string          // a built-in or scenario profile; "" = none (real signers only, no background)
	Background *BackgroundPlan // nil: no other chains
}

// BackgroundPlan is the MODEL load of other chains on a device.
type BackgroundPlan struct {
	Chains        int
	BlockTime     time.Duration
	ProposerShare float64
	Spacing       time.Duration
	Jitter        time.Duration
}

// NetworkPlan is the `network:` key: links between validators, in user
// space (no kernel netem).
type NetworkPlan struct {
	// Default applies to every directed link without an override.
	Default LinkPlan
	// Zones maps validator name -> canonical region (network.Regions); the
	// built-in matrix gives the latency between two zones, over Default.
	Zones map[string]string
	// Links are directed overrides of `links:`, expanded (a symmetric
	// entry gives two), in order: later ones win, and they win over zones.
	Links []LinkOverride
	// Topology says whom each node dials.
	Topology TopologyPlan
}

// LinkPlan shapes one direction of a link. Zero value: a plain link.
type LinkPlan struct {
	Latency   *LatencyPlan  // one-way; nil = 0 (phases unused)
	Jitter    time.Duration // extra normal jitter (stddev) on top of Latency
	Bandwidth float64       // bytes per second; 0 = unlimited
}

// IsZero reports a plain link.
func (l LinkPlan) IsZero() bool { return l.Latency == nil && l.Jitter == 0 && l.Bandwidth == 0 }

// LinkOverride is a directed link setting.
type LinkOverride struct {
	From, To string
	Link     LinkPlan
}

// Topologies.
const (
	TopologyMesh     = "mesh"
	TopologyRing     = "ring"
	TopologyRandom   = "random"
	TopologyExplicit = "explicit"
)

// TopologyPlan: mesh (default), ring K, random K (seeded), or explicit
// peers per validator.
type TopologyPlan struct {
	Kind  string
	K     int
	Peers map[string][]string // explicit: validator -> validators it dials
}

// NeedsFabric reports whether any link is shaped or any network fault is
// planned, i.e. whether connections must go through the user-space proxies.
func (p *Plan) NeedsFabric() bool {
	if !p.Network.Default.IsZero() || len(p.Network.Links) > 0 || len(p.Network.Zones) > 0 {
		return true
	}
	for _, f := range p.Faults {
		switch f.Action {
		case action.NetworkLatency, action.Partition, action.Isolate, action.Heal:
			return true
		}
	}
	for _, v := range p.Validators {
		if v.Signer.Link != nil || v.Signer.Threshold != nil {
			return true // a threshold signer's cosigners talk over the fabric
		}
	}
	return false
}

// SignerEndpoint is the fabric's name for a validator's remote signer (a
// signer link's far end; an isolate target).
func SignerEndpoint(validator string) string { return validator + SignerEndpointSuffix }

// SignerEndpointSuffix ends an isolate target that names a validator's
// signer link rather than its node.
const SignerEndpointSuffix = ".signer"

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
	Backend string // inprocess | process | docker | sim
	// HaltAfter: a stretch with no commit longer than this is a halt in
	// summary.json; 0 = the default (Plan.HaltAfter, scenarios/halt.go: round 0
	// and round 1 of timeouts plus commit, and at least 5 × the median
	// block interval).
	HaltAfter   time.Duration
	Heights     int64         // stop once this height is committed
	MaxDuration time.Duration // hard stop
	Seed        int64         // keys and random models
	Sim         SimPlan       // the sim backend's settings
}

// SimPlan is run.sim: the sim backend's calibration and CPU model.
type SimPlan struct {
	Calibration string // "" = the default calibration; a built-in name or a file path
	SharedCores int    // 0: every node its own CPU; k: all nodes share k cores
}

// ValidatorPlan is one validator after `count:` expansion.
type ValidatorPlan struct {
	Name   string
	Power  int64
	Signer SignerPlan
	// Node is what runs its node: the top-level node: with the
	// validator's own over it.
	Node NodePlan
	// Sentries are its sentry nodes' names (validators[].sentries), in
	// Plan.Nodes too; none: it is a public node.
	Sentries []string
}

// SignerPlan is the signing backend of one validator.
type SignerPlan struct {
	Type      string         // local | keyfile | simulated | pkcs11 | ledger | external
	KeyType   string         // ed25519 | secp256k1 (default ed25519)
	Via       string         // direct | tcp | unix (default direct)
	Latency   *LatencyPlan   // nil: no injected latency
	CPUScale  float64        // multiplies software signing cost; default 1
	Keyfile   *KeyfilePlan   // set for type keyfile only
	Profile   string         // simulated: a built-in or scenario profile name
	PKCS11    *PKCS11Plan    // set for type pkcs11 only
	Ledger    *LedgerPlan    // set for type ledger only
	External  *ExternalPlan  // set for type external only
	Threshold *ThresholdPlan // set for type threshold only
	// Link is the node<->signer connection's setting, both ways (via tcp
	// only); nil: the signer sits next to its node.
	Link *LinkPlan
	// Device names the shared device this signer signs on ("" = none). A
	// simulated signer's Profile is then the device's.
	Device string
	// Dialect is the privval layout (cmtversion's Dialect names: "v0.38",
	// "v1"), "" for auto: the node's own.
	Dialect string
}

// PKCS11Plan is a key in a PKCS#11 token (an HSM, or SoftHSM2).
type PKCS11Plan struct {
	Module    string // path of the PKCS#11 library; default for provision softhsm: the SoftHSM2 module found on the host
	Token     string // token label; exactly one of Token or Slot (HasSlot)
	Slot      uint
	HasSlot   bool
	Key       string // key label (CKA_LABEL)
	PinEnv    string // exactly one of PinEnv, PinFile (not needed with provision softhsm)
	PinFile   string
	Provision string // "" or "softhsm": the run creates a throwaway token and key in the run dir
}

// LedgerPlan is a Ledger device running the Tendermint validator app.
type LedgerPlan struct {
	Connection   string        // hid | emulator (default emulator)
	Serial       string        // hid: pick the device by serial; "" = the first one
	ChunkSize    int           // APDU payload bytes per packet; default 250
	ConfirmDelay time.Duration // emulator: wait before the first signature is confirmed; default 0
	// Emulator timing; zero values take the profile defaults
	// (ledger-nano-s-plus: 51ms host stall, 3ms wire per exchange, 525ms on-device).
	// The parser fills them in for an emulator (never 0 there) and leaves
	// them 0 for hid.
	HostStall  time.Duration
	Wire       time.Duration
	DeviceSign time.Duration
}

// Signer types of the hardware issue.
const (
	SignerPKCS11 = "pkcs11"
	SignerLedger = "ledger"

	LedgerHID      = "hid"
	LedgerEmulator = "emulator"

	ProvisionSoftHSM = "softhsm"

	// SignerExternal is the user's own signer (a KMS), which dials in.
	SignerExternal = "external"
	// SignerThreshold is a MODEL of a horcrux-style threshold signer.
	SignerThreshold = "threshold"
)

// ThresholdPlan is a threshold signer (a MODEL of horcrux v3's protocol):
// Cosigners endpoints on the link fabric, Threshold of which take part in
// every signature.
type ThresholdPlan struct {
	Cosigners int
	Threshold int
	Links     *LinkPlan     // every cosigner-to-cosigner link, both ways; nil: none
	Regions   []string      // canonical region of each cosigner (network.Regions); nil: none
	Timeout   time.Duration // per cosigner answer
}

// CosignerEndpoint is the fabric's name for cosigner k (1-based) of a
// validator's threshold signer: a fault target.
func CosignerEndpoint(validator string, k int) string {
	return validator + CosignerEndpointInfix + strconv.Itoa(k)
}

// CosignerEndpointInfix joins a validator's name and a cosigner's number
// in a fault target: v-1.cosigner-2.
const CosignerEndpointInfix = ".cosigner-"

// ParseCosignerEndpoint splits NAME.cosigner-K; ok is false for anything
// else.
func ParseCosignerEndpoint(target string) (validator string, k int, ok bool) {
	i := strings.LastIndex(target, CosignerEndpointInfix)
	if i <= 0 {
		return "", 0, false
	}
	k, err := strconv.Atoi(target[i+len(CosignerEndpointInfix):])
	if err != nil || k < 1 {
		return "", 0, false
	}
	return target[:i], k, true
}

// ExternalPlan is a signer valnet does not run: the validator's node
// listens at Address and the signer dials in with its own key, which the
// run reads (GetPubKey) to write the genesis.
type ExternalPlan struct {
	Network  string        // tcp | unix (the address's scheme)
	Address  string        // host:port or a socket path
	Wait     time.Duration // how long to wait for the signer to dial in; default 60s
	Identity string        // tcp: the signer's SecretConnection identity (upper-case hex); "" = any
}

// URL is the address as written, tcp://host:port or unix:///path.
func (e *ExternalPlan) URL() string { return e.Network + "://" + e.Address }

// Signer types, key types and transports.
const (
	SignerLocal     = "local"
	SignerKeyfile   = "keyfile"
	SignerSimulated = "simulated"

	KeyEd25519   = "ed25519"
	KeySecp256k1 = "secp256k1"

	ViaDirect = "direct"
	ViaTCP    = "tcp"
	ViaUnix   = "unix"
)

// KeyfilePlan is an encrypted key file kept as gnokey keeps it.
type KeyfilePlan struct {
	Path           string // "": <validator home>/config/priv_validator_key.armor
	Decrypt        string // every-sign | once (default every-sign)
	BcryptCost     int    // default 12
	PassphraseEnv  string // exactly one of PassphraseEnv, PassphraseFile
	PassphraseFile string // resolved relative to the scenario file's directory
}

// Keyfile decrypt modes.
const (
	DecryptEverySign = "every-sign"
	DecryptOnce      = "once"
)

// ProfilePlan is a user-defined device profile (top-level `profiles:`):
// exactly one of Latency (a distribution) or ByPayload (a table of signing
// time by payload size, interpolated linearly) is set.
type ProfilePlan struct {
	Name        string
	Description string
	Source      string // where the numbers come from; free text
	Latency     *LatencyPlan
	ByPayload   []PayloadPoint // sorted by Bytes, at least 2 points
}

// PayloadPoint is one row of a payload-size table.
type PayloadPoint struct {
	Bytes   int
	Latency time.Duration
}

// Fault action names are in internal/action.

// FaultPlan is one `faults:` entry.
type FaultPlan struct {
	Action string
	Target string  // an expanded validator name; "" for partition and heal, and for network-latency on one link or every link
	At     FaultAt // when it starts
	// Duration by action (docs/scenario.md): signer-delay: the window, 0 =
	// until the end of the run; signer-drop, signer-error: the window, 0 =
	// only at At.Height (and At.Round if HasRound), never 0 when At is a
	// time; signer-outage: > 0; signer-restart, node-restart: downtime
	// between stop and start, default 0; network-latency, partition,
	// isolate: the window, 0 = until the end of the run (or a heal);
	// node-stop, node-kill: down time before the node is started again,
	// 0 = it stays down; node-pause: paused time, 0 = until a node-resume;
	// heal, node-start, node-resume: always 0.
	Duration time.Duration
	Latency  *LatencyPlan // signer-delay: the extra delay (its Phases equal the fault's); network-latency: the links' latency (Link.Latency is a copy); nil otherwise
	// Phases: signer-delay, signer-drop, signer-error: phases affected,
	// in consensus order, never empty after resolution (default: all);
	// nil for the other actions. Empty = all.
	Phases []string
	// network-latency: the links changed: From/To (directed, both ways
	// unless OneWay), or every link of Target, or (all empty) every link;
	// Latency is the new one-way latency, Link its jitter and bandwidth.
	From, To string
	OneWay   bool
	Link     *LinkPlan
	// partition: the validators of each side; links between sides are cut.
	Groups [][]string
	Pos    Pos
}

// FaultAt is when a fault starts: at a height (optionally a round), or a
// time after the network started. Exactly one of Height > 0 or Time > 0.
type FaultAt struct {
	Height   int64
	Round    int32
	HasRound bool
	Time     time.Duration
}

// LatencyPlan is a delay model (latency.Spec: only the fields of its Dist
// are set, and it is valid) and the phases it applies to.
type LatencyPlan struct {
	latency.Spec
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
	// Default: added by valnet, not written (DefaultSignErrors).
	Default bool
}

// Pos is a position in a scenario file.
type Pos struct {
	File string
	Line int
	Col  int
}

// flagPrefix starts the File of a position in a command-line setting
// (Overrides.Set) rather than in the file: "--set PATH=VALUE" (or the
// setting's own Flag), no line.
const flagPrefix = "--"

// setPos is the position of a value given by setting s.
func setPos(s Setting) Pos { return Pos{File: s.flag() + " " + s.String()} }

// FromSetting reports whether p lies in a command-line setting (its
// message names the setting) rather than in the scenario's text.
func (p Pos) FromSetting() bool { return p.fromSet() }

// fromSet reports whether p lies in a command-line setting.
func (p Pos) fromSet() bool { return p.Line == 0 && strings.HasPrefix(p.File, flagPrefix) }
