package nodes

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	cfg "github.com/cometbft/cometbft/config"
)

// Whatever CometBFT writes into config.toml, LoadConfig reads back: a
// config far from the defaults survives the round trip field for field.
func TestLoadConfigRoundTrip(t *testing.T) {
	home := t.TempDir()
	want := NewConfig(home)
	want.Moniker = "node ä-1"
	want.DBPath = `da<t>a's`
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

func TestParseTOML(t *testing.T) {
	doc := `
# comment
top = "a#b" # trailing
n = -1_000
hex = 0x1f
f = 2.5
b = true
lit = 'C:\path'
multi = """
one \
  two"""
arr = [
  "x", # comment
  "y",
]
nested = [[1, 2], []]
inline = { k = "v", n = 1 }
dotted.key = 3
[t.u]
'quoted key' = "\u00e9\n"
`
	got, err := parseTOML(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"top": "a#b", "n": int64(-1000), "hex": int64(31), "f": 2.5, "b": true, "lit": `C:\path`,
		"multi": "one two", "arr": []any{"x", "y"}, "nested": []any{[]any{int64(1), int64(2)}, []any{}},
		"inline": map[string]any{"k": "v", "n": int64(1)}, "dotted": map[string]any{"key": int64(3)},
		"t": map[string]any{"u": map[string]any{"quoted key": "é\n"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
	for _, bad := range []string{"a = ", "a = \"x", "a = 1\na = 2", "[[t]]", "a = 1979-05-27", "a = [1", "a = 1 b", "x"} {
		if _, err := parseTOML(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// What config.toml says reaches the node: a bad value is an error that
// names the key, and a wrong type too.
func TestLoadConfigErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"[consensus]\ntimeout_propose = \"soon\"\n", "consensus.timeout_propose"},
		{"[p2p]\npex = [1]\n", "p2p.pex"},
		{"[consensus]\ntimeout_commit = \"-1s\"\n", "timeout_commit"},
	} {
		home := t.TempDir()
		os.MkdirAll(filepath.Join(home, "config"), 0o700)
		os.WriteFile(filepath.Join(home, "config", "config.toml"), []byte(tc.text), 0o600)
		_, err := LoadConfig(home)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error about %s", tc.text, err, tc.want)
		}
	}
}
