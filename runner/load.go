package runner

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/valnet/valnet/internal/txload"
	"github.com/valnet/valnet/nodes"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
)

// The load generator sends a scenario's `load:` into the nodes as a client
// would: valid kvstore transactions through each node's RPC
// broadcast_tx_sync, paced at the asked rate, each one recorded as a tx
// event. Its events go through their own queue and forwarder, never the
// signers' queue: a generator that falls behind slows itself, not
// consensus.

// Generator limits: a worker per 4 tx/s asked (so each call may take up
// to 250 ms before the generator falls behind: on a saturated 2-core host
// 1000 tx/s see a p99 of ~250 ms), at most maxLoadWorkers; a call that
// takes longer than loadCallTimeout failed.
const (
	txPerWorker     = 4
	maxLoadWorkers  = 256
	loadCallTimeout = 5 * time.Second
	loadQueue       = 4096 // tx events waiting for the recorder
	maxTxError      = 160  // bytes of an error text kept in a tx event
)

// loadTarget is a node the load may send to.
type loadTarget struct {
	name string
	node nodes.Node
}

// loadGen is one run's load generator.
type loadGen struct {
	plan    scenarios.LoadPlan
	targets []loadTarget
	down    func(validator string) bool // a fault has the validator's node down
	emit    func(eventlog.Event)
	txs     txload.Maker
	client  *http.Client
	// clock paces the load (its waits and the rate); the tx events'
	// times stay on the wall clock, beside the nodes' events.
	clock clockwork.Clock

	cancel  context.CancelFunc
	done    chan struct{} // closed once every event is emitted
	stopped sync.Once
}

// startLoad starts sending lp once the chain is live (live: it has
// committed its first block) and no node is in block sync any more (a
// node refuses transactions while it catches up), or readyWait after the
// first block, whichever comes first; then after lp.Start, all timed on
// clk. ctx ends it early (Ctrl-C, the end of the run); stop waits for it.
func startLoad(ctx context.Context, clk clockwork.Clock, lp scenarios.LoadPlan, seed int64, targets []loadTarget, down func(string) bool, emit func(eventlog.Event), live func() bool) *loadGen {
	workers := min(maxLoadWorkers, max(1, int(math.Ceil(lp.Rate/txPerWorker))))
	g := &loadGen{plan: lp, targets: targets, down: down, emit: emit, txs: txload.NewMaker(seed, lp.Size), clock: clk,
		client: &http.Client{Timeout: loadCallTimeout, Transport: &http.Transport{
			MaxIdleConns: workers * len(targets), MaxIdleConnsPerHost: workers,
			IdleConnTimeout: 30 * time.Second, DisableCompression: true,
		}},
		done: make(chan struct{})}
	paceCtx, cancel := context.WithCancel(ctx)
	g.cancel = cancel
	jobs := make(chan uint64)
	out := make(chan eventlog.Event, loadQueue)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range jobs {
				// Calls under way when the load stops still finish (bounded
				// by loadCallTimeout), so each one's outcome is recorded;
				// Ctrl-C (ctx) cuts them short, as failed.
				out <- g.send(ctx, n)
			}
		}()
	}
	go func() {
		defer close(jobs)
		g.pace(paceCtx, jobs, live)
	}()
	go func() {
		wg.Wait()
		close(out)
	}()
	go func() {
		defer close(g.done)
		for e := range out {
			g.emit(e)
		}
	}()
	return g
}

// liveEvery is how often the generator looks whether the chain is live
// and the nodes are ready; readyWait bounds the wait for a node still
// catching up after the first block.
const (
	liveEvery = 20 * time.Millisecond
	readyWait = 10 * time.Second
)

// pace hands out transaction numbers at the plan's rate, from its start
// after the chain is live, until the load's duration is over or ctx ends.
func (g *loadGen) pace(ctx context.Context, jobs chan<- uint64, live func() bool) {
	for !live() {
		if !txload.Sleep(ctx, g.clock, liveEvery) {
			return
		}
	}
	deadline := g.clock.Now().Add(readyWait)
	for !g.nodesReady(ctx) && g.clock.Now().Before(deadline) {
		if !txload.Sleep(ctx, g.clock, liveEvery) {
			return
		}
	}
	if !txload.Sleep(ctx, g.clock, g.plan.Start) {
		return
	}
	txload.Pacer{Rate: g.plan.Rate, Duration: g.plan.Duration}.Drive(ctx, g.clock, func(n uint64) bool {
		select {
		case jobs <- n: // a worker is free: it sends n
			return true
		case <-ctx.Done():
			return false
		}
	})
}

// nodesReady reports whether no node the load sends to says, on /status,
// that it is catching up. A node that does not answer is down, not
// catching up: waiting for it would not help.
func (g *loadGen) nodesReady(ctx context.Context) bool {
	for _, t := range g.targets {
		if g.plan.To != scenarios.LoadToAll && t.name != g.plan.To {
			continue
		}
		rpc := t.node.Addrs().RPC
		if rpc == "" {
			continue
		}
		if st, err := nodes.RPCStatus(ctx, g.client, rpc); err == nil && st.Result.SyncInfo.CatchingUp {
			return false
		}
	}
	return true
}

// stop ends the load and waits until every call under way has returned
// and its event is emitted. Safe to call more than once.
func (g *loadGen) stop() {
	if g == nil {
		return
	}
	g.stopped.Do(func() {
		g.cancel()
		<-g.done
		g.client.CloseIdleConnections()
	})
}

// target picks the node of transaction n: round robin over the nodes
// that run (to: all), or the one named.
func (g *loadGen) target(n uint64) (loadTarget, bool) {
	if g.plan.To != scenarios.LoadToAll {
		for _, t := range g.targets {
			if t.name == g.plan.To {
				return t, true
			}
		}
		return loadTarget{}, false
	}
	k := len(g.targets)
	for i := range k {
		t := g.targets[(int(n)+i)%k]
		if !g.down(t.name) {
			return t, true
		}
	}
	return loadTarget{}, false
}

// send submits transaction n and returns its tx event.
func (g *loadGen) send(ctx context.Context, n uint64) eventlog.Event {
	tx := g.txs.Make(n)
	e := eventlog.Event{Time: time.Now(), Kind: eventlog.KindTx, Tx: eventlog.TxHash(tx)}
	t, ok := g.target(n)
	if !ok {
		e.Result, e.Error = eventlog.TxFailed, "no running validator to send to"
		return e
	}
	e.Node = t.name
	rpc := t.node.Addrs().RPC
	if rpc == "" {
		e.Result, e.Error = eventlog.TxFailed, "the node has no RPC address"
		return e
	}
	e.Time = time.Now()
	e.Result, e.Error = g.broadcast(ctx, rpc, tx)
	e.LatencyMS = ms(time.Since(e.Time))
	if len(e.Error) > maxTxError {
		e.Error = e.Error[:maxTxError]
	}
	return e
}

// broadcastResponse is the part of CometBFT's JSON-RPC answer read here.
type broadcastResponse struct {
	Result *struct {
		Code      uint32 `json:"code"`
		Log       string `json:"log"`
		Codespace string `json:"codespace"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    string `json:"data"`
	} `json:"error"`
}

// broadcast calls broadcast_tx_sync on the node at rpc (http://host:port):
// accepted when CheckTx passed, rejected when the node answered with an
// error, failed without an answer.
func (g *loadGen) broadcast(ctx context.Context, rpc string, tx []byte) (result, errText string) {
	var body bytes.Buffer
	body.Grow(base64.StdEncoding.EncodedLen(len(tx)) + 96)
	body.WriteString(`{"jsonrpc":"2.0","id":0,"method":"broadcast_tx_sync","params":{"tx":"`)
	enc := base64.NewEncoder(base64.StdEncoding, &body)
	_, _ = enc.Write(tx)
	_ = enc.Close()
	body.WriteString(`"}}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rpc, &body)
	if err != nil {
		return eventlog.TxFailed, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.client.Do(req)
	if err != nil {
		return eventlog.TxFailed, err.Error()
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return eventlog.TxFailed, "reading the answer: " + err.Error()
	}
	var br broadcastResponse
	if err := json.Unmarshal(data, &br); err != nil {
		return eventlog.TxFailed, fmt.Sprintf("HTTP %d, not a JSON-RPC answer: %.60q", resp.StatusCode, data)
	}
	switch {
	case br.Error != nil:
		return eventlog.TxRejected, strings.TrimSpace(br.Error.Message + ": " + br.Error.Data)
	case br.Result == nil:
		return eventlog.TxFailed, fmt.Sprintf("HTTP %d without result or error", resp.StatusCode)
	case br.Result.Code != 0:
		return eventlog.TxRejected, fmt.Sprintf("CheckTx code %d %s: %s", br.Result.Code, br.Result.Codespace, br.Result.Log)
	}
	return eventlog.TxAccepted, ""
}
