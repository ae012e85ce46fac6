package scenarios

import (
	"time"

	"github.com/valnet/valnet/latency"
)

// The raw scenario document, schema v1: what the YAML says, before defaults
// and checks. Key names are a public contract. The yaml tags are the single
// list of accepted keys: the node walker (decode.go) and the docs test read
// them through keyLevels (keys.go), and schema.json is generated from them
// (go generate ./scenarios/): each field's doc comment is its description
// there and states its default, its jsonschema tag its simple bounds. A nil
// pointer means "not written"; resolve.go applies the defaults. Downstream
// code uses Plan, never these.

// rawScenario is the whole document.
type rawScenario struct {
	// Required. The scenario's name: lowercase letters, digits and '-', starting with a letter or
	// digit, max 48 characters.
	Name string `yaml:"name" jsonschema:"required"`
	// Free text; the first line is the summary in listings. Default: empty.
	Description string `yaml:"description"`
	// Genesis and consensus configuration.
	Chain *rawChain `yaml:"chain"`
	// How and for how long the network runs.
	Run *rawRun `yaml:"run"`
	// What runs every validator's node (process backend only). A validator's own node key overrides
	// it.
	Node *rawNode `yaml:"node"`
	// The chain's own ABCI application: one process per validator, started by valnet; its node
	// connects to it instead of the built-in kvstore (docs/app.md). inprocess and process backends
	// only.
	App *rawApp `yaml:"app"`
	// The links between validators, shaped in user space (valnet's proxies). Default: plain links,
	// full mesh.
	Network *rawNetwork `yaml:"network"`
	// A transaction load sent into the nodes' mempools through their RPC (broadcast_tx_sync), as a
	// client would. Default: none.
	Load *rawLoad `yaml:"load"`
	// Device profiles for simulated signers, by name. Default: none. A profile may be defined and not
	// used.
	Profiles map[string]rawProfile `yaml:"profiles"`
	// Signing devices shared by several signers (and a MODEL of other chains' load), by name: one
	// queue, one signature at a time. Default: none. A device no signer uses needs background.
	Devices map[string]rawDevice `yaml:"devices"`
	// Required. 1 to 200 validators after count expansion; names unique after expansion.
	Validators []rawValidator `yaml:"validators" jsonschema:"required,minItems=1,maxItems=200"`
	// Nodes that are not validators: full nodes and seeds, by entry (a
	// validator's sentries are its own sentries: key). Default: none.
	Nodes []rawPeerNode `yaml:"nodes"`
	// Faults injected into signers, links and nodes during the run, in order. Default: none.
	Faults []rawFault `yaml:"faults"`
	// Checks on the run's results. Default: none.
	Expect []rawExpect `yaml:"expect"`
}

// rawChain is the chain's genesis and consensus configuration.
type rawChain struct {
	// Default: valnet-<name> (cut to 50 characters). CometBFT allows 1 to 50 characters.
	ChainID *string `yaml:"chain_id" jsonschema:"minLength=1,maxLength=50"`
	// CometBFT [consensus] timeouts. Defaults are CometBFT's. None may be negative; propose, prevote
	// and precommit must be > 0.
	Timeouts *rawTimeouts `yaml:"timeouts"`
	// Default 0: off. From this height every non-nil precommit carries a vote extension and its
	// signature (a second signature per precommit). Written where the node's version reads it
	// (consensus_params.feature in v1, .abci in v0.38-v0.40); needs v0.38 or later.
	VoteExtensionsEnableHeight *int64 `yaml:"vote_extensions_enable_height" jsonschema:"minimum=0,default=0"`
}

// rawTimeouts are CometBFT's [consensus] timeouts. Defaults are CometBFT's
// config.DefaultConsensusConfig(); none may be negative, and propose, prevote
// and precommit must be > 0.
type rawTimeouts struct {
	// Default 3s; > 0.
	Propose *time.Duration `yaml:"propose" jsonschema_extras:"default=3s"`
	// Default 500ms.
	ProposeDelta *time.Duration `yaml:"propose_delta" jsonschema_extras:"default=500ms"`
	// Default 1s; > 0.
	Prevote *time.Duration `yaml:"prevote" jsonschema_extras:"default=1s"`
	// Default 500ms.
	PrevoteDelta *time.Duration `yaml:"prevote_delta" jsonschema_extras:"default=500ms"`
	// Default 1s; > 0.
	Precommit *time.Duration `yaml:"precommit" jsonschema_extras:"default=1s"`
	// Default 500ms.
	PrecommitDelta *time.Duration `yaml:"precommit_delta" jsonschema_extras:"default=500ms"`
	// Default 1s.
	Commit *time.Duration `yaml:"commit" jsonschema_extras:"default=1s"`
}

// rawRun says how and for how long to run.
type rawRun struct {
	// Default inprocess: every node inside valnet's process. process: each validator is its own OS
	// process (valnet node, or node.binary). docker: each validator a container (valnet node) on a
	// private bridge network. sim: a virtual-time MODEL of CometBFT consensus, no real nodes
	// (docs/sim.md).
	Backend *string `yaml:"backend" jsonschema:"default=inprocess"`
	// Default 20. Stop once this height is committed.
	Heights *int64 `yaml:"heights" jsonschema:"minimum=1,default=20"`
	// Default 10m; > 0, at most 24h (but on the sim backend, whose time is virtual). Hard stop.
	MaxDuration *time.Duration `yaml:"max_duration" jsonschema_extras:"default=10m"`
	// Default 1. Seeds validator keys, random latency models and random topologies.
	Seed *int64 `yaml:"seed" jsonschema:"default=1"`
	// Optional, > 0. A stretch without a commit longer than this counts as a halt in summary.json.
	// Default: the longer of round 0 plus round 1 with every timeout firing plus the commit timeout
	// (12.5 s at the default timeouts) and 5 × the run's median block interval.
	HaltAfter *time.Duration `yaml:"halt_after"`
	// The sim backend's settings (docs/sim.md); other backends ignore them.
	Sim *rawSim `yaml:"sim"`
}

// rawSim tunes the sim backend, a virtual-time MODEL of CometBFT
// consensus (docs/sim.md).
type rawSim struct {
	// Default default: the calibration shipped with valnet. A built-in calibration name or a file
	// written by valnet calibrate, relative to the scenario file.
	Calibration *string `yaml:"calibration" jsonschema:"minLength=1,default=default"`
	// Default 0: every node has its own CPU, as on a real chain. k > 0: all nodes' processing shares k
	// cores, as on one test host.
	SharedCores *int64 `yaml:"shared_cores" jsonschema:"minimum=0,maximum=1024,default=0"`
}

// rawNode says what runs a validator's node. Top level: every validator;
// under a validator: that one, over the top level. Process backend only.
type rawNode struct {
	// A stock cometbft (v0.37, v0.38, v0.39, v0.40 or v1.0) to run instead of valnet node, relative to
	// the scenario file's directory; run as <binary> start --home DIR --proxy_app=kvstore. Needs
	// run.backend: process or docker.
	Binary *string `yaml:"binary" jsonschema:"minLength=1"`
	// Default: what the binary's version says, v1.0 for valnet node. v0.37, v0.38, v0.39, v0.40 or
	// v1.0; refused before the run if the binary says otherwise. On the sim: the line whose defaults
	// it models (flush_throttle_timeout 100 ms up to v0.38, 10 ms later).
	Version *string `yaml:"version" jsonschema:"pattern=^v?(0\\.3[78]|0\\.39|0\\.40|1(\\.0)?)(\\.[0-9]+)?$"`
	// Raw config.toml settings valnet does not model, "section.key: value" or nested as in
	// config.toml; checked against the keys of the node's version (its own init), with did-you-mean.
	// Keys valnet sets itself (ports, peers, timeouts, signer wiring) are refused.
	Config *rawNodeConfig `yaml:"config"`
}

// rawApp is the chain's own ABCI application (app.go): valnet starts one
// process of it per validator and that validator's node connects to it.
type rawApp struct {
	// The app's argv (no shell). Must contain {addr}: the address valnet picks (a unix socket for
	// socket, loopback tcp for grpc); {home} is the validator's app directory. A first element with a
	// slash is relative to the scenario file's directory, else looked up on PATH.
	Command []string `yaml:"command" jsonschema:"required,minItems=1"`
	// CometBFT's abci transport to the app.
	Transport *string `yaml:"transport" jsonschema:"default=socket"`
}

// rawNetwork shapes the links between validators (network.go). Every
// directed link gets latency, jitter and bandwidth, then the zone matrix
// between zoned validators, then the links overrides.
type rawNetwork struct {
	// One-way latency of every link: a duration or a latency model, without phases. Default: none.
	Latency *rawLatency `yaml:"latency"`
	// Normal jitter (stddev) added to every link's latency. Default 0.
	Jitter *time.Duration `yaml:"jitter"`
	// Bandwidth of each direction of every link. Default: unlimited.
	Bandwidth *string `yaml:"bandwidth"`
	// Overrides of single links, in order: later ones win, and they win over zones.
	Links []rawLink `yaml:"links"`
	// Region -> validators in it. Links between two zoned validators get the AWS matrix's one-way
	// latency (5% jitter) on top of latency. Regions: N_Virginia, Canada, N_California, London,
	// Oregon, Ireland, Frankfurt, S_Paulo, Tokyo, Mumbai, Sydney, Seoul, Singapore, in any case, or
	// their AWS codes (us-east-1, ca-central-1, us-west-1, eu-west-2, us-west-2, eu-west-1, eu-
	// central-1, sa-east-1, ap-northeast-1, ap-south-1, ap-southeast-2, ap-northeast-2, ap-
	// southeast-1). A validator is in at most one zone.
	Zones map[string][]string `yaml:"zones"`
	// Whom each validator dials. Default mesh (everyone). {ring: K}: the next K in order, wrapping.
	// {random: K}: K others drawn from run.seed. explicit: as network.peers says (the default when
	// peers is given). 1 <= K < number of validators.
	Topology *rawTopology `yaml:"topology"`
	// Explicit topology: validator -> the validators it dials (not itself). Validators not listed dial
	// no one. Every validator must reach every other through dials, either way round.
	Peers map[string][]string `yaml:"peers"`
}

// rawLoad is a transaction load sent into the nodes' mempools during the
// run, as a client would (load.go).
type rawLoad struct {
	// Required. Transactions per second (/s) or per minute (/min), > 0: 200/s, 1.5/s, 30/min.
	Rate *string `yaml:"rate" jsonschema:"required,pattern=^([0-9]+(\\.[0-9]*)?|\\.[0-9]+) ?/ ?(s|min)$"`
	// Bytes per transaction with a unit (B, KB or kB, MB, GB; KiB, MiB, GiB), 18B..1MiB. Default:
	// 1KiB.
	Size *string `yaml:"size" jsonschema:"pattern=^([0-9]+(\\.[0-9]*)?|\\.[0-9]+) ?(B|[kK]B|MB|GB|KiB|MiB|GiB)$"`
	// all (round robin over the validators whose node runs) or one expanded validator's name. Default:
	// all.
	To *string `yaml:"to"`
	// When the load begins, after the first block is committed (a node refuses transactions while it
	// catches up). Default: 0.
	Start *time.Duration `yaml:"start"`
	// How long it lasts, > 0. Default: to the end of the run.
	Duration *time.Duration `yaml:"duration"`
}

// rawLink is one links entry: one link, both ways unless one_way. Keys
// left out take the network's default, not the zone matrix.
type rawLink struct {
	// Required. An expanded validator name.
	From string `yaml:"from" jsonschema:"required"`
	// Required. Another expanded validator name.
	To string `yaml:"to" jsonschema:"required"`
	// One-way latency. Default: network.latency.
	Latency *rawLatency `yaml:"latency"`
	// Normal jitter (stddev) on top of latency. Default: network.jitter.
	Jitter *time.Duration `yaml:"jitter"`
	// Default: network.bandwidth.
	Bandwidth *string `yaml:"bandwidth"`
	// Default false: the setting applies from -> to and to -> from. true: from -> to only.
	OneWay *bool `yaml:"one_way" jsonschema:"default=false"`
}

// rawSignerLink shapes the connection between a validator's node and its
// remote signer (via tcp), as a network link: a signer in another
// datacenter pays this on every signature, both ways.
type rawSignerLink struct {
	// One-way latency. Default: none.
	Latency *rawLatency `yaml:"latency"`
	// Normal jitter (stddev) on top of latency. Default 0.
	Jitter *time.Duration `yaml:"jitter"`
	// Default: unlimited.
	Bandwidth *string `yaml:"bandwidth"`
}

// rawTopology is mesh or explicit written as a bare word (decodeScalar),
// or a mapping with exactly one of ring and random.
type rawTopology struct {
	// Each validator dials the next K validators, in declaration order, wrapping.
	Ring *int64 `yaml:"ring" jsonschema:"minimum=1"`
	// Each validator dials K others drawn from run.seed; dials are added until the network is
	// connected.
	Random *int64 `yaml:"random" jsonschema:"minimum=1"`

	word string // written as a bare word
}

// rawValidator is one validators entry, possibly standing for several.
type rawValidator struct {
	// Required. With count N > 1, expands to <name>-1 .. <name>-N.
	Name string `yaml:"name" jsonschema:"required"`
	// Default 1. N > 1 makes N validators named <name>-1 .. <name>-N.
	Count *int64 `yaml:"count" jsonschema:"minimum=1,maximum=200,default=1"`
	// Default 10. Voting power of each validator.
	Power *int64 `yaml:"power" jsonschema:"minimum=1,default=10"`
	// Signing backend. Default: {type: local}.
	Signer *rawSigner `yaml:"signer"`
	// The region this validator (every one of count) is in, as a key of
	// network.zones: N_Virginia, ..., or an AWS code such as us-east-1.
	// Default: the zone network.zones puts it in, if any; not both.
	Zone *string `yaml:"zone"`
	// This validator's node, over the top-level node (process backend only).
	Node *rawNode `yaml:"node"`
	// Default 0. N > 0: each of this entry's validators is reachable only
	// through its own N sentry nodes, <name>-sentry-1 .. <name>-sentry-N (full
	// nodes in its zone, CometBFT's sentry layout): it dials them alone,
	// and they keep its address private.
	Sentries *int64 `yaml:"sentries" jsonschema:"minimum=0,maximum=8,default=0"`
}

// rawPeerNode is one nodes entry: non-validator nodes, possibly several.
type rawPeerNode struct {
	// Required. With count N > 1, expands to <name>-1 .. <name>-N.
	Name string `yaml:"name" jsonschema:"required"`
	// Default 1. N > 1 makes N nodes named <name>-1 .. <name>-N.
	Count *int64 `yaml:"count" jsonschema:"minimum=1,maximum=1000,default=1"`
	// Default full: a full node (follows the chain, relays, signs nothing).
	// seed: a seed node (CometBFT's seed_mode): the others find their peers
	// through the seeds, each up to p2p.max_num_outbound_peers (10) dials
	// and p2p.max_num_inbound_peers (40) accepted, instead of
	// network.topology.
	Role *string `yaml:"role" jsonschema:"default=full"`
	// The region of this entry's nodes, as a key of network.zones. Default:
	// none (or network.zones').
	Zone *string `yaml:"zone"`
}

// rawSigner picks a validator's signing backend. Keys that belong to one
// signer type only are listed in signerTypeKeys (signer.go).
type rawSigner struct {
	// Default local: CometBFT's file signer. keyfile: an encrypted key file, decrypted with a
	// passphrase. simulated: a device with the signing times of a profile. pkcs11: an Ed25519 key in a
	// PKCS#11 token (an HSM, or SoftHSM2). ledger: the Tendermint validator app on a Ledger, or its
	// model. external: your own signer (tmkms, horcrux, gnokms, valnet signer serve), which dials the
	// node at address. threshold: a MODEL of a horcrux v3 threshold signer: its cosigners on the link
	// fabric, their message rounds, timeouts and quorum; the signature is made with one full key (see
	// docs/threshold.md).
	Type *string `yaml:"type" jsonschema:"default=local"`
	// Default ed25519. The validator's key type.
	KeyType *string `yaml:"key_type" jsonschema:"default=ed25519"`
	// Default direct: the node calls the signer in-process. tcp, unix: the signer sits behind
	// CometBFT's remote-signer protocol on that kind of socket.
	Via *string `yaml:"via" jsonschema:"default=direct"`
	// Injected delay before each signature. Default: none. A bare duration is a fixed delay.
	Latency *rawLatency `yaml:"latency"`
	// Default 1; > 0. Multiplies the time software signing takes: 10 is a host ten times slower than
	// this one (a Raspberry Pi class machine).
	CPUScale *float64 `yaml:"cpu_scale" jsonschema:"exclusiveMinimum=0,default=1"`
	// Default: none. simulated, pkcs11 and ledger only. A name from the top-level devices: sign on
	// that shared device; a simulated signer then takes the device's profile (leave profile out).
	Device *string `yaml:"device"`
	// Default: none (the signer next to its node). via tcp only: the node<->signer connection goes
	// through the link fabric with this setting both ways, as a signer in another datacenter.
	Link *rawSignerLink `yaml:"link"`
	// Default auto: the node's own. The privval layout: v0.38 (tendermint.privval, also v0.37, v0.39,
	// v0.40) or v1 (cometbft.privval.v1). For a signer valnet runs, what it answers the node in; for
	// type external, what your signer speaks, checked when it connects (valnet's listener reads both).
	Dialect *string `yaml:"dialect" jsonschema:"pattern=^(auto|v?(0\\.3[478]|0\\.39|0\\.40|1(\\.0)?))$,default=auto"`

	// keyfile only. The encrypted key file, relative to the scenario file's directory. Default: in the
	// validator's home.
	Path *string `yaml:"path" jsonschema:"minLength=1"`
	// keyfile only. Default every-sign: decrypt the key for each signature (as gnokey does); once: at
	// start.
	Decrypt *string `yaml:"decrypt" jsonschema:"default=every-sign"`
	// keyfile only. Default 12; 4 to 31. bcrypt cost of the key derivation.
	BcryptCost *int64 `yaml:"bcrypt_cost" jsonschema:"minimum=4,maximum=31,default=12"`
	// keyfile only. The name of the environment variable that holds the passphrase. Exactly one of
	// passphrase_env and passphrase_file.
	PassphraseEnv *string `yaml:"passphrase_env" jsonschema:"pattern=^[A-Za-z_][A-Za-z0-9_]*$"`
	// keyfile only. A file holding the passphrase, relative to the scenario file's directory. Exactly
	// one of passphrase_env and passphrase_file.
	PassphraseFile *string `yaml:"passphrase_file" jsonschema:"minLength=1"`

	// simulated only, and required there unless the signer is on a device (then refused). A built-in
	// profile or a name defined under profiles.
	Profile *string `yaml:"profile"`

	// pkcs11 only. With provision: softhsm the run makes its own token and
	// only module, token and key may be given; without it module, key, one
	// of token and slot, and one of pin_env and pin_file are required.

	// pkcs11 only. The token's PKCS#11 library (.so), relative to the scenario file's directory.
	// Required unless provision: softhsm, where it defaults to the SoftHSM2 module found on the host.
	Module *string `yaml:"module" jsonschema:"minLength=1"`
	// pkcs11 only. The token's label (at most 32 bytes). Exactly one of token and slot, unless
	// provision: softhsm, where it defaults to valnet-<validator>.
	Token *string `yaml:"token" jsonschema:"minLength=1,maxLength=32"`
	// pkcs11 only. The token's slot number, instead of token. Not with provision.
	Slot *int64 `yaml:"slot" jsonschema:"minimum=0,maximum=4294967295"`
	// pkcs11 only. The label (CKA_LABEL) of the Ed25519 key pair on the token. Required unless
	// provision: softhsm, where it defaults to consensus.
	Key *string `yaml:"key" jsonschema:"minLength=1"`
	// pkcs11 only. The name of the environment variable that holds the token's user PIN. Exactly one
	// of pin_env and pin_file; neither with provision.
	PinEnv *string `yaml:"pin_env" jsonschema:"pattern=^[A-Za-z_][A-Za-z0-9_]*$"`
	// pkcs11 only. A file holding the token's user PIN, relative to the scenario file's directory.
	// Exactly one of pin_env and pin_file; neither with provision.
	PinFile *string `yaml:"pin_file" jsonschema:"minLength=1"`
	// pkcs11 only. softhsm: the run creates a throwaway SoftHSM2 token with an Ed25519 key and a
	// random PIN in its run directory.
	Provision *string `yaml:"provision"`

	// ledger only (ledger.go). Ed25519 only.

	// ledger only. Default emulator: a model of a Ledger Nano S Plus that speaks the app's APDU
	// protocol. hid: a real device over USB HID.
	Connection *string `yaml:"connection" jsonschema:"default=emulator"`
	// ledger, device hid only. The device's USB serial number or HID path. Default: the first Ledger
	// found.
	Serial *string `yaml:"serial"`
	// ledger only. Default 250; 1 to 255. Bytes of sign bytes per APDU packet.
	ChunkSize *int64 `yaml:"chunk_size" jsonschema:"minimum=1,maximum=255,default=250"`
	// ledger, device emulator only. Default 0. The wait before the first signature after the app
	// starts is confirmed (a button press on a device).
	ConfirmDelay *time.Duration `yaml:"confirm_delay" jsonschema_extras:"default=0s"`
	// ledger, device emulator only. Default 51ms (ledger-nano-s-plus); > 0. The host's share of each
	// APDU exchange.
	HostStall *time.Duration `yaml:"host_stall" jsonschema_extras:"default=51ms"`
	// ledger, device emulator only. Default 3ms; > 0. The USB transfer of each APDU exchange.
	Wire *time.Duration `yaml:"wire" jsonschema_extras:"default=3ms"`
	// ledger, device emulator only. Default 525ms; > 0. The device's own signing time, once per
	// signature.
	DeviceSign *time.Duration `yaml:"device_sign" jsonschema_extras:"default=525ms"`

	// external only (external.go): the user's own signer (tmkms, horcrux,
	// gnokms, valnet signer serve) dials the node with its own key.

	// external only, and required there. tcp://host:port or unix:///path/to/socket: where the
	// validator's node listens for your signer, which dials in.
	Address *string `yaml:"address" jsonschema:"pattern=^(tcp://.+:[0-9]+|unix://.+)$"`
	// external only. Default 60s; > 0. How long the run waits for the signer to dial in.
	Wait *time.Duration `yaml:"wait" jsonschema_extras:"default=60s"`
	// external, tcp:// only. Default: any signer. The signer's SecretConnection identity (its address,
	// 40 hex digits).
	Identity *string `yaml:"identity" jsonschema:"pattern=^[0-9A-Fa-f]{40}$"`

	// threshold only (threshold.go): a MODEL of a horcrux-style threshold
	// signer, its cosigners each an endpoint on the link fabric.

	// threshold only. Default 3; 2..9. The number of cosigners, each holding a share of the key (in
	// the model: each a party to the protocol).
	Cosigners *int64 `yaml:"cosigners" jsonschema:"minimum=2,maximum=9,default=3"`
	// threshold only. Default a majority (cosigners/2 + 1); more than half of cosigners and at most
	// cosigners. How many cosigners take part in each signature.
	Threshold *int64 `yaml:"threshold" jsonschema:"minimum=2,maximum=9"`
	// threshold only. Default: none (the cosigners side by side). Every link between two cosigners,
	// both ways, goes through the link fabric with this setting. Not with regions.
	Links *rawSignerLink `yaml:"links"`
	// threshold only. Default: none. One region per cosigner (the regions of network.zones: AWS matrix
	// names or AWS codes): each link between two cosigners gets the matrix's one-way latency. Not with
	// links.
	Regions []string `yaml:"regions" jsonschema:"minItems=2,maxItems=9"`
	// threshold only. Default 500ms (horcrux's grpcTimeout since v3.2.0; 1500ms before); > 0. How long
	// the leader waits for each cosigner's answer.
	Timeout *time.Duration `yaml:"timeout" jsonschema_extras:"default=500ms"`
}

// rawLatency is an injected signing delay. It is written either as a bare
// duration (shorthand for {dist: fixed, value: D}) or as a mapping whose
// allowed keys depend on dist (distKeys in latency.go).
type rawLatency struct {
	// The delay's distribution; it decides which other keys apply.
	Dist string `yaml:"dist" jsonschema:"required"`
	// fixed: the delay.
	Value *time.Duration `yaml:"value"`
	// uniform: lower bound, <= max.
	Min *time.Duration `yaml:"min"`
	// uniform: upper bound.
	Max *time.Duration `yaml:"max"`
	// normal: mean.
	Mean *time.Duration `yaml:"mean"`
	// normal: standard deviation.
	Stddev *time.Duration `yaml:"stddev"`
	// lognormal: median, > 0.
	P50 *time.Duration `yaml:"p50"`
	// lognormal: 99th percentile, >= p50.
	P99 *time.Duration `yaml:"p99"`
	// Phases the delay applies to. Default: all three.
	Phases []string `yaml:"phases"`

	shorthand bool          // written as a bare duration
	text      *latency.Spec // written as latency.Parse's text (signer serve config only)
}

// rawProfile is one entry of the top-level profiles mapping: a device's
// signing time, either as a distribution or as a table by payload size.
type rawProfile struct {
	// Free text. Default: empty.
	Description string `yaml:"description"`
	// Where the numbers come from, free text. Default: empty.
	Source string `yaml:"source"`
	// The signing time as a distribution (the same forms as a signer's latency, without phases).
	Latency *rawLatency `yaml:"latency"`
	// The signing time by payload size, interpolated linearly: at least 2 rows, bytes strictly
	// increasing.
	ByPayload *[]rawPayloadPoint `yaml:"by_payload" jsonschema:"minItems=2"`
}

// rawDevice is one entry of the top-level devices mapping: one signing
// device that serves every signer naming it, one signature at a time.
type rawDevice struct {
	// Default: none. The device's time per signature: a built-in profile or a name defined under
	// profiles. Required with background or when a simulated signer joins.
	Profile *string `yaml:"profile"`
	// A MODEL of other chains' signing load on this device: per block a proposal on its turns, a
	// prevote and a precommit.
	Background *rawBackground `yaml:"background"`
}

// rawBackground is a MODEL of the signing load of other chains a device
// serves: each asks for a proposal (on its turns), a prevote and a
// precommit per block.
type rawBackground struct {
	// Required; 0..1000 other chains.
	Chains *int64 `yaml:"chains" jsonschema:"required,minimum=0,maximum=1000"`
	// Default 6s; > 0. Each other chain's block time.
	BlockTime *time.Duration `yaml:"block_time" jsonschema_extras:"default=6s"`
	// Default 0.25; 0..1. The share of a chain's blocks whose proposal the device signs.
	ProposerShare *float64 `yaml:"proposer_share" jsonschema:"minimum=0,maximum=1,default=0.25"`
	// Default 100ms. Proposal -> prevote -> precommit within a block.
	Spacing *time.Duration `yaml:"spacing" jsonschema_extras:"default=100ms"`
	// Default 50ms. Each block starts late by a uniform draw in [0, jitter); 2 x spacing + jitter <
	// block_time.
	Jitter *time.Duration `yaml:"jitter" jsonschema_extras:"default=50ms"`
}

// rawPayloadPoint is one row of a profile's by_payload table.
type rawPayloadPoint struct {
	// Payload size in bytes; >= 1, greater than the row before.
	Bytes *int64 `yaml:"bytes" jsonschema:"required,minimum=1"`
	// Signing time for that size.
	Latency *time.Duration `yaml:"latency" jsonschema:"required"`
}

// rawFault is one faults entry. Which keys each action takes, requires or
// refuses is in faultActions (faults.go).
type rawFault struct {
	// Required. What happens: to the target's signer (signer-*), to one cosigner of the target's
	// threshold signer (cosigner-*), to the network (network-latency, partition, isolate, heal) or to
	// the target's node (node-*); see docs/scenario.md.
	Action string `yaml:"action" jsonschema:"required"`
	// The (expanded) validator hit: for {name: v, count: 3}, v-2, not v. Required for signer-*,
	// cosigner-*, isolate and node-*; refused by partition and heal; optional for network-latency
	// (every link of that validator). cosigner-* take NAME.cosigner-K, cosigner K (1..cosigners) of
	// NAME's threshold signer; isolate takes that too (it cuts the cosigner's links), or NAME.signer
	// (its signer link).
	Target string `yaml:"target"`
	// Required. When the fault starts: a height (and, for signer-drop and signer-error, a round) or a
	// time since the network started.
	At *rawFaultAt `yaml:"at" jsonschema:"required"`
	// signer-delay, network-latency, partition, isolate: the window (0 or absent: until the run ends,
	// or a heal). signer-drop, signer-error: the window, > 0 (absent: at at.height only; required with
	// at.time). signer-outage: required, > 0. cosigner-down, cosigner-slow: how long the cosigner
	// stays down or slow (0 or absent: until the run ends). signer-restart, node-restart: downtime
	// between stop and start (default 0). node-stop, node-kill: down time, then started again (0 or
	// absent: stays down). node-pause: paused time (0 or absent: until a node-resume). heal, node-
	// start, node-resume: none.
	Duration *time.Duration `yaml:"duration"`
	// signer-delay (the extra delay before each signature), cosigner-slow (the delay before each of
	// the cosigner's answers) and network-latency (the links' one-way latency), and required there. No
	// phases here.
	Latency *rawLatency `yaml:"latency"`
	// signer-delay, signer-drop and signer-error only. Phases hit. Default: all three.
	Phases []string `yaml:"phases"`
	// network-latency only, with to, not with target: one link, both ways unless one_way.
	From string `yaml:"from"`
	// network-latency only, with from: the link's other end.
	To string `yaml:"to"`
	// network-latency only, with from and to. true: only from -> to changes.
	OneWay *bool `yaml:"one_way" jsonschema:"default=false"`
	// network-latency only. Normal jitter (stddev) on the changed links while the fault lasts. Default
	// 0.
	Jitter *time.Duration `yaml:"jitter"`
	// network-latency only. The changed links' bandwidth while the fault lasts. Default: unlimited.
	Bandwidth *string `yaml:"bandwidth"`
	// partition only, and required there: at least 2 disjoint groups of validators; links between
	// groups are cut. Validators in no group keep every link.
	Groups [][]string `yaml:"groups" jsonschema:"minItems=2"`
}

// rawFaultAt is when a fault starts.
type rawFaultAt struct {
	// Block height, >= 1, at most run.heights.
	Height *int64 `yaml:"height" jsonschema:"minimum=1"`
	// signer-drop and signer-error only, with height: only this round of the height.
	Round *int64 `yaml:"round" jsonschema:"minimum=0,maximum=2147483647"`
	// Time since the network started, > 0 and before run.max_duration.
	Time *time.Duration `yaml:"time"`
}

// rawExpect is one expect entry: a bound on a metric of the run.
type rawExpect struct {
	// Required. The metric to check; see docs/scenario.md.
	Metric string `yaml:"metric" jsonschema:"required"`
	// Per-validator metrics only: the (expanded) validator to check. Default: every validator.
	Validator string `yaml:"validator"`
	// sign_latency_* metrics only. Default: all phases together.
	Phase string `yaml:"phase"`
	// Lower bound (inclusive).
	Min *float64 `yaml:"min"`
	// Upper bound (inclusive).
	Max *float64 `yaml:"max"`
}
