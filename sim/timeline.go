package sim

import (
	"fmt"
	"time"

	"github.com/valnet/valnet/internal/faultcore"
	"github.com/valnet/valnet/internal/links"
	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/network"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers"
)

// timeline is the sim's adapter of the fault core (internal/faultcore),
// the same core `valnet run` steps: it decides what each fault does and
// when, in virtual time; this carries it out on the model. Signer faults
// act on each signer's signers.Faults, as in real runs; node and network
// faults on the model's nodes and links.
type timeline struct {
	w     *world
	core  *faultcore.Core
	woken int64 // the wake-up queued for the core's next time; -1: none
	idx   map[string]int32
	// reports are node jobs waiting for a restart in virtual time (a
	// node-restart of a running node); an evRestart's report() indexes it.
	reports []func(error)
}

var _ faultcore.Effects = (*timeline)(nil)

func newTimeline(w *world) (*timeline, error) {
	t := &timeline{w: w, woken: -1, idx: map[string]int32{}}
	for i, name := range w.names {
		t.idx[name] = int32(i)
	}
	// The core's names are the validators, as the runner's (r.members):
	// partitions and link faults are between validators.
	core, err := faultcore.New(w.plan.Faults, w.names[:w.n], w.seed, t)
	if err != nil {
		return nil, err
	}
	t.core = core
	return t, nil
}

func (t *timeline) begin() {
	t.core.Begin(t.w.epoch)
	t.step()
}

// wake is the queued wake-up for the core's next time.
func (t *timeline) wake(e event) {
	if e.at == t.woken {
		t.woken = -1
	}
	t.step()
}

// step starts and ends what is due now, with consensus at the height
// after the last committed one, and queues a wake-up for the next time.
// Steps fall on the grid of faultcore.StepEvery from the epoch, as the
// runner's polls do (faultcore.StepEvery says why it matters).
func (t *timeline) step() {
	w := t.w
	t.core.Step(w.at(w.now), w.committed+1)
	if next, ok := t.core.Next(); ok {
		t.wakeAt(max(next.Sub(w.epoch).Nanoseconds(), w.now))
	}
}

// committed: a height was committed; the next step (on the grid) sees it.
func (t *timeline) committed() { t.wakeAt(t.w.now) }

// wakeAt queues a step at the first grid time at or after at, unless one
// is queued by then.
func (t *timeline) wakeAt(at int64) {
	grid := faultcore.StepEvery.Nanoseconds()
	at = (at + grid - 1) / grid * grid
	if t.woken < 0 || at < t.woken {
		t.woken = at
		t.w.q.push(event{at: at, kind: evWake})
	}
}

func (t *timeline) Emit(_ int, f scenarios.FaultPlan, state, detail string) {
	t.w.emit(eventlog.Event{Time: t.w.at(t.w.now), Kind: eventlog.KindFault, Validator: f.Target,
		Action: f.Action, State: state, Detail: detail, Height: f.At.Height})
}

func (t *timeline) signer(target string) *signer { return t.w.signers[t.idx[target]] }

func (t *timeline) SignerFaults(target string) *signers.Faults { return t.signer(target).faults }

// SignerOutage: the node cannot reach its signer until the end (the
// model's retries: sign).
func (t *timeline) SignerOutage(target string, cut bool, d time.Duration) bool {
	s := t.signer(target)
	if cut {
		s.outage, s.outageUntil = true, t.w.now+d.Nanoseconds()
	} else {
		s.outage, s.outageUntil = false, 0
	}
	return false // the sim has no external signer
}

// SignerRestart: a restarting signer is out of reach for its downtime.
func (t *timeline) SignerRestart(target string, up bool, d time.Duration) error {
	t.SignerOutage(target, !up, d)
	return nil
}

func (t *timeline) Block(pairs []links.Pair, blocked bool) error {
	t.block(pairs, blocked)
	return nil
}

// Isolate cuts a cosigner or a node off from every peer.
func (t *timeline) Isolate(target string, isolated bool) error {
	if c, k := t.cosigner(target); c != nil {
		c.isolated[k-1] = isolated
		return nil
	}
	var pairs []links.Pair
	for _, o := range t.w.names {
		if o != target {
			pairs = append(pairs, links.Pair{target, o}, links.Pair{o, target})
		}
	}
	t.block(pairs, isolated)
	return nil
}

func (t *timeline) Link(from, to string) network.Link {
	lk := t.w.net.link(t.idx[from], t.idx[to])
	return network.Link{Latency: lk.delay, Bandwidth: lk.rate}
}

func (t *timeline) SetLink(from, to string, l network.Link) {
	t.w.net.setLink(t.idx[from], t.idx[to], l)
	if t.w.g != nil {
		t.w.g.relinked(t.idx[from], t.idx[to])
	}
}

func (t *timeline) Controls(string) error { return nil }

// NodeDo runs job at once: the model has no slow control calls.
func (t *timeline) NodeDo(target string, job func(faultcore.NodeControl)) {
	job(simNode{t: t, n: t.w.nodes[t.idx[target]]})
}

func (t *timeline) Cosigner(target string) (faultcore.Cosigners, int) {
	c, k := t.cosigner(target)
	if c == nil {
		return nil, 0
	}
	return c, k
}

// block cuts or opens directed links; an opened link's peers exchange
// what the other lacks (their gossip routines send it once connected).
func (t *timeline) block(pairs []links.Pair, blocked bool) {
	w := t.w
	for _, p := range pairs {
		w.net.setBlocked(t.idx[p[0]], t.idx[p[1]], blocked)
	}
	if blocked {
		return
	}
	for _, p := range pairs {
		a, b := t.idx[p[0]], t.idx[p[1]]
		w.reconnect(a, b)
	}
}

// cosigner is the threshold signer and cosigner number of a target
// NAME.cosigner-K; nil for any other target.
func (t *timeline) cosigner(target string) (*cosigners, int) {
	v, k, ok := scenarios.ParseCosignerEndpoint(target)
	i, known := t.idx[v]
	if !ok || !known || t.w.signers[i].cosign == nil || k > t.w.signers[i].cosign.n {
		return nil, 0
	}
	return t.w.signers[i].cosign, k
}

// simNode is a node of the model in a node job.
type simNode struct {
	t *timeline
	n *node
}

// Down takes the node down at once (a stop, a kill and a pause are alike
// to the model: no progress, no answers).
func (s simNode) Down(faultcore.NodeDown) error {
	s.t.w.takeDown(s.n)
	return nil
}

// Up brings a node that is down back: after restart_delay from its home,
// at once from a pause. The report comes now: the node is on its way
// back. A running node is restarted (node-restart): it goes down now and
// runs again after restart_delay, and the report comes then.
func (s simNode) Up(resume bool, done func(error)) {
	w, n := s.t.w, s.n
	delay := w.p.RestartDelay
	if resume {
		delay = 0
	}
	if !n.up {
		w.q.push(event{at: w.now + delay.Nanoseconds(), kind: evRestart, node: n.i, from: -1, arg: -1})
		done(nil)
		return
	}
	if resume {
		done(nil) // not paused: nothing to thaw
		return
	}
	w.takeDown(n)
	s.t.reports = append(s.t.reports, done)
	w.q.push(event{at: w.now + delay.Nanoseconds(), kind: evRestart, node: n.i, from: -1, arg: int32(len(s.t.reports) - 1)})
}

// report tells the node job waiting on a restart (evRestart's report())
// that its node runs again.
func (t *timeline) report(i int32) {
	if i < 0 || int(i) >= len(t.reports) || t.reports[i] == nil {
		return
	}
	done := t.reports[i]
	t.reports[i] = nil
	done(nil)
}

// SetDown and SetSlow are the model's cosigners as the fault core acts on
// them (the real MODEL's cluster has the same two).
func (c *cosigners) SetDown(k int, down bool) error {
	if k < 1 || k > c.n {
		return fmt.Errorf("no cosigner %d", k)
	}
	c.down[k-1] = down
	return nil
}

func (c *cosigners) SetSlow(k int, m latency.Model) error {
	if k < 1 || k > c.n {
		return fmt.Errorf("no cosigner %d", k)
	}
	if m != nil {
		latency.MakeSerial(m)
	}
	c.slow[k-1] = m
	return nil
}
