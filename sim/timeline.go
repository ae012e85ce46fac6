package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/valnet/valnet/internal/action"
	"github.com/valnet/valnet/internal/links"
	"github.com/valnet/valnet/internal/schedule"
	"github.com/valnet/valnet/internal/signerfault"
	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/network"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers/threshold"
)

// timeline runs the scenario's faults on internal/schedule's rule, the
// one `valnet run` steps, with virtual time: a fault starts when
// consensus reaches its height or its time has come, and ends after its
// duration. Signer faults go through internal/signerfault into each
// signer's signers.Faults, as in real runs; node and network faults act
// on the model.
type timeline struct {
	w     *world
	tasks []*task
	sched *schedule.Schedule
	woken int64 // the wake-up queued for the schedule's next time; -1: none
	idx   map[string]int32
}

type task struct {
	plan scenarios.FaultPlan
	id   string
	end  func() // the fault's way back; nil when there is none
	// down: a node fault's window is open (a node-start or node-resume
	// ends it).
	down bool
}

func newTimeline(w *world) (*timeline, error) {
	t := &timeline{w: w, woken: -1, idx: map[string]int32{}}
	for i, name := range w.names {
		t.idx[name] = int32(i)
	}
	for i, f := range w.plan.Faults {
		tk := &task{plan: f, id: fmt.Sprintf("faults[%d]:%s", i, f.Action)}
		if signerfault.Applies(f.Action) {
			signerfault.Arm(w.signers[t.idx[f.Target]].faults, tk.id, f)
		}
		t.tasks = append(t.tasks, tk)
	}
	return t, nil
}

func (t *timeline) begin() {
	entries := make([]schedule.Entry, len(t.tasks))
	for i, tk := range t.tasks {
		f := tk.plan
		entries[i] = schedule.Entry{Height: f.At.Height, Time: f.At.Time, Duration: f.Duration}
	}
	t.sched = schedule.New(t.w.epoch, entries)
	t.step()
}

// wake is the queued wake-up for the schedule's next time.
func (t *timeline) wake(e event) {
	if e.at == t.woken {
		t.woken = -1
	}
	t.step()
}

// step starts and ends what is due now, with consensus at the height
// after the last committed one, and queues a wake-up for the next time.
func (t *timeline) step() {
	if t.sched == nil {
		return
	}
	w := t.w
	for _, a := range t.sched.Step(w.at(w.now), w.committed+1) {
		tk := t.tasks[a.Entry]
		if a.Kind == schedule.Start {
			t.start(tk)
		} else if end := tk.end; end != nil {
			tk.end = nil
			end()
		}
	}
	if next, ok := t.sched.Next(); ok {
		at := max(next.Sub(w.epoch).Nanoseconds(), w.now)
		if t.woken < 0 || at < t.woken {
			t.woken = at
			w.q.push(event{at: at, kind: evWake})
		}
	}
}

func (t *timeline) emit(tk *task, state, detail string) {
	t.w.emit(results.Event{Time: t.w.at(t.w.now), Kind: results.KindFault, Validator: tk.plan.Target,
		Action: tk.plan.Action, State: state, Detail: detail, Height: tk.plan.At.Height})
}

func (t *timeline) start(tk *task) {
	w, f := t.w, tk.plan
	onEnd := func(detail string, undo func()) {
		tk.end = func() {
			undo()
			t.emit(tk, results.FaultEnd, detail)
		}
	}
	switch f.Action {
	case action.SignerDelay, action.SignerDrop, action.SignerError:
		on, err := signerfault.Start(w.signers[t.idx[f.Target]].faults, tk.id, f, w.seed)
		if err != nil {
			t.emit(tk, results.FaultInstant, "not applied: "+err.Error())
			return
		}
		t.emit(tk, results.FaultStart, on.What)
		if on.Undo != nil {
			onEnd(on.Detail, on.Undo)
		}
	case action.SignerOutage:
		s := w.signers[t.idx[f.Target]]
		t.emit(tk, results.FaultStart, "remote signer disconnected; the node cannot reach it")
		s.outage, s.outageUntil = true, w.now+f.Duration.Nanoseconds()
		onEnd("remote signer reconnecting", func() { s.outage, s.outageUntil = false, 0 })
	case action.SignerRestart:
		s := w.signers[t.idx[f.Target]]
		t.emit(tk, results.FaultStart, fmt.Sprintf("remote signer killed; restarting from its state file after %v", f.Duration))
		if f.Duration == 0 {
			t.emit(tk, results.FaultEnd, "remote signer started and redialing the node")
			return
		}
		s.outage, s.outageUntil = true, w.now+f.Duration.Nanoseconds()
		onEnd("remote signer started and redialing the node", func() { s.outage, s.outageUntil = false, 0 })
	case action.Partition:
		pairs := links.PartitionPairs(f.Groups, w.names)
		t.block(pairs, true)
		t.emit(tk, results.FaultStart, "partition "+groupsText(f.Groups))
		onEnd("partition healed", func() { t.block(pairs, false) })
		tk.down = true
	case action.CosignerDown, action.CosignerSlow:
		t.cosignerFault(tk, onEnd)
	case action.Isolate:
		if c, k := t.cosigner(f.Target); c != nil {
			c.isolated[k-1] = true
			t.emit(tk, results.FaultStart, f.Target+" cut off from every peer")
			onEnd("reconnected", func() { c.isolated[k-1] = false })
			tk.down = true
			return
		}
		var pairs []links.Pair
		for _, o := range w.names {
			if o != f.Target {
				pairs = append(pairs, links.Pair{f.Target, o}, links.Pair{o, f.Target})
			}
		}
		t.block(pairs, true)
		t.emit(tk, results.FaultStart, f.Target+" cut off from every peer")
		onEnd("reconnected", func() { t.block(pairs, false) })
		tk.down = true
	case action.Heal:
		healed := 0
		for _, o := range t.tasks {
			if o.down && o.end != nil && (o.plan.Action == action.Partition || o.plan.Action == action.Isolate) {
				end := o.end
				o.end, o.down = nil, false
				_ = end // its undo runs below without its own end event
				t.healTask(o, tk)
				healed++
			}
		}
		if healed == 0 {
			t.emit(tk, results.FaultInstant, "every link unblocked; no partition or isolation was open")
		}
	case action.NetworkLatency:
		lp := links.FaultLink(f)
		pairs := links.FaultPairs(f, w.names)
		prev := make([]network.Link, len(pairs))
		var desc string
		for i, p := range pairs {
			a, b := t.idx[p[0]], t.idx[p[1]]
			lk := w.net.link(a, b)
			prev[i] = network.Link{Latency: lk.delay, Bandwidth: lk.rate}
			l, err := links.FromPlan(lp, w.seed, tk.id+":"+p[0]+"->"+p[1])
			if err != nil {
				t.emit(tk, results.FaultStart, "not applied: "+err.Error())
				return
			}
			if i == 0 {
				desc = l.String()
			}
			w.net.setLink(a, b, l)
		}
		if desc == "" {
			desc = "0"
		}
		t.emit(tk, results.FaultStart, fmt.Sprintf("%d links now %s", len(pairs), desc))
		onEnd("links restored", func() {
			for i, p := range pairs {
				w.net.setLink(t.idx[p[0]], t.idx[p[1]], prev[i])
			}
		})
	case action.NodeStop, action.NodeKill:
		t.nodeDown(tk, "down ("+f.Action+")", "started again from its home", w.p.RestartDelay)
	case action.NodePause:
		t.nodeDown(tk, "paused (no progress, no answers)", "resumed", 0)
	case action.NodeRestart:
		if f.Duration > 0 {
			t.nodeDown(tk, "restarting from its home", "started again from its home", w.p.RestartDelay)
			return
		}
		n := w.nodes[t.idx[f.Target]]
		t.emit(tk, results.FaultStart, f.Target+" restarting from its home")
		w.takeDown(n)
		w.q.push(event{at: w.now + w.p.RestartDelay.Nanoseconds(), kind: evRestart, node: n.i, from: -1, part: int32(t.indexOf(tk))})
	case action.NodeStart, action.NodeResume:
		what, delay := "started again from its home", w.p.RestartDelay
		if f.Action == action.NodeResume {
			what, delay = "resumed", 0
		}
		n := w.nodes[t.idx[f.Target]]
		for _, o := range t.tasks {
			if o.down && o.plan.Target == f.Target && o.plan.Action != action.Partition && o.plan.Action != action.Isolate {
				o.down, o.end = false, nil
				t.w.emit(results.Event{Time: w.at(w.now), Kind: results.KindFault, Validator: o.plan.Target, Action: o.plan.Action,
					State: results.FaultEnd, Detail: fmt.Sprintf("%s %s (%s at %s)", f.Target, what, f.Action, atText(f.At)), Height: o.plan.At.Height})
				w.q.push(event{at: w.now + delay.Nanoseconds(), kind: evRestart, node: n.i, from: -1, part: -1})
				return
			}
		}
		t.emit(tk, results.FaultInstant, f.Target+" "+what+"; it was not down")
	}
}

func (t *timeline) indexOf(tk *task) int {
	for i, o := range t.tasks {
		if o == tk {
			return i
		}
	}
	return -1
}

// nodeDown takes the target's node down now; its end (after the
// duration) brings it back, restart later.
func (t *timeline) nodeDown(tk *task, what, back string, restart time.Duration) {
	w, f := t.w, tk.plan
	n := w.nodes[t.idx[f.Target]]
	t.emit(tk, results.FaultStart, f.Target+" "+what)
	w.takeDown(n)
	tk.down = true
	tk.end = func() {
		if !tk.down {
			return
		}
		tk.down = false
		t.emit(tk, results.FaultEnd, back)
		w.q.push(event{at: w.now + restart.Nanoseconds(), kind: evRestart, node: n.i, from: -1, part: -1})
	}
}

// healTask ends a partition or isolation because heal came: its links
// open and its end event names the heal.
func (t *timeline) healTask(o, by *task) {
	w := t.w
	var pairs []links.Pair
	if o.plan.Action == action.Partition {
		pairs = links.PartitionPairs(o.plan.Groups, w.names)
	} else {
		for _, x := range w.names {
			if x != o.plan.Target {
				pairs = append(pairs, links.Pair{o.plan.Target, x}, links.Pair{x, o.plan.Target})
			}
		}
	}
	t.block(pairs, false)
	w.emit(results.Event{Time: w.at(w.now), Kind: results.KindFault, Validator: o.plan.Target, Action: o.plan.Action,
		State: results.FaultEnd, Detail: fmt.Sprintf("every link unblocked (%s at %s)", by.plan.Action, atText(by.plan.At)), Height: o.plan.At.Height})
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

func atText(at scenarios.FaultAt) string {
	if at.Height > 0 {
		return fmt.Sprintf("height %d", at.Height)
	}
	return at.Time.String()
}

func groupsText(groups [][]string) string {
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = "[" + strings.Join(g, " ") + "]"
	}
	return strings.Join(parts, " | ")
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

// cosignerFault takes a cosigner down or makes it slow until the fault
// ends, as the runner's timeline does to the real model's cluster.
func (t *timeline) cosignerFault(tk *task, onEnd func(string, func())) {
	f := tk.plan
	c, k := t.cosigner(f.Target)
	if c == nil {
		t.emit(tk, results.FaultInstant, "not applied: "+f.Target+" is not a cosigner of a threshold signer")
		return
	}
	switch f.Action {
	case action.CosignerDown:
		c.down[k-1] = true
		t.emit(tk, results.FaultStart, threshold.DownText(k))
		onEnd(threshold.UpText(k), func() { c.down[k-1] = false })
	case action.CosignerSlow:
		m, err := latency.New(f.Latency.Spec, t.w.seed, tk.id)
		if err != nil {
			t.emit(tk, results.FaultInstant, "not applied: "+err.Error())
			return
		}
		latency.MakeSerial(m)
		c.slow[k-1] = m
		t.emit(tk, results.FaultStart, threshold.SlowText(k, m))
		onEnd(threshold.FastText(k), func() { c.slow[k-1] = nil })
	}
}
