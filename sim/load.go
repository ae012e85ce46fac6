package sim

import (
	"time"

	"github.com/valnet/valnet/internal/txload"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
)

// The transaction load in virtual time: the same pacing (txload.Pace) and
// transactions (txload.Maker) as the runner's generator, sent round robin
// to the running validators from load.start after the first block. A
// node's mempool takes a transaction unless it holds mempoolSize already
// (CometBFT's default mempool size, "mempool is full"); mempool gossip is
// taken as instant, so every proposer reaps the same FIFO, up to the
// block's max_bytes. What the gossip costs the links is kept: while the
// load runs, each connection carries its transactions (gossipBytes).

const (
	evLoad        evKind = 100
	mempoolSize          = 5000    // [mempool] size, CometBFT's default
	blockMaxBytes        = 4194304 // BlockParams.MaxBytes, CometBFT's default
)

type simTx struct {
	hash string
	size int
}

type loadModel struct {
	w     *world
	plan  scenarios.LoadPlan
	maker txload.Maker
	sent  uint64
	start int64 // virtual ns the load began; -1 until the first block
	pool  []simTx
	rr    int // round robin
	// gossiping: the links carry the load's mempool bytes
	gossiping bool
}

func newLoad(w *world, lp scenarios.LoadPlan) *loadModel {
	return &loadModel{w: w, plan: lp, maker: txload.NewMaker(w.seed, lp.Size), start: -1}
}

// begin waits for the first block: committed calls started.
func (l *loadModel) begin() {}

// started: the first block is in; the load starts load.start later.
func (l *loadModel) committed(txs []simTx) {
	if l.start < 0 {
		l.start = l.w.now + l.plan.Start.Nanoseconds()
		l.w.q.push(event{at: l.start, kind: evLoad})
	}
	// the committed block's transactions are the head of the FIFO
	n := min(len(txs), len(l.pool))
	l.pool = l.pool[n:]
}

// next sends the transaction due now and queues the one after.
func (l *loadModel) next(e event) {
	w := l.w
	elapsed := time.Duration(w.now - l.start)
	wait, stop := txload.Pace(elapsed, l.sent, l.plan.Rate, l.plan.Duration)
	if stop {
		l.gossipBytes(false)
		return
	}
	if !l.gossiping {
		l.gossipBytes(true)
	}
	if wait > 0 {
		w.q.push(event{at: w.now + wait.Nanoseconds(), kind: evLoad})
		return
	}
	tx := l.maker.Make(l.sent)
	l.sent++
	ev := eventlog.Event{Time: w.at(w.now), Kind: eventlog.KindTx, Tx: eventlog.TxHash(tx), LatencyMS: msOf(w.p.TxRPC)}
	target := l.target()
	switch {
	case target == nil:
		ev.Result, ev.Error = eventlog.TxFailed, "no running validator to send to"
	case len(l.pool) >= mempoolSize:
		ev.Node = target.name
		ev.Result, ev.Error = eventlog.TxRejected, "mempool is full"
	default:
		ev.Node = target.name
		ev.Result = eventlog.TxAccepted
		l.pool = append(l.pool, simTx{hash: ev.Tx, size: len(tx)})
	}
	w.emit(ev)
	w.q.push(event{at: w.now, kind: evLoad})
}

func (l *loadModel) target() *node {
	w := l.w
	if l.plan.To != scenarios.LoadToAll {
		for _, n := range w.nodes {
			if n.name == l.plan.To && n.up {
				return n
			}
		}
		return nil
	}
	vals := w.nodes[:w.n] // round robin over the validators (scenarios.LoadToAll)
	for range vals {
		n := vals[l.rr%len(vals)]
		l.rr++
		if n.up {
			return n
		}
	}
	return nil
}

// reap is what a proposer's block takes from the mempool, FIFO, up to
// max_bytes with the block's other bytes.
func (l *loadModel) reap(other int) []simTx {
	bytes := other
	var out []simTx
	for _, tx := range l.pool {
		if bytes+tx.size > blockMaxBytes {
			break
		}
		bytes += tx.size
		out = append(out, tx)
	}
	return out
}

// gossipBytes puts the load's transactions on the links (on) or takes
// them off. CometBFT's mempool reactor sends every transaction in its
// mempool to every peer but the ones it got it from (mempool/reactor.go
// broadcastTxRoutine 198, IsSender 268), one message a transaction. So
// a connection i -> j carries every transaction that entered at i, none
// that entered at j, and of the others, between the two directions of
// the link, each once or twice: twice when i and j both send it before
// either has the other's copy, once when one of them has the other's
// copy by the time its routine gets to it (always, under a backlog: a
// routine blocks while its channel's send queue is full). The model
// takes once, half of them each way: on 4 Mbit/s links under 200 tx/s
// (capacity-load) twice gave a block interval p50 27 % above the real
// run's (2719 against 2140 ms), once 8.7 % (2326; docs/crosscheck.md). The bytes go on the
// mempool channel, which shares the connection with the consensus
// channels by priority (netModel.sendOn). Transactions the mempool turns
// away ("mempool is full") are counted too.
func (l *loadModel) gossipBytes(on bool) {
	w := l.w
	l.gossiping = on
	entered := func(j int32) float64 { // share of the load entering at node j
		switch {
		case l.plan.To != scenarios.LoadToAll:
			if w.nodes[j].name == l.plan.To {
				return 1
			}
			return 0
		case j < int32(w.n):
			return 1 / float64(w.n)
		}
		return 0
	}
	perTx := float64(l.plan.Size) * l.plan.Rate
	for i := range w.nodes {
		w.neighbours(int32(i), func(j int32) {
			rate := 0.0
			if on {
				from, to := entered(int32(i)), entered(j)
				rate = perTx * (from + (1-from-to)/2)
			}
			w.net.link(int32(i), j).mempool = rate
		})
	}
}
