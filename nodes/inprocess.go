package nodes

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/valnet/valnet/internal/phase"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	dbm "github.com/cometbft/cometbft-db"
	"github.com/cometbft/cometbft/abci/example/kvstore"
	cfg "github.com/cometbft/cometbft/config"
	cmtlog "github.com/cometbft/cometbft/libs/log"
	cmtpubsub "github.com/cometbft/cometbft/libs/pubsub"
	cmtquery "github.com/cometbft/cometbft/libs/pubsub/query"
	"github.com/cometbft/cometbft/node"
	"github.com/cometbft/cometbft/proxy"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/results/eventlog"
)

// InProcess runs every validator as a real CometBFT node inside this
// process, each with its own home, databases, p2p and RPC listeners, and
// an in-memory kvstore application.
type InProcess struct{}

var _ Backend = InProcess{}

func (InProcess) Name() string { return "inprocess" }

// eventBuffer is the capacity of a node's event subscription. CometBFT
// cancels a subscription whose buffer is full rather than block consensus,
// so it holds many heights' worth of events (a height at 100 validators is
// a few hundred); the pump drains it into the Sink at once. CometBFT
// allocates it up front, per node: 4096 messages are ~160 KB.
const eventBuffer = 4096

type inProcessNode struct {
	name    string
	spec    Spec
	valSet  *types.ValidatorSet
	addrs   Addrs
	logFile *os.File
	logger  cmtlog.Logger

	// The running incarnation (nil once killed or stopped) and what
	// serialises Stop and the Controller methods; last is the newest
	// incarnation (for Height).
	life incarnations[inProcessRun]
	last atomic.Pointer[node.Node]
	// app is the node's own application process (Spec.App), nil for the
	// built-in kvstore; started before each incarnation, ended after it.
	app *app
}

// inProcessRun is one incarnation of a node: Restart builds a new one from
// the same home.
type inProcessRun struct {
	node   *node.Node
	cancel context.CancelFunc
	pumps  sync.WaitGroup
	guard  *appGuard // nil: the built-in app
}

var (
	_ Node           = (*inProcessNode)(nil)
	_ HeightReporter = (*inProcessNode)(nil)
	_ Controller     = (*inProcessNode)(nil)
)

// Start creates and starts the node of spec. Its home must already be
// written (WriteHome).
func (InProcess) Start(ctx context.Context, spec Spec) (Node, error) {
	logFile, err := os.OpenFile(LogFile(spec.Config), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("node %s: log file: %w", spec.Name, err)
	}
	logger, err := nodeLogger(logFile, spec.Config.LogLevel)
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("node %s: %w", spec.Name, err)
	}
	valSet, err := Validators(spec.Genesis)
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("node %s: genesis validators: %w", spec.Name, err)
	}
	ipn := &inProcessNode{name: spec.Name, spec: spec, valSet: valSet, logFile: logFile, logger: logger}
	if spec.App != nil {
		if ipn.app, err = newApp(spec.Name, spec.Config.RootDir, *spec.App); err != nil {
			logFile.Close()
			return nil, err
		}
	}
	r, err := ipn.launch(ctx)
	if err != nil {
		ipn.releaseApp()
		logFile.Close()
		return nil, err
	}
	ipn.life.cur = r
	ipn.addrs = Addrs{
		RPC: "http://" + strings.TrimPrefix(spec.Config.RPC.ListenAddress, "tcp://"),
		P2P: NodeID(spec.NodeKey) + "@" + strings.TrimPrefix(spec.Config.P2P.ListenAddress, "tcp://"),
	}
	return ipn, nil
}

// launch builds a node from the home and spec and starts it. The
// application is an in-memory kvstore: a restarted node's handshake
// replays the block store into the fresh app.
func (n *inProcessNode) launch(ctx context.Context) (*inProcessRun, error) {
	spec := n.spec
	gen := spec.Genesis
	genesisProvider := func() (node.ChecksummedGenesisDoc, error) {
		// The checksum only matters for a --genesis_hash check, not used here.
		return node.ChecksummedGenesisDoc{GenesisDoc: gen, Sha256Checksum: make([]byte, 32)}, nil
	}
	// The databases this incarnation opens, so that a node that fails to
	// build or start releases them (and their file locks) for a retry.
	var opened []*guardedDB
	open := dbProvider(n.logger)
	provider := func(c *cfg.DBContext) (dbm.DB, error) {
		db, err := open(c)
		if g, ok := db.(*guardedDB); ok {
			opened = append(opened, g)
		}
		return db, err
	}
	closeDBs := func() {
		for _, db := range opened {
			_ = db.Close()
		}
	}
	clients := proxy.NewLocalClientCreator(kvstore.NewInMemoryApplication())
	var guard *appGuard
	if n.app != nil {
		if err := n.app.start(ctx); err != nil {
			return nil, err
		}
		guard = &appGuard{}
		clients = n.appClients(guard)
	}
	nd, err := node.NewNode(ctx, spec.Config, spec.Signer, spec.NodeKey,
		clients,
		genesisProvider,
		provider,
		node.DefaultMetricsProvider(spec.Config.Instrumentation),
		n.logger)
	if err != nil {
		closeDBs()
		n.endApp()
		return nil, fmt.Errorf("node %s: %w", spec.Name, err)
	}
	pumpCtx, cancel := context.WithCancel(context.Background())
	r := &inProcessRun{node: nd, cancel: cancel, guard: guard}
	if guard != nil {
		guard.run.Store(r)
	}
	tr := &translator{node: spec.Name, names: spec.Names, valSet: n.valSet}
	// Subscribe before Start so that no event of the first height is lost.
	// A plain node (no Sink) records nothing.
	if spec.Sink != nil {
		if err := subscribeBus(pumpCtx, nd.EventBus(), tr, spec.Sink, &r.pumps); err != nil {
			cancel()
			r.pumps.Wait()
			n.endApp()
			return nil, fmt.Errorf("node %s: subscribe: %w", spec.Name, err)
		}
	}
	if err := nd.Start(); err != nil {
		cancel()
		r.pumps.Wait()
		if nd.IsRunning() {
			_ = nd.Stop()
		}
		closeDBs()
		n.endApp()
		return nil, fmt.Errorf("node %s: start: %w", spec.Name, err)
	}
	n.last.Store(nd)
	return r, nil
}

// stop stops an incarnation and waits for its event pumps.
func (r *inProcessRun) stop() error {
	if r.guard != nil {
		r.guard.stopping.Store(true) // its app is stopped after it: no loss
	}
	var err error
	if r.node.IsRunning() {
		err = r.node.Stop()
		r.node.Wait()
		// CometBFT v1.0.1's Node.OnStop leaves its ABCI connections
		// running: their killTMOnClientError routine would wait forever,
		// one per incarnation, in valnet's own process.
		// (Stopping them again is harmless: an error is "already stopped".)
		_ = r.node.ProxyApp().Stop()
	}
	r.cancel()
	r.pumps.Wait()
	return err
}

func (n *inProcessNode) Name() string                 { return n.name }
func (n *inProcessNode) Height(context.Context) int64 { return n.last.Load().BlockStore().Height() }
func (n *inProcessNode) Addrs() Addrs                 { return n.addrs }

func (n *inProcessNode) Stop(ctx context.Context) error {
	return n.life.stop(func(r *inProcessRun) error { return n.endRun(ctx, r) },
		func() error { n.releaseApp(); return n.logFile.Close() })
}

// endRun stops an incarnation, then its app (SIGTERM), as a clean stop of
// the machine would.
func (n *inProcessNode) endRun(ctx context.Context, r *inProcessRun) error {
	err := r.stop()
	if n.app != nil {
		err = errors.Join(err, n.app.stop(ctx))
	}
	return err
}

// subscribeBus pumps the consensus events of bus, translated by tr, into
// sink until ctx ends; wg counts the pumps.
func subscribeBus(ctx context.Context, bus *types.EventBus, tr *translator, sink eventlog.Sink, wg *sync.WaitGroup) error {
	// One subscription that matches everything (a nil query): CometBFT
	// expands a published event's attributes once per subscription with a
	// real query, and a channel per query costs its buffer. The translator
	// keeps the five kinds valnet records and drops the rest.
	sub, err := bus.Subscribe(ctx, "valnet", cmtquery.All, eventBuffer)
	if err != nil {
		return err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case msg := <-sub.Out():
				if !recorded(msg) {
					continue
				}
				if e, ok := tr.translate(msg.Data()); ok {
					sink.Emit(e)
				}
			case <-sub.Canceled():
				if err := sub.Err(); err != nil && ctx.Err() == nil && bus.IsRunning() {
					sink.Emit(eventlog.Event{Time: time.Now(), Kind: eventlog.KindNodeError, Node: tr.node,
						Error: "event subscription cancelled: " + err.Error()})
				}
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return nil
}

// recordedEventTypes are the CometBFT event types valnet records. The
// round-state data of a step is also published for timeouts, polka, lock
// and valid block: only NewRoundStep is a step.
var recordedEventTypes = []string{types.EventVote, types.EventNewRound, types.EventNewRoundStep,
	types.EventCompleteProposal, types.EventNewBlock}

func recorded(msg cmtpubsub.Message) bool {
	for _, t := range msg.Events()[types.EventTypeKey] {
		if slices.Contains(recordedEventTypes, t) {
			return true
		}
	}
	return false
}

// translator turns CometBFT event data into valnet events.
type translator struct {
	node   string
	names  map[string]string
	valSet *types.ValidatorSet
}

func (t *translator) name(addr []byte) string {
	key := strings.ToUpper(hex.EncodeToString(addr))
	if n, ok := t.names[key]; ok {
		return n
	}
	return key
}

func (t *translator) translate(data any) (eventlog.Event, bool) {
	now := time.Now()
	switch d := data.(type) {
	case types.EventDataVote:
		v := d.Vote
		ph := phase.Prevote
		if v.Type == types.PrecommitType {
			ph = phase.Precommit
		}
		return eventlog.Event{Time: now, Kind: eventlog.KindVote, Node: t.node,
			Validator: t.name(v.ValidatorAddress), Height: v.Height, Round: v.Round,
			Phase: ph, BlockID: hashHex(v.BlockID.Hash)}, true
	case types.EventDataNewRound:
		return eventlog.Event{Time: now, Kind: eventlog.KindNewRound, Node: t.node,
			Height: d.Height, Round: d.Round, Proposer: t.name(d.Proposer.Address)}, true
	case types.EventDataRoundState:
		return eventlog.Event{Time: now, Kind: eventlog.KindStep, Node: t.node,
			Height: d.Height, Round: d.Round, Step: stepName(d.Step)}, true
	case types.EventDataCompleteProposal:
		return eventlog.Event{Time: now, Kind: eventlog.KindProposal, Node: t.node,
			Height: d.Height, Round: d.Round, BlockID: hashHex(d.BlockID.Hash)}, true
	case types.EventDataNewBlock:
		return t.block(now, d), true
	}
	return eventlog.Event{}, false
}

func (t *translator) block(now time.Time, d types.EventDataNewBlock) eventlog.Event {
	b := d.Block
	bt := b.Time.UTC()
	e := eventlog.Event{Time: now, Kind: eventlog.KindBlock, Node: t.node,
		Height: b.Height, BlockID: hashHex(d.BlockID.Hash),
		Proposer: t.name(b.ProposerAddress), BlockTime: &bt, Txs: len(b.Txs), BlockBytes: b.Size()}
	for _, tx := range b.Txs {
		e.TxHashes = append(e.TxHashes, eventlog.TxHash(tx))
	}
	if lc := b.LastCommit; lc != nil && lc.Height > 0 {
		e.LastCommitRound = lc.Round
		for i, sig := range lc.Signatures {
			_, val := t.valSet.GetByIndex(int32(i))
			name := fmt.Sprintf("index-%d", i)
			if val != nil {
				name = t.name(val.Address)
			}
			switch sig.BlockIDFlag {
			case types.BlockIDFlagAbsent:
				e.LastCommitAbsent = append(e.LastCommitAbsent, name)
			case types.BlockIDFlagNil:
				e.LastCommitNil = append(e.LastCommitNil, name)
			}
		}
	}
	return e
}

func hashHex(h []byte) string {
	if len(h) == 0 {
		return ""
	}
	return hex.EncodeToString(h)
}

// stepName turns "RoundStepPrevoteWait" into "prevote_wait".
func stepName(s string) string {
	s = strings.TrimPrefix(s, "RoundStep")
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func nodeLogger(w *os.File, level string) (cmtlog.Logger, error) {
	opt, err := cmtlog.AllowLevel(level)
	if err != nil {
		return nil, err
	}
	return cmtlog.NewFilter(cmtlog.NewTMLogger(cmtlog.NewSyncWriter(w)), opt), nil
}

// endApp stops the app of an incarnation that failed to start.
func (n *inProcessNode) endApp() {
	if n.app != nil {
		_ = n.app.kill()
	}
}

// releaseApp ends the app, if any, and gives back its address.
func (n *inProcessNode) releaseApp() {
	if n.app != nil {
		_ = n.app.kill()
		n.app.release()
	}
}
