package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/signers"
)

func init() { commands = append(commands, newSignerCmd) }

func newSignerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "signer",
		Short: "Run valnet's signer backends as a standalone remote signer",
		// Runnable, so that a mistyped subcommand is an error, not help.
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newSignerServeCmd())
	return cmd
}

// serveOptions are the options of signer serve, from --config and flags.
type serveOptions struct {
	node, chainID, keyFile, stateFile, identityKey string
	typ, profile                                   string
	latency                                        *latency.Spec
	latencyPhases                                  []string
	cpuScale                                       float64
	passphraseEnv, passphraseFile, decrypt         string
	seed                                           int64
	faults                                         []signers.ServeFault
}

func newSignerServeCmd() *cobra.Command {
	var (
		flags       serveOptions
		configFile  string
		latencyText string
		faultTexts  []string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Sign for a CometBFT v1 node over its priv_validator_laddr (like tmkms), with chosen delays and faults",
		Long: `serve dials a CometBFT node's priv_validator_laddr and signs its votes and
proposals with one of valnet's signer backends, behind valnet's double-sign
guard, with optional injected latency and faults. It redials until the node is
up and again whenever the node goes away, prints one line per signature on
stdout, and on SIGINT/SIGTERM prints a latency summary per phase.

The guard's state file defaults to valnet_signer_state.json beside the key
file; the node's own data/priv_validator_state.json is not used. Two signers
on one state file are refused.

Exit codes: 0 stopped by a signal, 2 bad input or the signer could not start.`,
		Example: `  valnet signer serve --node tcp://127.0.0.1:26659 --chain-id my-chain \
      --key-file ~/.cometbft/config/priv_validator_key.json --latency lognormal:200ms:800ms
  valnet signer serve --config signer.yaml --fault '{action: signer-drop, at: {height: 20}}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := serveOptions{cpuScale: 1, seed: 1}
			if configFile != "" {
				c, err := loadServeConfig(configFile)
				if err != nil {
					return &exitError{exitBadInput, err}
				}
				opts = *c
			}
			if err := flags.overlay(cmd, &opts, latencyText, faultTexts); err != nil {
				return &exitError{exitBadInput, err}
			}
			cfg, err := opts.serveConfig()
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			cfg.Log = cmd.ErrOrStderr()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := signers.RunServe(ctx, cfg, cmd.OutOrStdout()); err != nil {
				return &exitError{exitBadInput, err}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "a YAML file with these options (flags override it)")
	f.StringVar(&flags.node, "node", "", "the node's priv_validator_laddr: tcp://host:port or unix:///path")
	f.StringVar(&flags.chainID, "chain-id", "", "the chain the node runs")
	f.StringVar(&flags.keyFile, "key-file", "", "priv_validator_key.json (type local, simulated) or the armored key file (type keyfile)")
	f.StringVar(&flags.stateFile, "state-file", "", "the double-sign guard's state (default <key-file dir>/"+signers.DefaultServeStateName+")")
	f.StringVar(&flags.identityKey, "identity-key", "", "the signer's SecretConnection key, node_key.json style, created if missing (default <state dir>/"+signers.DefaultServeIdentityName+")")
	f.StringVar(&flags.typ, "type", "", "signer backend: local, keyfile or simulated (default local)")
	f.StringVar(&flags.profile, "profile", "", "device profile of type simulated, e.g. yubihsm2 or ledger-nano-s-plus")
	f.StringVar(&latencyText, "latency", "", "injected delay before every signature: D, uniform:MIN:MAX, normal:MEAN:STDDEV or lognormal:P50:P99")
	f.StringSliceVar(&flags.latencyPhases, "latency-phases", nil, "phases --latency applies to (default all): proposal,prevote,precommit")
	f.Float64Var(&flags.cpuScale, "cpu-scale", 1, "multiply the cost of software signing (emulate a slower CPU)")
	f.StringVar(&flags.passphraseEnv, "passphrase-env", "", "type keyfile: environment variable holding the passphrase")
	f.StringVar(&flags.passphraseFile, "passphrase-file", "", "type keyfile: file holding the passphrase (mode 0600)")
	f.StringVar(&flags.decrypt, "decrypt", "", "type keyfile: every-sign (bcrypt per signature, default) or once")
	f.Int64Var(&flags.seed, "seed", 1, "seed of latency and device-model draws")
	f.StringArrayVar(&faultTexts, "fault", nil, "a fault as in a scenario, YAML: '{action: signer-delay, at: {height: 10}, duration: 20s, latency: 2s}' (repeatable; replaces the config's faults)")
	return cmd
}

// overlay puts the flags given on the command line over opts.
func (fl *serveOptions) overlay(cmd *cobra.Command, opts *serveOptions, latencyText string, faultTexts []string) error {
	changed := cmd.Flags().Changed
	for name, pair := range map[string][2]*string{
		"node": {&opts.node, &fl.node}, "chain-id": {&opts.chainID, &fl.chainID},
		"key-file": {&opts.keyFile, &fl.keyFile}, "state-file": {&opts.stateFile, &fl.stateFile},
		"identity-key": {&opts.identityKey, &fl.identityKey}, "type": {&opts.typ, &fl.typ},
		"profile": {&opts.profile, &fl.profile}, "passphrase-env": {&opts.passphraseEnv, &fl.passphraseEnv},
		"passphrase-file": {&opts.passphraseFile, &fl.passphraseFile}, "decrypt": {&opts.decrypt, &fl.decrypt},
	} {
		if changed(name) {
			*pair[0] = *pair[1]
		}
	}
	for _, p := range []*string{&opts.keyFile, &opts.stateFile, &opts.identityKey, &opts.passphraseFile} {
		*p = serveExpandHome(*p)
	}
	if changed("latency") {
		spec, err := latency.Parse(latencyText)
		if err != nil {
			return fmt.Errorf("--latency: %w", err)
		}
		opts.latency, opts.latencyPhases = &spec, nil
	}
	if changed("latency-phases") {
		if opts.latency == nil {
			return errors.New("--latency-phases needs a latency (--latency, or latency: in --config)")
		}
		opts.latencyPhases = fl.latencyPhases
	}
	if changed("cpu-scale") {
		if fl.cpuScale <= 0 {
			return fmt.Errorf("--cpu-scale must be greater than 0, got %g", fl.cpuScale)
		}
		opts.cpuScale = fl.cpuScale
	}
	if changed("seed") {
		opts.seed = fl.seed
	}
	if changed("fault") {
		opts.faults = nil
		var errs []string
		for i, text := range faultTexts {
			p := &serveConfigParser{file: fmt.Sprintf("--fault #%d", i+1)}
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(text), &doc); err != nil || len(doc.Content) == 0 {
				errs = append(errs, fmt.Sprintf("--fault #%d: not a YAML mapping like '{action: signer-drop, at: {height: 10}}': %q", i+1, text))
				continue
			}
			f := p.fault(doc.Content[0], "fault")
			errs = append(errs, p.errs...)
			opts.faults = append(opts.faults, f)
		}
		if len(errs) > 0 {
			return errors.New(strings.Join(errs, "\n"))
		}
	}
	return nil
}

// serveConfig checks what only the command line can say and reads the
// passphrase; signers.ServeConfig.Validate checks the rest.
func (o *serveOptions) serveConfig() (signers.ServeConfig, error) {
	var missing []string
	for _, m := range []struct{ val, flag, key, what string }{
		{o.node, "--node", "node", "the node's priv_validator_laddr, e.g. tcp://127.0.0.1:26659"},
		{o.chainID, "--chain-id", "chain_id", "the chain the node runs (genesis.json chain_id)"},
		{o.keyFile, "--key-file", "key_file", "the validator's priv_validator_key.json"},
	} {
		if m.val == "" {
			missing = append(missing, fmt.Sprintf("missing %s (or %s: in --config): %s", m.flag, m.key, m.what))
		}
	}
	if len(missing) > 0 {
		return signers.ServeConfig{}, errors.New(strings.Join(missing, "\n"))
	}
	cfg := signers.ServeConfig{Node: o.node, ChainID: o.chainID, Type: o.typ, KeyFile: o.keyFile,
		StateFile: o.stateFile, IdentityKey: o.identityKey, Profile: o.profile, Latency: o.latency,
		LatencyPhases: o.latencyPhases, CPUScale: o.cpuScale, Decrypt: o.decrypt, Seed: o.seed, Faults: o.faults}
	if cfg.Type == "" && o.profile != "" {
		return cfg, fmt.Errorf("--profile %s needs --type simulated", o.profile)
	}
	if o.passphraseEnv != "" || o.passphraseFile != "" {
		if o.typ != signers.TypeKeyfile {
			return cfg, fmt.Errorf("--passphrase-env and --passphrase-file apply only to --type keyfile (type is %s)", serveOrDefault(o.typ, signers.TypeLocal))
		}
	}
	if o.typ == signers.TypeKeyfile {
		pass, err := signers.ReadPassphrase(o.passphraseEnv, o.passphraseFile)
		if err != nil {
			return cfg, fmt.Errorf("type keyfile: %w", err)
		}
		cfg.Passphrase = pass
	}
	return cfg, nil
}

func serveOrDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// serveExpandHome expands a leading ~/, which a shell does not do in
// --flag=~/x and YAML never does.
func serveExpandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}

// The config file: the flags' options as YAML keys (chain_id for
// --chain-id), strict like a scenario: every unknown key, wrong type or bad
// value is reported with its line and column. Relative paths are relative
// to the file's directory.

var serveConfigKeys = []string{"node", "chain_id", "key_file", "state_file", "identity_key", "type", "profile",
	"latency", "cpu_scale", "passphrase_env", "passphrase_file", "decrypt", "seed", "faults"}

var serveFaultKeys = []string{"action", "at", "duration", "latency", "phases"}

// serveKeyHints explain keys a scenario has and a standalone signer has not.
var serveKeyHints = map[string]string{
	"target": "a standalone signer is the only target of its faults",
	"time":   "a standalone signer sees no clock of the chain, only the heights it is asked to sign; use at.height",
}

type serveConfigParser struct {
	file string
	errs []string
}

func (p *serveConfigParser) fail(n *yaml.Node, key, format string, args ...any) {
	p.errs = append(p.errs, fmt.Sprintf("%s:%d:%d: %s: %s", p.file, n.Line, n.Column, key, fmt.Sprintf(format, args...)))
}

func loadServeConfig(path string) (*serveOptions, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	o := &serveOptions{cpuScale: 1, seed: 1}
	if len(doc.Content) == 0 {
		return o, nil
	}
	p := &serveConfigParser{file: path}
	dir := filepath.Dir(path)
	filePath := func(s string) string {
		s = serveExpandHome(s)
		if s != "" && !filepath.IsAbs(s) {
			return filepath.Join(dir, s)
		}
		return s
	}
	p.mapping(doc.Content[0], "", serveConfigKeys, func(key string, kn, vn *yaml.Node) {
		switch key {
		case "node":
			o.node = p.str(vn, key)
		case "chain_id":
			o.chainID = p.str(vn, key)
		case "key_file":
			o.keyFile = filePath(p.str(vn, key))
		case "state_file":
			o.stateFile = filePath(p.str(vn, key))
		case "identity_key":
			o.identityKey = filePath(p.str(vn, key))
		case "passphrase_file":
			o.passphraseFile = filePath(p.str(vn, key))
		case "type":
			o.typ = p.str(vn, key)
		case "profile":
			o.profile = p.str(vn, key)
		case "passphrase_env":
			o.passphraseEnv = p.str(vn, key)
		case "decrypt":
			o.decrypt = p.str(vn, key)
		case "latency":
			o.latency, o.latencyPhases = p.latency(vn, key, true)
		case "cpu_scale":
			if v, ok := p.float(vn, key); ok {
				if v <= 0 {
					p.fail(vn, key, "must be greater than 0, got %g", v)
				}
				o.cpuScale = v
			}
		case "seed":
			o.seed, _ = p.integer(vn, key)
		case "faults":
			if vn.Kind != yaml.SequenceNode {
				p.fail(vn, key, "must be a list of faults")
				return
			}
			for i, fn := range vn.Content {
				o.faults = append(o.faults, p.fault(fn, fmt.Sprintf("faults[%d]", i)))
			}
		}
	})
	if len(p.errs) > 0 {
		return nil, errors.New(strings.Join(p.errs, "\n"))
	}
	return o, nil
}

// mapping walks a mapping node, reporting unknown and repeated keys.
func (p *serveConfigParser) mapping(n *yaml.Node, parent string, allowed []string, fn func(key string, kn, vn *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		name := parent
		if name == "" {
			name = "config"
		}
		p.fail(n, name, "must be a mapping of keys (allowed: %s)", strings.Join(allowed, ", "))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		key := kn.Value
		full := key
		if parent != "" {
			full = parent + "." + key
		}
		switch {
		case !slices.Contains(allowed, key) && serveKeyHints[key] != "" && parent != "":
			p.fail(kn, full, "unknown key: %s", serveKeyHints[key])
		case !slices.Contains(allowed, key):
			p.fail(kn, full, "unknown key (allowed: %s)", strings.Join(allowed, ", "))
		case seen[key]:
			p.fail(kn, full, "written twice")
		default:
			seen[key] = true
			fn(full, kn, vn)
		}
	}
}

func (p *serveConfigParser) scalar(n *yaml.Node, key, want string) bool {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.fail(n, key, "must be %s", want)
		return false
	}
	return true
}

func (p *serveConfigParser) str(n *yaml.Node, key string) string {
	if !p.scalar(n, key, "a string") {
		return ""
	}
	return n.Value
}

func (p *serveConfigParser) integer(n *yaml.Node, key string) (int64, bool) {
	if !p.scalar(n, key, "an integer") {
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		p.fail(n, key, "must be an integer, got %q", n.Value)
		return 0, false
	}
	return v, true
}

func (p *serveConfigParser) float(n *yaml.Node, key string) (float64, bool) {
	if !p.scalar(n, key, "a number") {
		return 0, false
	}
	v, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		p.fail(n, key, "must be a number, got %q", n.Value)
		return 0, false
	}
	return v, true
}

func (p *serveConfigParser) duration(n *yaml.Node, key string) (time.Duration, bool) {
	if !p.scalar(n, key, "a duration such as 200ms or 2s") {
		return 0, false
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil {
		p.fail(n, key, "must be a duration such as 200ms or 2s, got %q", n.Value)
		return 0, false
	}
	return d, true
}

func (p *serveConfigParser) strings(n *yaml.Node, key string) []string {
	if n.Kind != yaml.SequenceNode {
		p.fail(n, key, "must be a list, e.g. [prevote, precommit]")
		return nil
	}
	var out []string
	for i, c := range n.Content {
		out = append(out, p.str(c, fmt.Sprintf("%s[%d]", key, i)))
	}
	return out
}

// latency reads a delay: a string in --latency's syntax ("200ms",
// "lognormal:200ms:800ms") or a scenario-style mapping ({dist: lognormal,
// p50: 200ms, p99: 800ms}), with phases in the mapping if withPhases.
func (p *serveConfigParser) latency(n *yaml.Node, key string, withPhases bool) (*latency.Spec, []string) {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		spec, err := latency.Parse(n.Value)
		if err != nil {
			p.fail(n, key, "%v", err)
			return nil, nil
		}
		return &spec, nil
	}
	dist := ""
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "dist" {
				dist = n.Content[i+1].Value
			}
		}
	}
	own := latency.Params(dist)
	if n.Kind != yaml.MappingNode || own == nil {
		p.fail(n, key, "must be a delay like 200ms or lognormal:200ms:800ms, or a mapping with dist: fixed, uniform, normal or lognormal")
		return nil, nil
	}
	allowed := append([]string{"dist"}, own...)
	if withPhases {
		allowed = append(allowed, "phases")
	}
	spec := &latency.Spec{Dist: dist}
	params := map[string]*time.Duration{"value": &spec.Value, "min": &spec.Min, "max": &spec.Max,
		"mean": &spec.Mean, "stddev": &spec.Stddev, "p50": &spec.P50, "p99": &spec.P99}
	var phases []string
	got := map[string]bool{}
	p.mapping(n, key, allowed, func(k string, _, vn *yaml.Node) {
		name := k[strings.LastIndex(k, ".")+1:]
		got[name] = true
		switch name {
		case "dist":
		case "phases":
			phases = p.strings(vn, k)
		default:
			*params[name], _ = p.duration(vn, k)
		}
	})
	for _, k := range own {
		if !got[k] {
			p.fail(n, key, "dist %s needs %s", dist, strings.Join(own, " and "))
			return nil, nil
		}
	}
	if err := spec.Validate(); err != nil {
		p.fail(n, key, "%v", err)
	}
	return spec, phases
}

// fault reads one fault in a scenario's shape, without target (the signer
// is the target) and with at.height only (it sees no clock of the chain).
func (p *serveConfigParser) fault(n *yaml.Node, key string) signers.ServeFault {
	var f signers.ServeFault
	before := len(p.errs)
	p.mapping(n, key, serveFaultKeys, func(k string, _, vn *yaml.Node) {
		switch k[strings.LastIndex(k, ".")+1:] {
		case "action":
			f.Action = p.str(vn, k)
			if !slices.Contains(signers.ServeFaultActions, f.Action) {
				p.fail(vn, k, "%v", signers.ServeFault{Action: f.Action}.Validate())
			}
		case "duration":
			f.Duration, _ = p.duration(vn, k)
		case "latency":
			f.Latency, _ = p.latency(vn, k, false)
		case "phases":
			f.Phases = p.strings(vn, k)
		case "at":
			p.mapping(vn, k, []string{"height", "round"}, func(ak string, _, an *yaml.Node) {
				v, ok := p.integer(an, ak)
				switch {
				case !ok:
				case strings.HasSuffix(ak, ".height") && v < 1:
					p.fail(an, ak, "must be at least 1, got %d", v)
				case strings.HasSuffix(ak, ".height"):
					f.Height = v
				case v < 0 || v > math.MaxInt32:
					p.fail(an, ak, "must be between 0 and %d, got %d", math.MaxInt32, v)
				default:
					f.Round, f.HasRound = int32(v), true
				}
			})
		}
	})
	if len(p.errs) == before {
		if err := f.Validate(); err != nil {
			p.fail(n, key, "%v", err)
		}
	}
	return f
}
