package scenarios

import (
	"encoding/hex"
	"fmt"
	"github.com/valnet/valnet/internal/action"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/valnet/valnet/internal/cmtversion"
)

// The config file of `valnet signer serve` is read by the scenario's own
// decoder, so it is as strict and its messages are the same: every unknown
// key (with a did-you-mean), wrong type and bad value at once, each with
// file:line:col, and the allowed values of a closed set. Its keys are the
// command's flags (chain_id for --chain-id); its faults are a scenario's
// signer faults without target and at.time.

// rawServe is the config file.
type rawServe struct {
	Node           *string         `yaml:"node"`            // the node's priv_validator_laddr: tcp://host:port or unix:///path
	ChainID        *string         `yaml:"chain_id"`        // the chain the node runs
	KeyFile        *string         `yaml:"key_file"`        // relative to the file's directory
	StateFile      *string         `yaml:"state_file"`      // relative to the file's directory
	IdentityKey    *string         `yaml:"identity_key"`    // relative to the file's directory
	NodeID         *string         `yaml:"node_id"`         // the node's SecretConnection identity (tcp), hex address; default any node
	Dialect        *string         `yaml:"dialect"`         // default auto (both layouts at once, which every version reads); auto|v0.38|v1 (v0.37, v0.39, v0.40 speak v0.38's)
	Type           *string         `yaml:"type"`            // default local; local|keyfile|simulated
	Profile        *string         `yaml:"profile"`         // simulated: a built-in profile
	Latency        *rawLatency     `yaml:"latency"`         // a latency as in a scenario, or latency.Parse's text form
	CPUScale       *float64        `yaml:"cpu_scale"`       // default 1; > 0
	PassphraseEnv  *string         `yaml:"passphrase_env"`  // keyfile
	PassphraseFile *string         `yaml:"passphrase_file"` // keyfile; relative to the file's directory
	Decrypt        *string         `yaml:"decrypt"`         // keyfile; every-sign|once
	Seed           *int64          `yaml:"seed"`            // default 1
	Faults         []rawServeFault `yaml:"faults"`          // default none
}

// rawServeFault is a scenario's rawFault cut to what a standalone signer
// can do: it is the only target, and it sees heights, not the chain's clock.
type rawServeFault struct {
	Action   string           `yaml:"action"`   // required; signer-delay|signer-drop|signer-error
	At       *rawServeFaultAt `yaml:"at"`       // required
	Duration *time.Duration   `yaml:"duration"` // as in a scenario
	Latency  *rawLatency      `yaml:"latency"`  // signer-delay, required there; no phases
	Phases   []string         `yaml:"phases"`   // default all
}

type rawServeFaultAt struct {
	Height *int64 `yaml:"height"` // required; >= 1
	Round  *int64 `yaml:"round"`  // >= 0; signer-drop and signer-error at one height only
}

func init() {
	unknownKeyHints[reflect.TypeFor[rawServeFault]()] = map[string]string{
		"target": "a standalone signer is the only target of its faults",
	}
	unknownKeyHints[reflect.TypeFor[rawServeFaultAt]()] = map[string]string{
		"time": "a standalone signer sees no clock of the chain, only the heights it is asked to sign; use at.height",
	}
}

// ServePlan is a signer serve config file after decoding. Strings are as
// written, "" when not; paths are joined to the file's directory, but a
// leading ~/ is left for the command to expand as it does for its flags.
type ServePlan struct {
	Node, ChainID                          string
	KeyFile, StateFile, IdentityKey        string
	NodeID                                 string
	Dialect                                string // "" (auto), "v0.38" or "v1"
	Type, Profile                          string
	Latency                                *LatencyPlan // nil: none
	CPUScale                               float64      // default 1
	PassphraseEnv, PassphraseFile, Decrypt string
	Seed                                   int64       // default 1
	Faults                                 []FaultPlan // Target "", At.Height >= 1
}

// Serve signer types, and the faults of a standalone signer.
var (
	serveTypes        = []string{SignerLocal, SignerKeyfile, SignerSimulated}
	serveFaultActions = []string{action.SignerDelay, action.SignerDrop, action.SignerError}
	// serveRefused says why a scenario's other signer faults do not apply.
	serveRefused = map[string]string{
		action.SignerOutage:  "signer-outage does not apply to a standalone signer (it has no node side to cut off): stop the signer process instead",
		action.SignerRestart: "signer-restart does not apply to a standalone signer: restart the signer process instead",
	}
)

// ServeFaultActions lists the fault actions of a standalone signer.
func ServeFaultActions() []string { return slices.Clone(serveFaultActions) }

// LoadServe reads a signer serve config file. An empty file is an empty
// config: the flags say the rest. Every problem is reported together, as
// Errors.
func LoadServe(path string) (*ServePlan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	root, err := yamlRoot(path, "signer config", data)
	if err != nil {
		return nil, err
	}
	d := newDecoder(path)
	d.dir, d.latencyText = filepath.Dir(path), true
	var raw rawServe
	if root != nil && !isNull(root) {
		if root.Kind != yaml.MappingNode {
			return nil, Errors{{Pos: d.at(root), Msg: "a signer config is a mapping of keys (node:, chain_id:, key_file:, ...), got " + describe(root)}}
		}
		d.pos[""] = nodePos{Key: d.at(root), Value: d.at(root)}
		d.decode(root, "", reflect.ValueOf(&raw).Elem())
	}
	plan := d.resolveServe(&raw)
	if len(d.errs) > 0 {
		return nil, d.errs.sorted()
	}
	return plan, nil
}

// ParseServeFault reads one fault written as YAML text (a --fault flag);
// name names the text in messages, and the fault's key is "fault".
func ParseServeFault(name, text string) (FaultPlan, error) {
	root, err := yamlRoot(name, "fault", []byte(text))
	if err != nil {
		return FaultPlan{}, err
	}
	d := newDecoder(name)
	d.latencyText = true
	const key = "fault"
	if root == nil {
		return FaultPlan{}, Errors{{Pos: Pos{File: name, Line: 1, Col: 1}, Key: key,
			Msg: "empty; write a fault like '{action: signer-drop, at: {height: 10}}'"}}
	}
	d.pos[key] = nodePos{Key: d.at(root), Value: d.at(root)}
	var rf rawServeFault
	d.decode(root, key, reflect.ValueOf(&rf).Elem())
	fp := d.resolveServeFault(key, rf)
	if len(d.errs) > 0 {
		return FaultPlan{}, d.errs.sorted()
	}
	return fp, nil
}

func (d *decoder) resolveServe(raw *rawServe) *ServePlan {
	p := &ServePlan{CPUScale: 1, Seed: defaultSeed}
	str := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	path := func(s *string) string {
		if s == nil || *s == "" || strings.HasPrefix(*s, "~/") {
			return str(s)
		}
		return d.filePath(*s)
	}
	p.Node, p.ChainID, p.NodeID = str(raw.Node), str(raw.ChainID), str(raw.NodeID)
	p.KeyFile, p.StateFile, p.IdentityKey = path(raw.KeyFile), path(raw.StateFile), path(raw.IdentityKey)
	p.PassphraseEnv, p.PassphraseFile = str(raw.PassphraseEnv), path(raw.PassphraseFile)
	if raw.Dialect != nil && *raw.Dialect != "auto" {
		if l, err := cmtversion.Lookup(*raw.Dialect); err != nil {
			d.fail(d.valuePos("dialect"), "dialect", fmt.Sprintf("unknown privval dialect %q: auto, or the CometBFT line whose layout to speak", *raw.Dialect), "auto", "v0.38", "v1")
		} else {
			p.Dialect = l.Dialect
		}
	}
	if b, err := hex.DecodeString(p.NodeID); raw.NodeID != nil && (err != nil || len(b) != 20) {
		d.fail(d.valuePos("node_id"), "node_id", fmt.Sprintf("%q is not a SecretConnection identity: write the node's address, 40 hex digits", p.NodeID))
	}
	if raw.Type != nil {
		p.Type = *raw.Type
		d.checkChoice("type", "signer type", p.Type, serveTypes, nil)
	}
	if raw.Profile != nil {
		p.Profile = *raw.Profile
		if !contains(builtinProfiles, p.Profile) {
			msg := fmt.Sprintf("unknown profile %q", p.Profile)
			if s := suggest(p.Profile, builtinProfiles); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			d.fail(d.valuePos("profile"), "profile", msg, builtinProfiles...)
		}
	}
	if raw.Decrypt != nil {
		p.Decrypt = *raw.Decrypt
		d.checkChoice("decrypt", "decrypt mode", p.Decrypt, decryptModes, nil)
	}
	p.Latency = d.resolveLatency("latency", raw.Latency)
	if raw.CPUScale != nil {
		p.CPUScale = *raw.CPUScale
		if p.CPUScale <= 0 {
			d.fail(d.valuePos("cpu_scale"), "cpu_scale", fmt.Sprintf("must be greater than 0, got %g: it multiplies the time software signing takes", p.CPUScale))
		}
	}
	if raw.Seed != nil {
		p.Seed = *raw.Seed
	}
	for i, rf := range raw.Faults {
		key := fmt.Sprintf("faults[%d]", i)
		if d.failed(key) {
			continue // not a mapping; already reported
		}
		p.Faults = append(p.Faults, d.resolveServeFault(key, rf))
	}
	return p
}

// resolveServeFault checks one fault of a standalone signer with the
// scenario's rules for its action (faultActions), and the few of its own:
// a height, always, and a round only at one height.
func (d *decoder) resolveServeFault(key string, rf rawServeFault) FaultPlan {
	fp := FaultPlan{Action: rf.Action, Pos: d.valuePos(key)}
	if rf.Duration != nil {
		fp.Duration = *rf.Duration
	}
	act, actOK := d.checkServeFaultAction(key+".action", rf.Action)
	atKey, heightKey, roundKey := key+".at", key+".at.height", key+".at.round"
	raw := rawFault{Action: rf.Action, Duration: rf.Duration, Latency: rf.Latency, Phases: rf.Phases}
	switch {
	case d.failed(atKey):
	case rf.At == nil:
		d.fail(d.valuePos(atKey), atKey, "required: the height at which the fault starts, e.g. at: {height: 10}")
	case rf.At.Height == nil:
		if !d.failedUnder(atKey) { // else at.time or a bad height says it already
			d.fail(d.valuePos(atKey), heightKey, "required: the height at which the fault starts (a standalone signer knows heights only, not times)")
		}
	default:
		raw.At = &rawFaultAt{Height: rf.At.Height, Round: rf.At.Round}
		fp.At = d.resolveFaultAt(atKey, raw.At, act, actOK, RunPlan{Heights: math.MaxInt64, MaxDuration: math.MaxInt64})
		if fp.At.HasRound && fp.Duration > 0 {
			d.fail(d.keyPos(roundKey), roundKey, fmt.Sprintf("round applies only to a fault at one height; remove it or the duration (%s covers every round while it lasts)", fp.Duration))
		}
	}
	latKey := key + ".latency"
	if !actOK {
		if rf.Latency != nil {
			d.resolveLatency(latKey, rf.Latency)
		}
		d.resolvePhases(key+".phases", rf.Phases, "cover")
		return fp
	}
	d.checkFaultDuration(key, raw, act)
	switch {
	case act.Latency && rf.Latency == nil && !d.failed(latKey):
		d.fail(d.valuePos(latKey), latKey, fmt.Sprintf("required for %s: %s", act.Name, act.LatencyDoc))
	case act.Latency:
		fp.Latency = d.resolveLatencyNoPhases(latKey, rf.Latency, fmt.Sprintf("phases go on the fault itself (%s.phases), not inside its latency", key))
	case d.written(latKey):
		d.fail(d.keyPos(latKey), latKey, fmt.Sprintf("only %s takes latency", action.SignerDelay))
	}
	fp.Phases = d.resolvePhases(key+".phases", rf.Phases, "cover")
	if fp.Latency != nil {
		fp.Latency.Phases = slices.Clone(fp.Phases)
	}
	return fp
}

// checkServeFaultAction looks up a standalone signer's fault action.
func (d *decoder) checkServeFaultAction(key, name string) (faultAction, bool) {
	if d.failed(key) {
		return faultAction{}, false
	}
	if !d.written(key) {
		d.fail(d.valuePos(key), key, "required: say what the fault does", serveFaultActions...)
		return faultAction{}, false
	}
	if why, ok := serveRefused[name]; ok {
		d.fail(d.valuePos(key), key, why, serveFaultActions...)
		return faultAction{}, false
	}
	for _, a := range faultActions {
		switch {
		case a.Name != name:
		case contains(serveFaultActions, name):
			return a, true
		default:
			d.fail(d.valuePos(key), key, fmt.Sprintf("%s does not apply to a standalone signer: it has no node or network to act on", name), serveFaultActions...)
			return faultAction{}, false
		}
	}
	msg := fmt.Sprintf("unknown fault action %q", name)
	if s := suggest(name, serveFaultActions); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	d.fail(d.valuePos(key), key, msg, serveFaultActions...)
	return faultAction{}, false
}
