package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/network"
	"github.com/valnet/valnet/nodes"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers"
)

// timeline runs a scenario's faults: each starts when the chain reaches its
// height (consensus at that height: the height before it is committed) or
// when its time after the network started has come, and ends after its
// duration. It is stepped from the runner's poll loop, one goroutine, so
// faults never race each other.
type timeline struct {
	r      *run
	faults []*faultTask
	later  []scheduled // actions due at a time, e.g. the end of a window
}

type faultTask struct {
	plan    scenarios.FaultPlan
	id      string
	signer  *validatorSigner // target's signer, if any
	node    nodes.Node       // target's node, if any
	started bool
}

type scheduled struct {
	at time.Time
	do func()
}

func newTimeline(r *run) *timeline {
	t := &timeline{r: r}
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
		t.faults = append(t.faults, task)
		t.arm(task)
	}
	return t
}

// arm installs what must be in place before the fault's time comes: a
// drop or error tied to one height matches signatures of that height
// exactly, however fast the chain reaches it.
func (t *timeline) arm(task *faultTask) {
	f := task.plan
	if (f.Action == scenarios.FaultSignerDrop || f.Action == scenarios.FaultSignerError) && f.Duration == 0 && f.At.Height > 0 {
		task.signer.built.Faults.SetFailure(task.id, failRule(f, true))
	}
}

func failRule(f scenarios.FaultPlan, atHeight bool) signers.FailRule {
	rule := signers.FailRule{Mode: signers.FailError, Phases: f.Phases}
	if f.Action == scenarios.FaultSignerDrop {
		rule.Mode = signers.FailDrop
	}
	if atHeight {
		rule.Height, rule.Round, rule.HasRound = f.At.Height, f.At.Round, f.At.HasRound
	}
	return rule
}

// step starts every fault whose time has come and runs due actions.
// height is the last committed height; netStart when the nodes were up.
func (t *timeline) step(now time.Time, height int64, netStart time.Time) {
	for _, task := range t.faults {
		if task.started || !due(task.plan.At, now, height, netStart) {
			continue
		}
		task.started = true
		t.start(task, now)
	}
	rest := t.later[:0]
	var due []scheduled
	for _, s := range t.later {
		if !now.Before(s.at) {
			due = append(due, s)
		} else {
			rest = append(rest, s)
		}
	}
	t.later = rest
	for _, s := range due {
		s.do()
	}
}

func due(at scenarios.FaultAt, now time.Time, height int64, netStart time.Time) bool {
	if at.Height > 0 {
		return height >= at.Height-1
	}
	return !now.Before(netStart.Add(at.Time))
}

func (t *timeline) after(now time.Time, d time.Duration, do func()) {
	t.later = append(t.later, scheduled{at: now.Add(d), do: do})
}

func (t *timeline) emit(task *faultTask, state, detail string) {
	t.r.rec.Emit(results.Event{Time: time.Now(), Kind: results.KindFault, Validator: task.plan.Target,
		Action: task.plan.Action, State: state, Detail: detail, Height: task.plan.At.Height})
}

func (t *timeline) start(task *faultTask, now time.Time) {
	f, vs := task.plan, task.signer
	phases := "all phases"
	if len(f.Phases) > 0 {
		phases = strings.Join(f.Phases, ", ")
	}
	end := func(detail string, undo func()) {
		if f.Duration > 0 {
			t.after(now, f.Duration, func() {
				undo()
				t.emit(task, results.FaultEnd, detail)
			})
		}
	}
	switch f.Action {
	case scenarios.FaultSignerDelay:
		model, err := latency.New(f.Latency.Spec, t.r.seed, task.id)
		if err != nil { // validated by the scenario; a model error here is a bug
			t.emit(task, results.FaultStart, "not applied: "+err.Error())
			return
		}
		vs.built.Faults.SetDelay(task.id, model, f.Phases)
		t.emit(task, results.FaultStart, "adds "+model.String()+" to "+phases)
		end("delay removed", func() { vs.built.Faults.ClearDelay(task.id) })
	case scenarios.FaultSignerDrop, scenarios.FaultSignerError:
		what := "drops"
		if f.Action == scenarios.FaultSignerError {
			what = "fails"
		}
		if f.Duration == 0 && f.At.Height > 0 {
			// Armed at the start; it matches only its height.
			at := fmt.Sprintf("height %d", f.At.Height)
			if f.At.HasRound {
				at += fmt.Sprintf(" round %d", f.At.Round)
			}
			t.emit(task, results.FaultStart, what+" "+phases+" signatures at "+at)
			return
		}
		vs.built.Faults.SetFailure(task.id, failRule(f, false))
		t.emit(task, results.FaultStart, what+" "+phases+" signatures")
		end("signatures back", func() { vs.built.Faults.ClearFailure(task.id) })
	case scenarios.FaultSignerOutage:
		t.emit(task, results.FaultStart, "remote signer disconnected; the node cannot reach it")
		_ = vs.server.Stop()
		end("remote signer reconnecting", func() { _ = vs.server.Start() })
	case scenarios.FaultPartition, scenarios.FaultIsolate, scenarios.FaultHeal, scenarios.FaultNetworkLatency:
		t.network(task, now, end)
	case scenarios.FaultNodeStop, scenarios.FaultNodeKill, scenarios.FaultNodeStart, scenarios.FaultNodeRestart,
		scenarios.FaultNodePause, scenarios.FaultNodeResume:
		t.nodeFault(task, now)
	case scenarios.FaultSignerRestart:
		t.emit(task, results.FaultStart, fmt.Sprintf("remote signer killed; restarting from its state file after %v", f.Duration))
		_ = vs.server.Stop()
		if err := vs.built.Restart(nil); err != nil {
			t.emit(task, results.FaultEnd, "restart failed: "+err.Error())
			return
		}
		t.after(now, f.Duration, func() {
			_ = vs.server.Start()
			t.emit(task, results.FaultEnd, "remote signer started and redialing the node")
		})
	}
}

// network applies a partition, isolation, heal or latency change to the
// link fabric (present whenever a scenario has network faults).
func (t *timeline) network(task *faultTask, now time.Time, end func(string, func())) {
	f, fab := task.plan, t.r.fabric
	if fab == nil {
		t.emit(task, results.FaultStart, "not applied: no network fabric")
		return
	}
	switch f.Action {
	case scenarios.FaultPartition:
		var pairs [][2]string
		side := map[string]int{}
		for i, g := range f.Groups {
			for _, v := range g {
				side[v] = i + 1
			}
		}
		for _, a := range t.r.members {
			for _, b := range t.r.members {
				sa, sb := side[a.plan.Name], side[b.plan.Name]
				// Validators in no group stay connected to everyone.
				if a != b && sa != 0 && sb != 0 && sa != sb {
					pairs = append(pairs, [2]string{a.plan.Name, b.plan.Name})
				}
			}
		}
		for _, p := range pairs {
			fab.SetBlocked(p[0], p[1], true)
		}
		t.emit(task, results.FaultStart, "partition "+groupsText(f.Groups))
		end("partition healed", func() {
			for _, p := range pairs {
				fab.SetBlocked(p[0], p[1], false)
			}
		})
	case scenarios.FaultIsolate:
		fab.Isolate(f.Target, true)
		t.emit(task, results.FaultStart, f.Target+" cut off from every peer")
		end("reconnected", func() { fab.Isolate(f.Target, false) })
	case scenarios.FaultHeal:
		fab.HealAll()
		t.emit(task, results.FaultStart, "every link unblocked")
	case scenarios.FaultNetworkLatency:
		lp := scenarios.LinkPlan{Latency: f.Latency}
		if f.Link != nil {
			lp = *f.Link
			lp.Latency = f.Latency
		}
		pairs := t.linkPairs(f)
		var prev []network.Link
		for _, p := range pairs {
			prev = append(prev, t.r.linkNow(p[0], p[1]))
			l, err := networkLink(lp, t.r.seed, task.id+":"+p[0]+"->"+p[1])
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
		end("links restored", func() {
			for i, p := range pairs {
				t.r.setLink(p[0], p[1], prev[i])
			}
		})
	}
}

// linkPairs are the directed links a network-latency fault changes.
func (t *timeline) linkPairs(f scenarios.FaultPlan) [][2]string {
	var pairs [][2]string
	for _, a := range t.r.members {
		for _, b := range t.r.members {
			x, y := a.plan.Name, b.plan.Name
			switch {
			case x == y:
			case f.From != "":
				if (x == f.From && y == f.To) || (!f.OneWay && x == f.To && y == f.From) {
					pairs = append(pairs, [2]string{x, y})
				}
			case f.Target != "":
				if x == f.Target || y == f.Target {
					pairs = append(pairs, [2]string{x, y})
				}
			default:
				pairs = append(pairs, [2]string{x, y})
			}
		}
	}
	return pairs
}

func groupsText(groups [][]string) string {
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = "[" + strings.Join(g, " ") + "]"
	}
	return strings.Join(parts, " | ")
}

// nodeFault stops, kills, pauses or restarts the target's node. Each
// control call returns once the change happened; a duration schedules the
// way back (start, resume).
func (t *timeline) nodeFault(task *faultTask, now time.Time) {
	f := task.plan
	ctl, ok := task.node.(nodes.Controller)
	if !ok {
		t.emit(task, results.FaultStart, "not applied: this backend cannot control nodes")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	do := func(what string, op func(context.Context) error) bool {
		if err := op(ctx); err != nil {
			t.emit(task, results.FaultStart, what+" failed: "+err.Error())
			return false
		}
		return true
	}
	back := func(what string, op func(context.Context) error) {
		if f.Duration <= 0 {
			return
		}
		t.after(now, f.Duration, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			detail := what
			if err := op(ctx); err != nil {
				detail = what + " failed: " + err.Error()
			}
			t.emit(task, results.FaultEnd, detail)
		})
	}
	switch f.Action {
	case scenarios.FaultNodeStop, scenarios.FaultNodeKill:
		// Emitted first: the node's missed votes start now.
		t.emit(task, results.FaultStart, f.Target+" down ("+f.Action+")")
		stop := ctl.Kill
		if h, ok := task.node.(nodes.Halter); ok && f.Action == scenarios.FaultNodeStop {
			stop = h.Halt // a clean stop where the backend can
		}
		if do(f.Action, stop) {
			back("started again from its home", func(ctx context.Context) error {
				return ctl.Restart(ctx)
			})
		}
	case scenarios.FaultNodeStart:
		if do("start", ctl.Restart) {
			t.emit(task, results.FaultStart, f.Target+" started")
		}
	case scenarios.FaultNodeRestart:
		t.emit(task, results.FaultStart, f.Target+" restarting from its home")
		if f.Duration > 0 {
			if do("stop", ctl.Kill) {
				back("started again from its home", func(ctx context.Context) error {
					return ctl.Restart(ctx)
				})
			}
			return
		}
		if do("restart", ctl.Restart) {
			t.emit(task, results.FaultEnd, f.Target+" running again")
		}
	case scenarios.FaultNodePause:
		t.emit(task, results.FaultStart, f.Target+" paused (no progress, no answers)")
		if do("pause", ctl.Pause) {
			back("resumed", ctl.Resume)
		}
	case scenarios.FaultNodeResume:
		if do("resume", ctl.Resume) {
			t.emit(task, results.FaultStart, f.Target+" resumed")
		}
	}
}
