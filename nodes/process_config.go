package nodes

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	cfg "github.com/cometbft/cometbft/config"
	"github.com/go-viper/mapstructure/v2"
	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/viper"
)

// LoadConfig reads a node's home as `cometbft start --home` does: CometBFT's
// defaults, overlaid with what config.toml says, paths rooted at home,
// validated. The file is read by viper and decoded by viper.Unmarshal,
// as CometBFT's ParseConfig does (same search path, same decoding: keys
// matched case-insensitively, "1s" into a duration, "a,b" into a list,
// weak conversions, unknown keys ignored).
//
// Unlike `cometbft start`, a home without a config file is an error (every
// home valnet runs was written with one), and neither CMT_* environment
// variables nor flags override the file: a runner's environment would
// otherwise change some nodes (the process and docker backends) and not
// others (in-process).
func LoadConfig(home string) (*cfg.Config, error) {
	c, _, err := loadConfig(home)
	return c, err
}

// loadConfig is LoadConfig that also returns the keys the file holds and
// CometBFT does not know (viper ignores them silently; `valnet node` logs
// them, lower-cased as viper reads keys).
func loadConfig(home string) (*cfg.Config, []string, error) {
	v := viper.New()
	// cli.PrepareBaseCmd's search: config.* in the home, then in home/config.
	v.SetConfigName("config")
	v.AddConfigPath(home)
	v.AddConfigPath(filepath.Join(home, "config"))
	if err := v.ReadInConfig(); err != nil {
		path := v.ConfigFileUsed()
		if path == "" {
			path = filepath.Join(home, "config", "config.toml")
		}
		var syntax *toml.DecodeError
		if errors.As(err, &syntax) {
			row, col := syntax.Position()
			return nil, nil, fmt.Errorf("%s: line %d, column %d: %w", path, row, col, err)
		}
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	path := v.ConfigFileUsed()
	c := cfg.DefaultConfig()
	var md mapstructure.Metadata
	if err := v.Unmarshal(c, func(dc *mapstructure.DecoderConfig) { dc.Metadata = &md }); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	c.SetRoot(home)
	if err := c.ValidateBasic(); err != nil {
		return nil, nil, fmt.Errorf("error in config file %s: %w", path, err)
	}
	unknown := slices.Clone(md.Unused)
	slices.Sort(unknown)
	return c, unknown, nil
}
