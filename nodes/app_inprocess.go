package nodes

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	abcicli "github.com/cometbft/cometbft/abci/client"
	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/cometbft/cometbft/proxy"

	"github.com/valnet/valnet/results/eventlog"
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
				n.spec.Sink.Emit(eventlog.Event{Time: time.Now(), Kind: eventlog.KindNodeError, Node: n.name,
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
//
// Its calls also return once the client quit: CometBFT v1.0.1's socket
// client takes a request after it stopped on a lost connection and waits
// for its answer forever (socket_client.go: queueRequest does not look
// whether the client runs, and Flush waits on the request), which would
// hold the node's consensus routine in finalizeCommit, and so its Stop,
// for good. A call that returns errAppLost instead makes consensus fail
// as it does on any app error (receiveRoutine's "CONSENSUS FAILURE",
// which ends the routine), and the node stops. The abandoned call's
// goroutine stays blocked until valnet exits, where a real node's whole
// process would have ended.
type quietClient struct {
	abcicli.Client
	lost func(error)
}

var errAppLost = errors.New("the ABCI connection to the app is lost")

func (q quietClient) Error() error {
	if err := q.Client.Error(); err != nil {
		q.lost(err)
	}
	return nil
}

// unblocked is call, or errAppLost once the client quit.
func unblocked[T any](q quietClient, call func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	var zero T
	select {
	case <-q.Client.Quit():
		return zero, errAppLost // nothing more goes out, nor waits
	default:
	}
	done := make(chan result, 1)
	go func() {
		v, err := call()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-q.Client.Quit():
		select {
		case r := <-done: // it ended as the client quit
			return r.v, r.err
		default:
			return zero, errAppLost
		}
	}
}

func (q quietClient) Flush(ctx context.Context) error {
	_, err := unblocked(q, func() (struct{}, error) { return struct{}{}, q.Client.Flush(ctx) })
	return err
}

func (q quietClient) Echo(ctx context.Context, msg string) (*abci.EchoResponse, error) {
	return unblocked(q, func() (*abci.EchoResponse, error) { return q.Client.Echo(ctx, msg) })
}

func (q quietClient) Info(ctx context.Context, req *abci.InfoRequest) (*abci.InfoResponse, error) {
	return unblocked(q, func() (*abci.InfoResponse, error) { return q.Client.Info(ctx, req) })
}

func (q quietClient) Query(ctx context.Context, req *abci.QueryRequest) (*abci.QueryResponse, error) {
	return unblocked(q, func() (*abci.QueryResponse, error) { return q.Client.Query(ctx, req) })
}

func (q quietClient) CheckTx(ctx context.Context, req *abci.CheckTxRequest) (*abci.CheckTxResponse, error) {
	return unblocked(q, func() (*abci.CheckTxResponse, error) { return q.Client.CheckTx(ctx, req) })
}

func (q quietClient) InitChain(ctx context.Context, req *abci.InitChainRequest) (*abci.InitChainResponse, error) {
	return unblocked(q, func() (*abci.InitChainResponse, error) { return q.Client.InitChain(ctx, req) })
}

func (q quietClient) PrepareProposal(ctx context.Context, req *abci.PrepareProposalRequest) (*abci.PrepareProposalResponse, error) {
	return unblocked(q, func() (*abci.PrepareProposalResponse, error) { return q.Client.PrepareProposal(ctx, req) })
}

func (q quietClient) ProcessProposal(ctx context.Context, req *abci.ProcessProposalRequest) (*abci.ProcessProposalResponse, error) {
	return unblocked(q, func() (*abci.ProcessProposalResponse, error) { return q.Client.ProcessProposal(ctx, req) })
}

func (q quietClient) FinalizeBlock(ctx context.Context, req *abci.FinalizeBlockRequest) (*abci.FinalizeBlockResponse, error) {
	return unblocked(q, func() (*abci.FinalizeBlockResponse, error) { return q.Client.FinalizeBlock(ctx, req) })
}

func (q quietClient) ExtendVote(ctx context.Context, req *abci.ExtendVoteRequest) (*abci.ExtendVoteResponse, error) {
	return unblocked(q, func() (*abci.ExtendVoteResponse, error) { return q.Client.ExtendVote(ctx, req) })
}

func (q quietClient) VerifyVoteExtension(ctx context.Context, req *abci.VerifyVoteExtensionRequest) (*abci.VerifyVoteExtensionResponse, error) {
	return unblocked(q, func() (*abci.VerifyVoteExtensionResponse, error) { return q.Client.VerifyVoteExtension(ctx, req) })
}

func (q quietClient) Commit(ctx context.Context, req *abci.CommitRequest) (*abci.CommitResponse, error) {
	return unblocked(q, func() (*abci.CommitResponse, error) { return q.Client.Commit(ctx, req) })
}

func (q quietClient) ListSnapshots(ctx context.Context, req *abci.ListSnapshotsRequest) (*abci.ListSnapshotsResponse, error) {
	return unblocked(q, func() (*abci.ListSnapshotsResponse, error) { return q.Client.ListSnapshots(ctx, req) })
}

func (q quietClient) OfferSnapshot(ctx context.Context, req *abci.OfferSnapshotRequest) (*abci.OfferSnapshotResponse, error) {
	return unblocked(q, func() (*abci.OfferSnapshotResponse, error) { return q.Client.OfferSnapshot(ctx, req) })
}

func (q quietClient) LoadSnapshotChunk(ctx context.Context, req *abci.LoadSnapshotChunkRequest) (*abci.LoadSnapshotChunkResponse, error) {
	return unblocked(q, func() (*abci.LoadSnapshotChunkResponse, error) { return q.Client.LoadSnapshotChunk(ctx, req) })
}

func (q quietClient) ApplySnapshotChunk(ctx context.Context, req *abci.ApplySnapshotChunkRequest) (*abci.ApplySnapshotChunkResponse, error) {
	return unblocked(q, func() (*abci.ApplySnapshotChunkResponse, error) { return q.Client.ApplySnapshotChunk(ctx, req) })
}
