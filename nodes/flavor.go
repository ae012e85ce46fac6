package nodes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	cfg "github.com/cometbft/cometbft/config"
	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/viper"

	"github.com/valnet/valnet/internal/cmtversion"
)

// A Flavor is the node software a home is written for: valnet's own node
// (CometBFT v1.0.1, linked in) or a user's binary of some CometBFT line.
// valnet builds every node's configuration as CometBFT v1.0.1's Config
// (the struct the in-process node runs); for a user binary, WriteHome
// writes instead the binary's own defaults (what its `init` writes) with
// valnet's settings on top: only the keys valnet changes from v1's
// defaults, and only where that version has them. A v0.38 node so keeps
// its own defaults (flush_throttle_timeout 100 ms, goleveldb), and the
// settings it does not know (v1's pebbledb, v1-only keys) never reach it.
type Flavor struct {
	Binary string          // "" : valnet's own node
	Line   cmtversion.Line // the release line it runs
	// Reported is what `<binary> version` printed (its line, not always
	// its exact release), or valnet's CometBFT release.
	Reported string
	// config and genesis are the binary's own defaults, as its init
	// wrote them (nil for valnet's node).
	config  map[string]any
	genesis map[string]any
}

// OwnFlavor is valnet's own node: CometBFT v1.0.1 in this binary.
func OwnFlavor() *Flavor {
	l := cmtversion.Default()
	return &Flavor{Line: l, Reported: strings.TrimPrefix(l.Tested, "v")}
}

// Own reports whether f is valnet's own node.
func (f *Flavor) Own() bool { return f == nil || f.Binary == "" }

// Label is how results name a stock binary's node: "cometbft 0.38.26
// (v0.38)"; "" for valnet's own.
func (f *Flavor) Label() string {
	if f.Own() {
		return ""
	}
	return fmt.Sprintf("cometbft %s (%s)", f.Reported, f.Line.Name)
}

func (f *Flavor) String() string {
	if f.Own() {
		return "valnet node (CometBFT " + f.Reported + ")"
	}
	return fmt.Sprintf("%s (cometbft %s, line %s)", f.Binary, f.Reported, f.Line.Name)
}

var (
	flavorMu    sync.Mutex
	flavorCache = map[string]flavorEntry{} // by binary path, while its mtime holds
)

type flavorEntry struct {
	mod time.Time
	f   *Flavor
	err error
}

// ReadFlavor asks a user's binary what it is: `<binary> version`, then
// `<binary> init` in a scratch home for its default config.toml and
// genesis.json. The answer is kept for as long as the file is unchanged,
// so a run's preflight and its layout ask once.
func ReadFlavor(ctx context.Context, binary string) (*Flavor, error) {
	st, err := os.Stat(binary)
	if err != nil {
		if p, lerr := exec.LookPath(binary); lerr == nil {
			st, err = os.Stat(p)
		}
		if err != nil {
			return nil, fmt.Errorf("node binary %s: %w", binary, err)
		}
	}
	flavorMu.Lock()
	e, ok := flavorCache[binary]
	flavorMu.Unlock()
	if ok && e.mod.Equal(st.ModTime()) {
		return e.f, e.err
	}
	f, err := readFlavor(ctx, binary)
	flavorMu.Lock()
	flavorCache[binary] = flavorEntry{mod: st.ModTime(), f: f, err: err}
	flavorMu.Unlock()
	return f, err
}

const flavorTimeout = 30 * time.Second

func readFlavor(ctx context.Context, binary string) (*Flavor, error) {
	ctx, cancel := context.WithTimeout(ctx, flavorTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "version").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("node binary %s: `%s version` failed (%v): %s", binary, filepath.Base(binary), err, firstLines(out))
	}
	line, reported, err := cmtversion.FromOutput(string(out))
	if err != nil {
		return nil, fmt.Errorf("node binary %s: %w", binary, err)
	}
	f := &Flavor{Binary: binary, Line: line, Reported: reported}
	if line.InProcess {
		// The same line valnet links: its defaults are valnet's.
		return f, nil
	}
	home, err := os.MkdirTemp("", "valnet-init-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)
	cmd := exec.CommandContext(ctx, binary, "init", "--home", home)
	cmd.Env = childEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("node binary %s: `%s init` failed (%v): %s", binary, filepath.Base(binary), err, firstLines(out))
	}
	if f.config, err = readTOMLTree(filepath.Join(home, "config", "config.toml")); err != nil {
		return nil, fmt.Errorf("node binary %s: its default config: %w", binary, err)
	}
	if f.genesis, err = readJSONTree(filepath.Join(home, "config", "genesis.json")); err != nil {
		return nil, fmt.Errorf("node binary %s: its default genesis: %w", binary, err)
	}
	return f, nil
}

func firstLines(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	if s == "" {
		return "(no output)"
	}
	return s
}

func readTOMLTree(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t := map[string]any{}
	return t, toml.Unmarshal(b, &t)
}

func readJSONTree(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t := map[string]any{}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return t, d.Decode(&t)
}

// ConfigKeys lists f's config.toml keys, dotted ("p2p.send_rate"), sorted.
func (f *Flavor) ConfigKeys() []string {
	t := f.config
	if f.Own() || t == nil {
		t = v1Defaults()
	}
	var out []string
	walkLeaves(t, "", func(k string, _ any) { out = append(out, k) })
	sort.Strings(out)
	return out
}

// v1Defaults is CometBFT v1.0.1's default config.toml as a tree.
var v1Defaults = sync.OnceValue(func() map[string]any {
	t, err := configTree(cfg.DefaultConfig())
	if err != nil {
		panic("nodes: CometBFT's default config does not read back: " + err.Error())
	}
	return t
})

// configTree is c as config.toml holds it.
func configTree(c *cfg.Config) (map[string]any, error) {
	dir, err := os.MkdirTemp("", "valnet-config-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "config.toml")
	if err := writeConfigFile(path, c); err != nil {
		return nil, err
	}
	return readTOMLTree(path)
}

// writeConfigFile is CometBFT's WriteConfigFile, which panics on I/O errors.
func writeConfigFile(path string, c *cfg.Config) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	cfg.WriteConfigFile(path, c)
	return nil
}

func walkLeaves(t map[string]any, prefix string, fn func(key string, v any)) {
	for _, k := range slices.Sorted(maps.Keys(t)) {
		full := k
		if prefix != "" {
			full = prefix + "." + k
		}
		if sub, ok := t[k].(map[string]any); ok {
			walkLeaves(sub, full, fn)
			continue
		}
		fn(full, t[k])
	}
}

// lookup finds a dotted key's parent table and leaf name in t.
func lookup(t map[string]any, key string) (map[string]any, string, bool) {
	parts := strings.Split(key, ".")
	for _, p := range parts[:len(parts)-1] {
		sub, ok := t[p].(map[string]any)
		if !ok {
			return nil, "", false
		}
		t = sub
	}
	leaf := parts[len(parts)-1]
	_, ok := t[leaf]
	return t, leaf, ok
}

// ConfigSetting is one node.config entry: a raw config.toml key (dotted)
// and its value as the scenario wrote it.
type ConfigSetting struct {
	Key   string
	Value any
}

// ApplyConfig sets node.config entries on valnet's own node's config, as
// config.toml would (viper's decoding: "1s" into a duration, weak
// conversions). Keys were checked against ConfigKeys before.
func ApplyConfig(c *cfg.Config, settings []ConfigSetting) error {
	if len(settings) == 0 {
		return nil
	}
	v := viper.New()
	for _, s := range settings {
		v.Set(s.Key, s.Value)
	}
	root := c.RootDir
	if err := v.Unmarshal(c); err != nil {
		return fmt.Errorf("node.config: %w", err)
	}
	c.SetRoot(root)
	if err := c.ValidateBasic(); err != nil {
		return fmt.Errorf("node.config: %w", err)
	}
	return nil
}

// projectConfig is config.toml for f: f's own defaults, with every key of
// valnet's config c that differs from v1's defaults (rooted alike) and
// that f's version has, then settings. dropped lists valnet's keys f does
// not have.
func (f *Flavor) projectConfig(c *cfg.Config, settings []ConfigSetting) ([]byte, []string, error) {
	mine, err := configTree(c)
	if err != nil {
		return nil, nil, err
	}
	def := cfg.DefaultConfig()
	def.SetRoot(c.RootDir)
	base, err := configTree(def)
	if err != nil {
		return nil, nil, err
	}
	out := deepCopy(f.config)
	var dropped []string
	walkLeaves(mine, "", func(k string, v any) {
		if bt, bl, ok := lookup(base, k); ok && reflect.DeepEqual(bt[bl], v) {
			return // v1's default: the version keeps its own
		}
		if ot, ol, ok := lookup(out, k); ok {
			ot[ol] = v
		} else {
			dropped = append(dropped, k)
		}
	})
	for _, s := range settings {
		ot, ol, ok := lookup(out, s.Key)
		if !ok {
			return nil, nil, fmt.Errorf("node.config.%s: %s has no such key", s.Key, f)
		}
		ot[ol] = s.Value
	}
	b, err := toml.Marshal(out)
	return b, dropped, err
}

// projectGenesis is genesis.json for f: f's own default genesis with the
// chain's values (valnet's v1 genesis, gen) where f has the same key, and
// vote extensions enabled where f's version reads it.
func (f *Flavor) projectGenesis(gen []byte) ([]byte, error) {
	mine := map[string]any{}
	d := json.NewDecoder(bytes.NewReader(gen))
	d.UseNumber()
	if err := d.Decode(&mine); err != nil {
		return nil, err
	}
	out := deepCopy(f.genesis)
	for _, k := range []string{"genesis_time", "chain_id", "initial_height", "validators", "app_hash", "app_state"} {
		if v, ok := mine[k]; ok {
			out[k] = v
		}
	}
	mp, _ := mine["consensus_params"].(map[string]any)
	op, _ := out["consensus_params"].(map[string]any)
	if mp != nil && op != nil {
		for _, k := range []string{"validator", "evidence", "version"} {
			if v, ok := mp[k]; ok {
				if _, has := op[k]; has {
					op[k] = v
				}
			}
		}
		var height any
		if feat, ok := mp["feature"].(map[string]any); ok {
			height = feat["vote_extensions_enable_height"]
		}
		if p := f.Line.VoteExtensionsParam; p != "" && height != nil {
			if sec, ok := op[p].(map[string]any); ok {
				sec["vote_extensions_enable_height"] = height
			}
		} else if height != nil && fmt.Sprint(height) != "0" {
			return nil, fmt.Errorf("%s has no vote extensions (chain.vote_extensions_enable_height %v)", f, height)
		}
	}
	return json.MarshalIndent(out, "", "  ")
}

func deepCopy(t map[string]any) map[string]any {
	out := make(map[string]any, len(t))
	for k, v := range t {
		if sub, ok := v.(map[string]any); ok {
			out[k] = deepCopy(sub)
		} else {
			out[k] = v
		}
	}
	return out
}
