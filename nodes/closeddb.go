package nodes

import (
	"sync"

	dbm "github.com/cometbft/cometbft-db"
	cfg "github.com/cometbft/cometbft/config"
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

// guardedDBProvider opens databases as CometBFT's default provider does,
// wrapped in guardedDB.
func guardedDBProvider(ctx *cfg.DBContext) (dbm.DB, error) {
	db, err := cfg.DefaultDBProvider(ctx)
	if err != nil {
		return nil, err
	}
	return &guardedDB{db: db}, nil
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
