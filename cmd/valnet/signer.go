package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/scenarios"
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
	cmd.AddCommand(newSignerServeCmd(), newSignerKeygenCmd())
	return cmd
}

// serveOptions are the options of signer serve, from --config and flags.
type serveOptions struct {
	node, chainID, keyFile, stateFile, identityKey string
	nodeID, dialect                                string
	typ, profile                                   string
	latency                                        *latency.Spec
	latencyPhases                                  []string
	cpuScale                                       float64
	passphraseEnv, passphraseFile, decrypt         string
	seed                                           int64
	faults                                         []scenarios.FaultPlan
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
				plan, err := scenarios.LoadServe(configFile)
				if _, located := scenarios.AsErrors(err); err != nil && !located {
					err = fmt.Errorf("--config: %w", err) // the file could not be read
				}
				if err != nil {
					return &exitError{exitBadInput, err}
				}
				opts = serveOptionsOf(plan)
			}
			if err := flags.overlay(cmd, &opts, latencyText, faultTexts); err != nil {
				return &exitError{exitBadInput, err}
			}
			cfg, err := opts.serveConfig()
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			return serve(cmd, cfg, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "a YAML file with these options (flags override it)")
	f.StringVar(&flags.node, "node", "", "the node's priv_validator_laddr: tcp://host:port or unix:///path")
	f.StringVar(&flags.chainID, "chain-id", "", "the chain the node runs")
	f.StringVar(&flags.keyFile, "key-file", "", "priv_validator_key.json (type local, simulated) or the armored key file (type keyfile)")
	f.StringVar(&flags.stateFile, "state-file", "", "the double-sign guard's state (default <key-file dir>/"+signers.DefaultServeStateName+")")
	f.StringVar(&flags.identityKey, "identity-key", "", "the signer's SecretConnection key, node_key.json style, created if missing (default <state dir>/"+signers.DefaultServeIdentityName+")")
	f.StringVar(&flags.nodeID, "node-id", "", "tcp: sign only for the node with this SecretConnection identity (its address in hex); default any node")
	f.StringVar(&flags.dialect, "dialect", "", "privval layout the node reads: v0.38 (CometBFT v0.37-v0.40), v1, or auto (default: both layouts at once, which every version reads)")
	f.StringVar(&flags.typ, "type", "", "signer backend: local, keyfile or simulated (default local)")
	f.StringVar(&flags.profile, "profile", "", "device profile of type simulated, e.g. yubihsm2 or ledger-nano-s-plus")
	f.StringVar(&latencyText, "latency", "", "injected delay before every signature: "+latency.Syntax)
	f.StringSliceVar(&flags.latencyPhases, "latency-phases", nil, "phases --latency applies to (default all): proposal,prevote,precommit")
	f.Float64Var(&flags.cpuScale, "cpu-scale", 1, "multiply the cost of software signing (emulate a slower CPU)")
	f.StringVar(&flags.passphraseEnv, "passphrase-env", "", "type keyfile: environment variable holding the passphrase")
	f.StringVar(&flags.passphraseFile, "passphrase-file", "", "type keyfile: file holding the passphrase (mode 0600)")
	f.StringVar(&flags.decrypt, "decrypt", "", "type keyfile: every-sign (bcrypt per signature, default) or once")
	f.Int64Var(&flags.seed, "seed", 1, "seed of latency and device-model draws")
	f.StringArrayVar(&faultTexts, "fault", nil, "a fault as in a scenario, YAML: '{action: signer-delay, at: {height: 10}, duration: 20s, latency: 2s}' (repeatable; replaces the config's faults)")
	return cmd
}

// serve runs the signer until SIGINT or SIGTERM, printing each signature
// and, at the end, the summary.
func serve(cmd *cobra.Command, cfg signers.ServeConfig, opts serveOptions) error {
	printer := newSignPrinter(cmd.OutOrStdout())
	cfg.Obs, cfg.Log = printer, cmd.ErrOrStderr()
	if len(opts.faults) > 0 {
		cfg.Timeline = newServeFaults(opts.faults, opts.seed)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	started := time.Now()
	err := signers.RunServe(ctx, cfg)
	printer.close(time.Since(started))
	if err != nil {
		return &exitError{exitBadInput, err}
	}
	return nil
}

// serveOptionsOf takes the options of a config file.
func serveOptionsOf(p *scenarios.ServePlan) serveOptions {
	o := serveOptions{node: p.Node, chainID: p.ChainID, keyFile: p.KeyFile, stateFile: p.StateFile,
		identityKey: p.IdentityKey, nodeID: p.NodeID, dialect: p.Dialect, typ: p.Type, profile: p.Profile, cpuScale: p.CPUScale,
		passphraseEnv: p.PassphraseEnv, passphraseFile: p.PassphraseFile, decrypt: p.Decrypt,
		seed: p.Seed, faults: p.Faults}
	if p.Latency != nil {
		spec := p.Latency.Spec
		o.latency, o.latencyPhases = &spec, p.Latency.Phases
	}
	return o
}

// overlay puts the flags given on the command line over opts.
func (fl *serveOptions) overlay(cmd *cobra.Command, opts *serveOptions, latencyText string, faultTexts []string) error {
	changed := cmd.Flags().Changed
	for name, pair := range map[string][2]*string{
		"node": {&opts.node, &fl.node}, "chain-id": {&opts.chainID, &fl.chainID},
		"key-file": {&opts.keyFile, &fl.keyFile}, "state-file": {&opts.stateFile, &fl.stateFile},
		"identity-key": {&opts.identityKey, &fl.identityKey}, "node-id": {&opts.nodeID, &fl.nodeID}, "dialect": {&opts.dialect, &fl.dialect}, "type": {&opts.typ, &fl.typ},
		"profile": {&opts.profile, &fl.profile}, "passphrase-env": {&opts.passphraseEnv, &fl.passphraseEnv},
		"passphrase-file": {&opts.passphraseFile, &fl.passphraseFile}, "decrypt": {&opts.decrypt, &fl.decrypt},
	} {
		if changed(name) {
			*pair[0] = *pair[1]
		}
	}
	for _, p := range []*string{&opts.keyFile, &opts.stateFile, &opts.identityKey, &opts.passphraseFile} {
		*p = expandHome(*p)
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
		var errs []error
		for i, text := range faultTexts {
			f, err := scenarios.ParseServeFault(fmt.Sprintf("--fault #%d", i+1), text)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			opts.faults = append(opts.faults, f)
		}
		if err := errors.Join(errs...); err != nil {
			return err
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
		StateFile: o.stateFile, IdentityKey: o.identityKey, NodeID: o.nodeID, Dialect: signers.Dialect(o.dialect), Profile: o.profile, Latency: o.latency,
		LatencyPhases: o.latencyPhases, CPUScale: o.cpuScale, Decrypt: o.decrypt, Seed: o.seed}
	if cfg.Type == "" && o.profile != "" {
		return cfg, fmt.Errorf("--profile %s needs --type simulated", o.profile)
	}
	if o.passphraseEnv != "" || o.passphraseFile != "" {
		if o.typ != signers.TypeKeyfile {
			return cfg, fmt.Errorf("--passphrase-env and --passphrase-file apply only to --type keyfile (type is %s)", orDefault(o.typ, signers.TypeLocal))
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

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// expandHome expands a leading ~/, which a shell does not do in
// --flag=~/x and YAML never does.
func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}
