package nodes

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	cfg "github.com/cometbft/cometbft/config"
	"github.com/cometbft/cometbft/p2p"
	"github.com/cometbft/cometbft/types"
)

// NewConfig returns valnet's CometBFT configuration for a node whose home is
// home: CometBFT's defaults, with what a loopback test network needs (no
// peer exchange, loopback addresses allowed, several nodes per IP), node
// metrics off (CometBFT's Prometheus registry is global, so two in-process
// nodes cannot both register), and logs at info level into a file.
func NewConfig(home string) *cfg.Config {
	c := cfg.DefaultConfig()
	c.SetRoot(home)
	c.Moniker = filepath.Base(home)
	c.P2P.PexReactor = false
	c.P2P.AddrBookStrict = false
	c.P2P.AllowDuplicateIP = true
	c.P2P.HandshakeTimeout = 10 * time.Second
	c.P2P.DialTimeout = 2 * time.Second
	c.Instrumentation.Prometheus = false
	c.RPC.PprofListenAddress = ""
	c.TxIndex.Indexer = "null"
	return c
}

// LogFile is where a node's CometBFT log goes, inside its home.
func LogFile(c *cfg.Config) string { return filepath.Join(c.RootDir, "node.log") }

// WriteHome lays out a standard CometBFT home for spec (config/config.toml,
// config/genesis.json, config/node_key.json, data/), so that a user can
// inspect it or point a stock cometbft binary at it.
func WriteHome(spec Spec) (err error) {
	c := spec.Config
	for _, d := range []string{c.RootDir, filepath.Join(c.RootDir, "config"), c.DBDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("home of %s: %w", spec.Name, err)
		}
	}
	// CometBFT's writers panic on I/O errors; turn that into an error.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("home of %s: %v", spec.Name, r)
		}
	}()
	if f := spec.Flavor; !f.Own() && f.config != nil {
		if err := writeFlavoredHome(spec); err != nil {
			return fmt.Errorf("home of %s: %w", spec.Name, err)
		}
	} else {
		cfg.WriteConfigFile(filepath.Join(c.RootDir, "config", "config.toml"), c)
		if err := spec.Genesis.SaveAs(c.GenesisFile()); err != nil {
			return fmt.Errorf("home of %s: genesis: %w", spec.Name, err)
		}
	}
	if err := spec.NodeKey.SaveAs(c.NodeKeyFile()); err != nil {
		return fmt.Errorf("home of %s: node key: %w", spec.Name, err)
	}
	return nil
}

// writeFlavoredHome writes config.toml and genesis.json as spec's binary
// reads them (Flavor).
func writeFlavoredHome(spec Spec) error {
	f, c := spec.Flavor, spec.Config
	conf, _, err := f.projectConfig(c, spec.NodeConfig)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.RootDir, "config", "config.toml"), conf, 0o600); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "valnet-genesis-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "genesis.json")
	if err := spec.Genesis.SaveAs(tmp); err != nil {
		return fmt.Errorf("genesis: %w", err)
	}
	v1, err := os.ReadFile(tmp)
	if err != nil {
		return err
	}
	gen, err := f.projectGenesis(v1)
	if err != nil {
		return fmt.Errorf("genesis: %w", err)
	}
	return os.WriteFile(c.GenesisFile(), gen, 0o600)
}

// NodeID is the p2p ID of a node key.
func NodeID(k *p2p.NodeKey) string { return string(k.ID()) }

// Validators returns the genesis validator set in CometBFT's order, which
// is the order of CommitSigs in every LastCommit.
func Validators(gen *types.GenesisDoc) (*types.ValidatorSet, error) {
	vals := make([]*types.Validator, len(gen.Validators))
	for i, v := range gen.Validators {
		vals[i] = types.NewValidator(v.PubKey, v.Power)
	}
	set := types.NewValidatorSet(vals)
	if err := set.ValidateBasic(); err != nil {
		return nil, err
	}
	return set, nil
}
