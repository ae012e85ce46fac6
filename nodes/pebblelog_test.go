package nodes

import (
	"bytes"
	"log"
	"strings"
	"sync"
	"testing"

	cfg "github.com/cometbft/cometbft/config"
	cmtlog "github.com/cometbft/cometbft/libs/log"
)

// lineLog keeps what a CometBFT logger was told.
type lineLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineLog) add(level, msg string, kv []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, level+" "+msg)
}
func (l *lineLog) Debug(msg string, kv ...any)  { l.add("D", msg, kv) }
func (l *lineLog) Info(msg string, kv ...any)   { l.add("I", msg, kv) }
func (l *lineLog) Error(msg string, kv ...any)  { l.add("E", msg, kv) }
func (l *lineLog) With(kv ...any) cmtlog.Logger { return l }

// pebble's lines (here the WAL replayed when a database is opened again,
// as after a node-kill restart) reach the node's logger, and nothing
// reaches the standard library's log, which is valnet's stderr.
func TestPebbleLinesGoToTheNodeLog(t *testing.T) {
	var std bytes.Buffer
	prev := log.Writer()
	log.SetOutput(&std)
	defer log.SetOutput(prev)
	c := cfg.DefaultConfig()
	c.SetRoot(t.TempDir())
	c.DBBackend = "pebbledb"
	nodeLog := &lineLog{}
	open := dbProvider(nodeLog)
	for i := range 2 {
		db, err := open(&cfg.DBContext{ID: "blockstore", Config: c})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Set([]byte{byte(i)}, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	nodeLog.mu.Lock()
	got := strings.Join(nodeLog.lines, "\n")
	nodeLog.mu.Unlock()
	if !strings.Contains(got, "replayed") {
		t.Errorf("the node's log has no WAL replay line:\n%s", got)
	}
	if std.Len() > 0 {
		t.Errorf("pebble wrote to the standard log (valnet's stderr):\n%s", std.String())
	}
}
