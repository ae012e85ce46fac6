package nodes

import (
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble"
	dbm "github.com/cometbft/cometbft-db"
	cfg "github.com/cometbft/cometbft/config"
	cmtlog "github.com/cometbft/cometbft/libs/log"
)

// guardedDB keeps a node's database safe to touch after the node closed it.
//
// CometBFT v1.0 stops a node by closing its stores while per-peer consensus
// goroutines (queryMaj23Routine) may still read the block store; a read of a
// closed pebble or goleveldb database panics, and in-process that panic
// would take every node and the runner down with it. After Close, reads find
// nothing and writes are dropped: nothing legitimate writes once the node
// has stopped, and the goroutines that read only ask to gossip.
type guardedDB struct {
	mu     sync.RWMutex
	db     dbm.DB
	closed bool
}

var _ dbm.DB = (*guardedDB)(nil)

// dbProvider opens databases as CometBFT's default provider does, wrapped
// in guardedDB. pebble's own log lines (the WAL replayed after a restart,
// compactions) go to logger, the node's log: by default pebble prints them
// with the standard library's log, which in-process is valnet's own stderr,
// in the middle of its progress lines.
func dbProvider(logger cmtlog.Logger) cfg.DBProvider {
	return func(ctx *cfg.DBContext) (dbm.DB, error) {
		var (
			db  dbm.DB
			err error
		)
		if dbm.BackendType(ctx.Config.DBBackend) == dbm.PebbleDBBackend {
			opts := &pebble.Options{Logger: pebbleLogger{logger.With("module", "pebble", "db", ctx.ID)}}
			db, err = dbm.NewPebbleDBWithOpts(ctx.ID, ctx.Config.DBDir(), opts)
		} else {
			db, err = cfg.DefaultDBProvider(ctx)
		}
		if err != nil {
			return nil, err
		}
		return &guardedDB{db: db}, nil
	}
}

// pebbleLogger is pebble's Logger on a CometBFT logger.
type pebbleLogger struct{ l cmtlog.Logger }

var _ pebble.Logger = pebbleLogger{}

func (p pebbleLogger) Infof(format string, args ...any) { p.l.Info(fmt.Sprintf(format, args...)) }

// Fatalf: pebble stops here (its default logger exits the process); the
// message is in the node's log first.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg)
	panic("pebble: " + msg)
}

func (g *guardedDB) read(f func(dbm.DB) error) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return nil
	}
	return f(g.db)
}

func (g *guardedDB) Get(key []byte) (v []byte, err error) {
	err = g.read(func(db dbm.DB) (e error) { v, e = db.Get(key); return })
	return v, err
}

func (g *guardedDB) Has(key []byte) (ok bool, err error) {
	err = g.read(func(db dbm.DB) (e error) { ok, e = db.Has(key); return })
	return ok, err
}

func (g *guardedDB) Set(k, v []byte) error {
	return g.read(func(db dbm.DB) error { return db.Set(k, v) })
}
func (g *guardedDB) SetSync(k, v []byte) error {
	return g.read(func(db dbm.DB) error { return db.SetSync(k, v) })
}
func (g *guardedDB) Delete(k []byte) error {
	return g.read(func(db dbm.DB) error { return db.Delete(k) })
}
func (g *guardedDB) DeleteSync(k []byte) error {
	return g.read(func(db dbm.DB) error { return db.DeleteSync(k) })
}

func (g *guardedDB) Iterator(start, end []byte) (it dbm.Iterator, err error) {
	it, err = emptyIterator(start, end)
	err2 := g.read(func(db dbm.DB) (e error) { it, e = db.Iterator(start, end); return })
	if err2 != nil {
		return nil, err2
	}
	return it, err
}

func (g *guardedDB) ReverseIterator(start, end []byte) (it dbm.Iterator, err error) {
	it, err = emptyIterator(start, end)
	err2 := g.read(func(db dbm.DB) (e error) { it, e = db.ReverseIterator(start, end); return })
	if err2 != nil {
		return nil, err2
	}
	return it, err
}

// emptyIterator is what a closed database iterates over.
func emptyIterator(start, end []byte) (dbm.Iterator, error) {
	return dbm.NewMemDB().Iterator(start, end)
}

func (g *guardedDB) NewBatch() dbm.Batch {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return dbm.NewMemDB().NewBatch()
	}
	return g.db.NewBatch()
}

func (g *guardedDB) Print() error { return g.read(func(db dbm.DB) error { return db.Print() }) }

func (g *guardedDB) Stats() (s map[string]string) {
	_ = g.read(func(db dbm.DB) error { s = db.Stats(); return nil })
	return s
}

func (g *guardedDB) Compact(start, end []byte) error {
	return g.read(func(db dbm.DB) error { return db.Compact(start, end) })
}

// Close waits for reads in progress, then closes the database once.
func (g *guardedDB) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	return g.db.Close()
}
