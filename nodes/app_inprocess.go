package nodes

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	abcicli "github.com/cometbft/cometbft/abci/client"
	"github.com/cometbft/cometbft/proxy"

	"github.com/valnet/valnet/results"
)

// An in-process node's ABCI clients connect to its app process
// (proxy.NewRemoteClientCreator, mustConnect as `cometbft start`). When a
// connection dies with an error, CometBFT v1 logs "Did the application
// crash?" and sends SIGTERM to its own process (proxy's
// killTMOnClientError): in-process that would stop valnet and every other
// node. So the clients report no error to that watcher; valnet records a
// node_error instead and stops this node, which is what CometBFT does to
// itself in a process of its own.

// appGuard ties a lost connection to the incarnation whose clients lost
// it: the clients of an incarnation valnet is stopping (its app is
// stopped after it) lose nothing, and a newer incarnation is left alone.
type appGuard struct {
	once     sync.Once
	stopping atomic.Bool
	run      atomic.Pointer[inProcessRun]
}

// appClients is the client creator of one incarnation for the node's app.
func (n *inProcessNode) appClients(g *appGuard) proxy.ClientCreator {
	lost := func(err error) {
		if g.stopping.Load() {
			return
		}
		g.once.Do(func() {
			if n.spec.Sink != nil {
				n.spec.Sink.Emit(results.Event{Time: time.Now(), Kind: results.KindNodeError, Node: n.name,
					Error: "ABCI connection to the app terminated (" + err.Error() + "); CometBFT exits the node here, so valnet stopped it (see " + AppLogFile + ")"})
			}
			go n.endLost(g)
		})
	}
	return appClientCreator{ClientCreator: proxy.NewRemoteClientCreator(n.app.Addr(), n.app.spec.Transport, true), lost: lost}
}

// endLost stops the incarnation of g, if it is still the current one, and
// kills its app; node-start or node-restart starts both again.
func (n *inProcessNode) endLost(g *appGuard) {
	_ = n.life.Control(n.name, func() error {
		r := g.run.Load()
		if r == nil || n.life.cur != r {
			return nil
		}
		n.life.cur = nil
		err := r.stop()
		return errors.Join(err, n.app.kill())
	})
}

type appClientCreator struct {
	proxy.ClientCreator
	lost func(error)
}

func (c appClientCreator) wrap(cl abcicli.Client, err error) (abcicli.Client, error) {
	if err != nil {
		return nil, err
	}
	return quietClient{Client: cl, lost: c.lost}, nil
}

func (c appClientCreator) NewABCIConsensusClient() (abcicli.Client, error) {
	return c.wrap(c.ClientCreator.NewABCIConsensusClient())
}

func (c appClientCreator) NewABCIMempoolClient() (abcicli.Client, error) {
	return c.wrap(c.ClientCreator.NewABCIMempoolClient())
}

func (c appClientCreator) NewABCIQueryClient() (abcicli.Client, error) {
	return c.wrap(c.ClientCreator.NewABCIQueryClient())
}

func (c appClientCreator) NewABCISnapshotClient() (abcicli.Client, error) {
	return c.wrap(c.ClientCreator.NewABCISnapshotClient())
}

// quietClient hands a connection error to lost instead of to CometBFT's
// self-kill. Error is read by that watcher only, once the client quit.
type quietClient struct {
	abcicli.Client
	lost func(error)
}

func (q quietClient) Error() error {
	if err := q.Client.Error(); err != nil {
		q.lost(err)
	}
	return nil
}
