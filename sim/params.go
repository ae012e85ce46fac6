package sim

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Params are the MODEL's figures that are not in a scenario: what a
// CometBFT node's consensus routine spends on each message, what a local
// signature costs, and the p2p settings valnet's nodes run with. Most are
// fitted by `valnet calibrate` from real runs on a host (a calibration
// file); the p2p settings are CometBFT v1.0's defaults, which valnet's
// nodes use.
type Params struct {
	Name   string `yaml:"name"`   // calibration name, recorded in run_start
	Source string `yaml:"source"` // how it was made (command, host, date)

	// Signing (the consensus routine waits for each signature).
	SignLocal time.Duration `yaml:"sign_local"` // one local signature through valnet's signer chain: guard fsync included
	RemoteHop time.Duration `yaml:"remote_hop"` // added per signature by the remote-signer protocol (via tcp or unix)
	// KeyfileDecrypt is one bcrypt key derivation at cost 10 (a key file
	// decrypted on every signature); other costs scale by 2^(cost-10).
	KeyfileDecrypt time.Duration `yaml:"keyfile_decrypt"`

	// The consensus routine's work per message (receiveRoutine handleMsg).
	VoteCost     time.Duration `yaml:"vote_cost"`     // verify and add one vote
	PartCost     time.Duration `yaml:"part_cost"`     // add one 64 KiB block part (hashing, the proof)
	ProposalCost time.Duration `yaml:"proposal_cost"` // verify a proposal
	ProposeCost  time.Duration `yaml:"propose_cost"`  // the proposer: build the block, flush the WAL
	CommitCost   time.Duration `yaml:"commit_cost"`   // finalizeCommit: execute, commit the app, save the stores

	// p2p (CometBFT v1.0 defaults: config.DefaultP2PConfig and
	// DefaultConsensusConfig).
	GossipSleep   time.Duration `yaml:"gossip_sleep"`   // peer_gossip_sleep_duration: an idle gossip routine sleeps this long
	FlushThrottle time.Duration `yaml:"flush_throttle"` // flush_throttle_timeout: a connection flushes at most this often
	SendRate      float64       `yaml:"send_rate"`      // send_rate, bytes per second per connection

	// Restarts and catch-up.
	RestartDelay time.Duration `yaml:"restart_delay"` // a started node until its consensus runs (process start, WAL replay, handshake)
	CatchUpCost  time.Duration `yaml:"catchup_cost"`  // a lagging node per block it fetches and applies

	TxRPC time.Duration `yaml:"tx_rpc"` // round trip of one broadcast_tx_sync to a node
}

//go:embed calibration/*.yaml
var calibrations embed.FS

// DefaultCalibration names the calibration shipped with valnet.
const DefaultCalibration = "default"

// LoadParams reads a calibration: a built-in name ("default") or a file.
func LoadParams(nameOrPath string) (Params, error) {
	if nameOrPath == "" {
		nameOrPath = DefaultCalibration
	}
	data, err := calibrations.ReadFile("calibration/" + nameOrPath + ".yaml")
	src := "builtin:" + nameOrPath
	if err != nil {
		if strings.ContainsAny(nameOrPath, "/.") {
			data, err = os.ReadFile(nameOrPath)
			src = nameOrPath
		}
		if err != nil {
			return Params{}, fmt.Errorf("calibration %q: not a built-in (%s) nor a readable file", nameOrPath, strings.Join(Calibrations(), ", "))
		}
	}
	return ParseParams(src, data)
}

// Calibrations lists the built-in calibrations.
func Calibrations() []string {
	entries, _ := calibrations.ReadDir("calibration")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	return names
}

// ParseParams decodes a calibration strictly: every key known, every
// figure given and valid.
func ParseParams(src string, data []byte) (Params, error) {
	var p Params
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		return Params{}, fmt.Errorf("%s: %w", src, err)
	}
	// Every figure must be given: a missing one would silently be 0.
	var keys map[string]any
	if err := yaml.Unmarshal(data, &keys); err != nil {
		return Params{}, fmt.Errorf("%s: %w", src, err)
	}
	var missing []string
	t := reflect.TypeOf(p)
	for i := range t.NumField() {
		if k := t.Field(i).Tag.Get("yaml"); k != "" {
			if _, ok := keys[k]; !ok {
				missing = append(missing, k)
			}
		}
	}
	if len(missing) > 0 {
		return Params{}, fmt.Errorf("%s: missing %s (every figure of a calibration must be given)", src, strings.Join(missing, ", "))
	}
	if err := p.Validate(); err != nil {
		return Params{}, fmt.Errorf("%s: %w", src, err)
	}
	return p, nil
}

// Validate checks every figure.
func (p Params) Validate() error {
	var errs []error
	for _, f := range []struct {
		key string
		v   time.Duration
	}{
		{"sign_local", p.SignLocal}, {"remote_hop", p.RemoteHop}, {"keyfile_decrypt", p.KeyfileDecrypt}, {"vote_cost", p.VoteCost},
		{"part_cost", p.PartCost}, {"proposal_cost", p.ProposalCost}, {"propose_cost", p.ProposeCost},
		{"commit_cost", p.CommitCost}, {"gossip_sleep", p.GossipSleep}, {"flush_throttle", p.FlushThrottle},
		{"restart_delay", p.RestartDelay}, {"catchup_cost", p.CatchUpCost}, {"tx_rpc", p.TxRPC},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("%s: must be >= 0, got %v", f.key, f.v))
		}
	}
	if p.GossipSleep <= 0 {
		errs = append(errs, errors.New("gossip_sleep: must be > 0 (CometBFT's peer_gossip_sleep_duration, 100ms by default)"))
	}
	if p.SendRate <= 0 {
		errs = append(errs, errors.New("send_rate: must be > 0 bytes per second (CometBFT's default is 5120000)"))
	}
	if p.Name == "" {
		errs = append(errs, errors.New("name: required"))
	}
	return errors.Join(errs...)
}

// Marshal writes p as a calibration file.
func (p Params) Marshal() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# valnet sim calibration: MODEL parameters (docs/sim.md)\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
