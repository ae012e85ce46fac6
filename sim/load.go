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
// block's max_bytes.

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
		return
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
