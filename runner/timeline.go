package runner

import (
	"context"
	"fmt"
	"github.com/valnet/valnet/internal/action"
	"strings"
	"sync"
	"time"

	"github.com/valnet/valnet/internal/links"
	"github.com/valnet/valnet/internal/schedule"
	"github.com/valnet/valnet/internal/signerfault"
	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/network"
	"github.com/valnet/valnet/nodes"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers/threshold"
)

// timeline runs a scenario's faults on the rule of internal/schedule: each
// starts when the chain reaches its height (consensus at that height: the
// height before it is committed) or when its time after the network
// started has come, and ends after its duration. It is stepped from the
// runner's poll loop, one goroutine, so faults never race each other.
type timeline struct {
	r      *run
	faults []*faultTask
	sched  *schedule.Schedule // from begin
	nodes  *nodeOps           // from begin

	// Open windows that another action ends: a node stopped, killed or
	// paused until a node-start or node-resume (by target, written from
	// the node queue), and the partitions and isolations a heal ends.
	mu       sync.Mutex
	nodeDown map[string]*faultTask
	netOpen  []*faultTask
}

type faultTask struct {
	plan   scenarios.FaultPlan
	id     string
	signer *validatorSigner // target's signer, if any
	// cosigner is K of a target NAME.cosigner-K (signer is NAME's).
	cosigner int
	node     nodes.Node // target's node, if any
	// end is what the fault's end does; set by start when the fault took
	// effect and has a way back.
	end func()
}

func newTimeline(r *run) *timeline {
	t := &timeline{r: r, nodeDown: map[string]*faultTask{}}
	byName := map[string]*validatorSigner{}
	nodeByName := map[string]nodes.Node{}
	for i, m := range r.members {
		byName[m.plan.Name] = r.signers[i]
		if i < len(r.nodes) {
			nodeByName[m.plan.Name] = r.nodes[i]
		}
	}
	for i, f := range r.plan.Faults {
		task := &faultTask{plan: f, id: fmt.Sprintf("faults[%d]:%s", i, f.Action), signer: byName[f.Target], node: nodeByName[f.Target]}
		if v, k, ok := scenarios.ParseCosignerEndpoint(f.Target); ok && byName[f.Target] == nil {
			task.signer, task.cosigner = byName[v], k
		}
		t.faults = append(t.faults, task)
		t.arm(task)
	}
	return t
}

// begin starts the clock of faults at netStart, when the nodes were up.
// Node control runs under ctx, the run's: close cancels what is left.
func (t *timeline) begin(ctx context.Context, netStart time.Time) {
	t.nodes = newNodeOps(ctx)
	entries := make([]schedule.Entry, len(t.faults))
	for i, task := range t.faults {
		f := task.plan
		entries[i] = schedule.Entry{Height: f.At.Height, Time: f.At.Time, Duration: f.Duration}
	}
	t.sched = schedule.New(netStart, entries)
}

// arm installs what must be in place before the fault's time comes: a
// drop or error tied to one height matches signatures of that height
// exactly, however fast the chain reaches it.
func (t *timeline) arm(task *faultTask) {
	if signerfault.Applies(task.plan.Action) {
		signerfault.Arm(task.signer.built.Faults, task.id, task.plan)
	}
}

// close cancels node control still going and waits for it to return, so
// nothing of a fault races the shutdown.
func (t *timeline) close() {
	if t.nodes != nil {
		t.nodes.close()
	}
}

// step starts and ends every fault that is due. committed is the last
// committed height: consensus is at the one after it.
func (t *timeline) step(now time.Time, committed int64) {
	for _, a := range t.sched.Step(now, committed+1) {
		task := t.faults[a.Entry]
		switch {
		case a.Kind == schedule.Start:
			t.start(task)
		default:
			if end := t.takeEnd(task); end != nil {
				end()
			}
		}
	}
}

func (t *timeline) emit(task *faultTask, state, detail string) {
	t.r.rec.Emit(results.Event{Time: time.Now(), Kind: results.KindFault, Validator: task.plan.Target,
		Action: task.plan.Action, State: state, Detail: detail, Height: task.plan.At.Height})
}

// atText says when a fault was due: "height 20" or "30s".
func atText(at scenarios.FaultAt) string {
	if at.Height > 0 {
		return fmt.Sprintf("height %d", at.Height)
	}
	return at.Time.String()
}

// setEnd and takeEnd guard a task's way back: the loop sets and runs it,
// and a node-start, node-resume or heal on the node queue may take it
// first.
func (t *timeline) setEnd(task *faultTask, end func()) {
	t.mu.Lock()
	task.end = end
	t.mu.Unlock()
}

func (t *timeline) takeEnd(task *faultTask) func() {
	t.mu.Lock()
	defer t.mu.Unlock()
	end := task.end
	task.end = nil
	return end
}

// endedBy ends the open window of task because another fault (by) ended
// it: its end event names the fault, and its own scheduled end does
// nothing more.
func (t *timeline) endedBy(task *faultTask, by *faultTask, detail string) {
	t.takeEnd(task)
	t.emit(task, results.FaultEnd, fmt.Sprintf("%s (%s at %s)", detail, by.plan.Action, atText(by.plan.At)))
}

func (t *timeline) start(task *faultTask) {
	f, vs := task.plan, task.signer
	onEnd := func(detail string, undo func()) {
		t.setEnd(task, func() {
			undo()
			t.emit(task, results.FaultEnd, detail)
		})
	}
	switch f.Action {
	case action.SignerDelay, action.SignerDrop, action.SignerError:
		on, err := signerfault.Start(vs.built.Faults, task.id, f, t.r.seed)
		if err != nil { // validated by the scenario; an error here is a bug
			t.emit(task, results.FaultInstant, "not applied: "+err.Error())
			return
		}
		t.emit(task, results.FaultStart, on.What)
		if on.Undo != nil {
			onEnd(on.Detail, on.Undo)
		}
	case action.SignerOutage:
		if ext := vs.external; ext != nil {
			// valnet does not run this signer: the link is cut at the
			// node's end, which hangs up on the signer until the end.
			t.emit(task, results.FaultStart, "link to the external signer cut at the node: connection closed, redials hung up on")
			ext.Cut(true)
			onEnd("link to the external signer mended; waiting for it to redial", func() { ext.Cut(false) })
			return
		}
		t.emit(task, results.FaultStart, "remote signer disconnected; the node cannot reach it")
		_ = vs.server.Stop()
		onEnd("remote signer reconnecting", func() { _ = vs.server.Start() })
	case action.CosignerDown, action.CosignerSlow:
		t.cosignerFault(task, onEnd)
	case action.Partition, action.Isolate, action.Heal, action.NetworkLatency:
		t.network(task, onEnd)
	case action.NodeStop, action.NodeKill, action.NodeStart, action.NodeRestart,
		action.NodePause, action.NodeResume:
		t.nodeFault(task)
	case action.SignerRestart:
		t.emit(task, results.FaultStart, fmt.Sprintf("remote signer killed; restarting from its state file after %v", f.Duration))
		_ = vs.server.Stop()
		if err := vs.built.Restart(nil); err != nil {
			t.emit(task, results.FaultEnd, "restart failed: "+err.Error())
			return
		}
		onEnd("remote signer started and redialing the node", func() { _ = vs.server.Start() })
		if f.Duration == 0 {
			t.takeEnd(task)() // no downtime: the schedule has no end for it
		}
	}
}

// network applies a partition, isolation, heal or latency change to the
// link fabric (present whenever a scenario has network faults).
func (t *timeline) network(task *faultTask, onEnd func(string, func())) {
	f, fab := task.plan, t.r.fabric
	if fab == nil {
		t.emit(task, results.FaultInstant, "not applied: no network fabric")
		return
	}
	switch f.Action {
	case action.Partition:
		pairs := links.PartitionPairs(f.Groups, t.r.names())
		for _, p := range pairs {
			fab.SetBlocked(p[0], p[1], true)
		}
		t.emit(task, results.FaultStart, "partition "+groupsText(f.Groups))
		onEnd("partition healed", func() {
			for _, p := range pairs {
				fab.SetBlocked(p[0], p[1], false)
			}
		})
		t.openNet(task)
	case action.Isolate:
		fab.Isolate(f.Target, true)
		t.emit(task, results.FaultStart, f.Target+" cut off from every peer")
		onEnd("reconnected", func() { fab.Isolate(f.Target, false) })
		t.openNet(task)
	case action.Heal:
		fab.HealAll()
		t.mu.Lock()
		open := t.netOpen
		t.netOpen = nil
		t.mu.Unlock()
		healed := 0
		for _, o := range open {
			if t.takeEnd(o) != nil { // still open: its own end has not come
				t.endedBy(o, task, "every link unblocked")
				healed++
			}
		}
		if healed == 0 {
			t.emit(task, results.FaultInstant, "every link unblocked; no partition or isolation was open")
		}
	case action.NetworkLatency:
		lp := links.FaultLink(f)
		pairs := links.FaultPairs(f, t.r.names())
		var prev []network.Link
		for _, p := range pairs {
			prev = append(prev, t.r.linkNow(p[0], p[1]))
			l, err := links.FromPlan(lp, t.r.seed, task.id+":"+p[0]+"->"+p[1])
			if err != nil {
				t.emit(task, results.FaultStart, "not applied: "+err.Error())
				return
			}
			t.r.setLink(p[0], p[1], l)
		}
		desc := "0"
		if len(pairs) > 0 {
			desc = t.r.linkNow(pairs[0][0], pairs[0][1]).String()
		}
		t.emit(task, results.FaultStart, fmt.Sprintf("%d links now %s", len(pairs), desc))
		onEnd("links restored", func() {
			for i, p := range pairs {
				t.r.setLink(p[0], p[1], prev[i])
			}
		})
	}
}

// openNet notes a partition or isolation that a heal would end.
func (t *timeline) openNet(task *faultTask) {
	t.mu.Lock()
	t.netOpen = append(t.netOpen, task)
	t.mu.Unlock()
}

func groupsText(groups [][]string) string {
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = "[" + strings.Join(g, " ") + "]"
	}
	return strings.Join(parts, " | ")
}

// nodeFault stops, kills, pauses or restarts the target's node. A control
// call can take long (a process backend waits for the node to be up), so
// it runs off the poll loop, after the target's earlier calls, and records
// how it went when it returns; a duration schedules the way back (start,
// resume), which runs only if the fault itself took. A stop, kill or pause
// is a window that ends when the node runs again: at the end of its
// duration, or at a later node-start or node-resume, whose own event is
// that end. A call that fails ends its window at once, saying so.
func (t *timeline) nodeFault(task *faultTask) {
	f := task.plan
	ctl, ok := task.node.(nodes.Controller)
	if !ok {
		t.emit(task, results.FaultInstant, "not applied: this backend cannot control nodes")
		return
	}
	// took is written by the fault's own call and read by its way back,
	// which runs after it on the target's queue.
	var took bool
	down := func(what string, op func(context.Context) error) {
		// Emitted first: the node's missed votes start now.
		t.emit(task, results.FaultStart, f.Target+" "+what)
		t.nodes.do(f.Target, func(ctx context.Context) {
			if err := op(ctx); err != nil {
				t.takeEnd(task)
				t.emit(task, results.FaultEnd, "not applied: "+f.Action+" failed: "+err.Error())
				return
			}
			took = true
			t.mu.Lock()
			t.nodeDown[f.Target] = task
			t.mu.Unlock()
		})
	}
	back := func(what string, op func(context.Context) error) {
		t.setEnd(task, func() {
			t.nodes.do(f.Target, func(ctx context.Context) {
				t.mu.Lock()
				open := t.nodeDown[f.Target] == task
				if open {
					delete(t.nodeDown, f.Target)
				}
				t.mu.Unlock()
				if !took || !open {
					return // failed, or ended by a node-start or node-resume
				}
				detail := what
				if err := op(ctx); err != nil {
					detail = what + " failed: " + err.Error()
				}
				t.emit(task, results.FaultEnd, detail)
			})
		})
	}
	// up runs the node again (node-start, node-resume) and ends the window
	// of the stop, kill or pause that took it down.
	up := func(what string, op func(context.Context) error) {
		t.nodes.do(f.Target, func(ctx context.Context) {
			t.mu.Lock()
			open := t.nodeDown[f.Target]
			t.mu.Unlock()
			if err := op(ctx); err != nil {
				t.emit(task, results.FaultInstant, "not applied: "+f.Action+" failed: "+err.Error())
				return
			}
			if open == nil {
				t.emit(task, results.FaultInstant, f.Target+" "+what+"; it was not down")
				return
			}
			t.mu.Lock()
			delete(t.nodeDown, f.Target)
			t.mu.Unlock()
			t.endedBy(open, task, f.Target+" "+what)
		})
	}
	switch f.Action {
	case action.NodeStop, action.NodeKill:
		stop := ctl.Kill
		if h, ok := task.node.(nodes.Halter); ok && f.Action == action.NodeStop {
			stop = h.Halt // a clean stop where the backend can
		}
		down("down ("+f.Action+")", stop)
		back("started again from its home", ctl.Restart)
	case action.NodeStart:
		up("started again from its home", ctl.Restart)
	case action.NodeRestart:
		if f.Duration > 0 {
			down("restarting from its home", ctl.Kill)
			back("started again from its home", ctl.Restart)
			return
		}
		t.emit(task, results.FaultStart, f.Target+" restarting from its home")
		t.nodes.do(f.Target, func(ctx context.Context) {
			detail := f.Target + " running again"
			if err := ctl.Restart(ctx); err != nil {
				detail = "restart failed: " + err.Error()
			}
			t.emit(task, results.FaultEnd, detail)
		})
	case action.NodePause:
		down("paused (no progress, no answers)", ctl.Pause)
		back("resumed", ctl.Resume)
	case action.NodeResume:
		up("resumed", ctl.Resume)
	}
}

// cosignerFault takes a threshold signer's cosigner down, or makes it
// slow, until the fault ends.
func (t *timeline) cosignerFault(task *faultTask, onEnd func(string, func())) {
	f, k := task.plan, task.cosigner
	if task.signer == nil || task.signer.cluster == nil {
		t.emit(task, results.FaultInstant, "not applied: "+f.Target+" is not a cosigner of a threshold signer")
		return
	}
	c := task.signer.cluster
	switch f.Action {
	case action.CosignerDown:
		if err := c.SetDown(k, true); err != nil {
			t.emit(task, results.FaultInstant, "not applied: "+err.Error())
			return
		}
		t.emit(task, results.FaultStart, threshold.DownText(k))
		onEnd(threshold.UpText(k), func() { _ = c.SetDown(k, false) })
	case action.CosignerSlow:
		m, err := latency.New(f.Latency.Spec, t.r.seed, task.id)
		if err == nil {
			err = c.SetSlow(k, m)
		}
		if err != nil {
			t.emit(task, results.FaultInstant, "not applied: "+err.Error())
			return
		}
		t.emit(task, results.FaultStart, threshold.SlowText(k, m))
		onEnd(threshold.FastText(k), func() { _ = c.SetSlow(k, nil) })
	}
}
