package nodes

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	cfg "github.com/cometbft/cometbft/config"
)

// Whatever CometBFT writes into config.toml, LoadConfig reads back: a
// config far from the defaults survives the round trip field for field.
// (Not an apostrophe: CometBFT's template writes it as \', which is not
// TOML, and `cometbft start` refuses the file too; see TestLoadConfigBad.)
func TestLoadConfigRoundTrip(t *testing.T) {
	home := t.TempDir()
	want := NewConfig(home)
	want.Moniker = "node ä-1"
	want.DBPath = `da<t>a`
	want.LogLevel = "consensus:debug,*:info"
	want.PrivValidatorListenAddr = "tcp://127.0.0.1:26659"
	want.FilterPeers = true
	want.RPC.ListenAddress = "tcp://127.0.0.1:36657"
	want.RPC.CORSAllowedOrigins = []string{"*", "http://x"}
	want.RPC.MaxBodyBytes = 12345678
	want.RPC.TimeoutBroadcastTxCommit = 7 * time.Second
	want.P2P.ListenAddress = "tcp://127.0.0.1:36656"
	want.P2P.PersistentPeers = "a@127.0.0.1:1,b@127.0.0.1:2"
	want.P2P.SendRate = 1 << 22
	want.Mempool.Size = 77
	want.StateSync.RPCServers = []string{"http://a:1", "http://b:2"}
	want.StateSync.ChunkFetchers = 9
	want.Consensus.TimeoutPropose = 321 * time.Millisecond
	want.Consensus.TimeoutCommit = 1500 * time.Microsecond
	want.Consensus.CreateEmptyBlocks = false
	want.Storage.Pruning.DataCompanion.InitialBlockRetainHeight = 42
	want.GRPC.Privileged.PruningService.Enabled = true
	want.TxIndex.Indexer = "kv"

	if err := os.MkdirAll(filepath.Join(home, "config"), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg.WriteConfigFile(filepath.Join(home, "config", "config.toml"), want)
	got, unknown, err := loadConfig(home)
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) > 0 {
		t.Errorf("keys CometBFT writes but LoadConfig does not know: %v", unknown)
	}
	compareConfig(t, reflect.ValueOf(want).Elem(), reflect.ValueOf(got).Elem(), "config")
}

func compareConfig(t *testing.T, want, got reflect.Value, path string) {
	t.Helper()
	switch want.Kind() {
	case reflect.Pointer:
		compareConfig(t, want.Elem(), got.Elem(), path)
	case reflect.Struct:
		for i := range want.NumField() {
			if want.Type().Field(i).IsExported() {
				compareConfig(t, want.Field(i), got.Field(i), path+"."+want.Type().Field(i).Name)
			}
		}
	default:
		if want.Kind() == reflect.Slice && want.Len() == 0 && got.Len() == 0 {
			return // nil and empty are one to CometBFT
		}
		if !reflect.DeepEqual(want.Interface(), got.Interface()) {
			t.Errorf("%s: got %#v, want %#v", path, got.Interface(), want.Interface())
		}
	}
}

// writeHomeConfig writes text as home/config/config.toml.
func writeHomeConfig(t *testing.T, home, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(home, "config"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config", "config.toml"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A home's config.toml reaches the node as CometBFT reads it: defaults for
// what it leaves out, keys in any case, durations and lists from strings,
// and the keys CometBFT does not know reported, not refused.
func TestLoadConfigGood(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		check      func(c *cfg.Config) bool
		unknown    []string
	}{
		{"empty: defaults", "", func(c *cfg.Config) bool {
			return c.Consensus.TimeoutPropose == cfg.DefaultConfig().Consensus.TimeoutPropose
		}, nil},
		{"duration", "[consensus]\ntimeout_propose = \"250ms\"\n", func(c *cfg.Config) bool {
			return c.Consensus.TimeoutPropose == 250*time.Millisecond
		}, nil},
		{"keys in any case", "MONIKER = \"m\"\n[P2P]\nPex = false\n", func(c *cfg.Config) bool {
			return c.Moniker == "m" && !c.P2P.PexReactor
		}, nil},
		{"a list from a string", "[statesync]\nrpc_servers = \"http://a:1,http://b:2\"\n", func(c *cfg.Config) bool {
			return slices.Equal(c.StateSync.RPCServers, []string{"http://a:1", "http://b:2"})
		}, nil},
		{"a number from a string", "[mempool]\nsize = \"42\"\n", func(c *cfg.Config) bool {
			return c.Mempool.Size == 42
		}, nil},
		{"paths rooted at the home", "genesis_file = \"config/g.json\"\n", func(c *cfg.Config) bool {
			return filepath.IsAbs(c.GenesisFile()) && strings.HasSuffix(c.GenesisFile(), filepath.Join("config", "g.json"))
		}, nil},
		{"unknown keys reported", "no_such = 1\n[p2p]\nbogus = \"x\"\n[nowhere]\nk = 1\n", func(c *cfg.Config) bool {
			return true
		}, []string{"no_such", "nowhere", "p2p.bogus"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			writeHomeConfig(t, home, tc.text)
			c, unknown, err := loadConfig(home)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Errorf("config read from %q is not what it says", tc.text)
			}
			if !slices.Equal(unknown, tc.unknown) {
				t.Errorf("unknown keys %q, want %q", unknown, tc.unknown)
			}
		})
	}
}

// A config.toml that cannot be read is an error that names the file, and
// the key where one is to blame.
func TestLoadConfigBad(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string // all in the error
	}{
		{"not TOML", "moniker = \"m\"\n[consensus\ntimeout_propose = 1\n", []string{"config.toml", "line 2"}},
		{"a value without a key", "= 3\n", []string{"config.toml"}},
		{"duplicate key", "moniker = \"a\"\nmoniker = \"b\"\n", []string{"config.toml"}},
		{"an apostrophe as CometBFT's template writes it", `moniker = "it\'s"` + "\n", []string{"config.toml"}},
		{"bad duration", "[consensus]\ntimeout_propose = \"soon\"\n", []string{"config.toml", "consensus.timeout_propose"}},
		{"wrong type", "[p2p]\npex = [1, 2]\n", []string{"config.toml", "p2p.pex"}},
		{"invalid value", "[consensus]\ntimeout_commit = \"-1s\"\n", []string{"config.toml", "timeout_commit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			writeHomeConfig(t, home, tc.text)
			_, err := LoadConfig(home)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("got %v, want an error naming %q", err, w)
				}
			}
		})
	}
	// No config file at all: the error says where it was looked for.
	home := t.TempDir()
	if _, err := LoadConfig(home); err == nil || !strings.Contains(err.Error(), filepath.Join(home, "config", "config.toml")) {
		t.Errorf("a home without config.toml: %v", err)
	}
}
