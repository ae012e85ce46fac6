// Package faultcore is what a scenario's faults do, once: the schedule of
// internal/schedule (a fault starts when consensus reaches its height or
// its time has come, and ends its duration after), each fault's id and
// random stream, the windows one action ends for another (a node-start or
// node-resume ends the stop, kill or pause of its node; a heal ends the
// open partitions and isolations), and the text of every fault event.
//
// A driver is an adapter: it steps the Core with its clock and consensus
// height, and carries out the Effects the Core asks for on what it runs
// (the runner: real nodes, signers and the link fabric; the sim: its
// model; `valnet signer serve`: one signer chain). Adding an action
// means its name (internal/action) and rules (scenarios/faults.go), one
// case in Core.start, and the Effects it needs: an adapter that lacks one
// does not compile.
package faultcore

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/valnet/valnet/internal/action"
	"github.com/valnet/valnet/internal/links"
	"github.com/valnet/valnet/internal/schedule"
	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/network"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers"
	"github.com/valnet/valnet/signers/threshold"
)

// StepEvery is the cadence at which a driver steps the Core. The runner's
// poll loop looks at observed progress this often (runner/wait.go), so a
// fault at a height starts on the first step after that height's first
// commit, up to StepEvery later, and a fault at a time on the first step
// at or after it. The sim steps on the same grid of its virtual time, so a
// fault lands where in a height it lands in a real run: stepped at the
// instant of the first commit instead, a partition at height 5 cut the
// other validators off from height 4's precommits, and height 5 went
// through in round 0 after the heal, where real nodes, already in height
// 5's commit timeout, prevote nil on a held proposal and need a round
// more (crosscheck, partition: model 0.0 against real 2.1 round changes
// per 20 heights).
const StepEvery = 100 * time.Millisecond

// Fault event states (eventlog.FaultStart, FaultEnd, FaultInstant; the
// results package is not imported here: a signer knows no report).
const (
	Start   = "start"
	End     = "end"
	Instant = "instant"
)

// Effects are what an adapter does for the Core. Every method is called
// from the goroutine that steps the Core, except where NodeEffects says.
type Effects interface {
	// Emit records a fault event of fault i (its plan): state Start, End
	// or Instant.
	Emit(i int, plan scenarios.FaultPlan, state, detail string)
	SignerEffects
	NetworkEffects
	NodeEffects
	CosignerEffects
}

// SignerEffects act on a validator's signer.
type SignerEffects interface {
	// SignerFaults is the target's signer chain's faults (signer-delay,
	// signer-drop, signer-error act on it).
	SignerFaults(target string) *signers.Faults
	// SignerOutage cuts (cut) or mends the target's remote-signer
	// connection; d is the fault's duration. external: the signer is not
	// valnet's, so the link was cut at the node's end.
	SignerOutage(target string, cut bool, d time.Duration) (external bool)
	// SignerRestart takes the target's signer down and restarts it from
	// its state file (up false), or lets it dial the node again (up true).
	SignerRestart(target string, up bool, d time.Duration) error
}

// NetworkEffects act on the links between nodes.
type NetworkEffects interface {
	// Block cuts (blocked) or opens directed links; an error: there is no
	// network to act on.
	Block(pairs []links.Pair, blocked bool) error
	// Isolate cuts target (a node, or a signer or cosigner endpoint) off
	// from every peer, or reconnects it.
	Isolate(target string, isolated bool) error
	// Link is a directed link's setting now; SetLink changes it.
	Link(from, to string) network.Link
	SetLink(from, to string, l network.Link)
}

// NodeEffects act on nodes.
type NodeEffects interface {
	// Controls says whether target's node can be controlled; an error
	// says why not (the backend cannot control nodes).
	Controls(target string) error
	// NodeDo runs job with target's node after the jobs given for it
	// before (the runner: off its poll loop, so job and what it calls on
	// the Core may come from another goroutine; the sim: at once).
	NodeDo(target string, job func(NodeControl))
}

// NodeControl is one node, within a NodeDo job.
type NodeControl interface {
	// Down takes the node down: a kill, a clean stop (clean, where the
	// backend can) or a pause.
	Down(how NodeDown) error
	// Up runs it again from its home (start), or thaws it (resume); a
	// running node is first stopped cleanly (a restart). done is called
	// once it runs: the adapter may call it later (the sim, at the
	// node's restart in virtual time).
	Up(resume bool, done func(error))
}

// NodeDown is how a node goes down.
type NodeDown int

const (
	Kill NodeDown = iota
	Halt          // a clean stop where the backend can, else a kill
	Pause
)

// CosignerEffects act on a threshold signer's cosigners.
type CosignerEffects interface {
	// Cosigner is the cosigners of the threshold signer a target
	// NAME.cosigner-K names, and K; nil when it names none.
	Cosigner(target string) (Cosigners, int)
}

// Cosigners are a threshold signer's cosigners (the real MODEL's cluster,
// or the sim's).
type Cosigners interface {
	SetDown(k int, down bool) error
	SetSlow(k int, m latency.Model) error // nil: at once again
}

// Core runs a scenario's faults.
type Core struct {
	fx    Effects
	names []string // the validators, for partitions and link pairs
	seed  int64
	tasks []*task
	sched *schedule.Schedule

	// mu guards the windows, which node jobs touch from their goroutine.
	mu       sync.Mutex
	nodeDown map[string]*task // by target: the stop, kill or pause that took its node down
	heals    []netWindow      // partitions and isolations a heal would end, in start order
}

type task struct {
	i    int
	plan scenarios.FaultPlan
	id   string
	end  func() // the fault's way back; nil when there is none (or it was taken)
}

// ID names fault i of a scenario: "faults[3]:signer-delay". It seeds the
// fault's random streams (latency.New), so the sim and a real run draw the
// same delays for it.
func ID(i int, f scenarios.FaultPlan) string { return fmt.Sprintf("faults[%d]:%s", i, f.Action) }

// New prepares plans (a scenario's faults, checked by scenarios) for fx
// and arms what must be in place before the chain gets there: a signer
// drop or error tied to one height. An action the Core does not know is
// an error: a new action must say what it does.
func New(plans []scenarios.FaultPlan, names []string, seed int64, fx Effects) (*Core, error) {
	c := &Core{fx: fx, names: names, seed: seed, nodeDown: map[string]*task{}}
	for i, f := range plans {
		if !known[f.Action] {
			return nil, fmt.Errorf("faults[%d]: the fault core does not know action %q", i, f.Action)
		}
		t := &task{i: i, plan: f, id: ID(i, f)}
		if signerApplies(f.Action) {
			armSigner(fx.SignerFaults(f.Target), t.id, f)
		}
		c.tasks = append(c.tasks, t)
	}
	return c, nil
}

// known are the actions Core.start has a case for (TestCoreKnowsEveryAction
// holds it to internal/action's list).
var known = map[string]bool{
	action.SignerDelay: true, action.SignerDrop: true, action.SignerError: true, action.SignerOutage: true,
	action.SignerRestart: true, action.CosignerDown: true, action.CosignerSlow: true, action.Partition: true,
	action.Isolate: true, action.Heal: true, action.NetworkLatency: true, action.NodeStop: true,
	action.NodeKill: true, action.NodeStart: true, action.NodeRestart: true, action.NodePause: true,
	action.NodeResume: true,
}

// Begin starts the clock of faults given in time at begin (when the
// network started).
func (c *Core) Begin(begin time.Time) {
	entries := make([]schedule.Entry, len(c.tasks))
	for i, t := range c.tasks {
		f := t.plan
		entries[i] = schedule.Entry{Height: f.At.Height, Time: f.At.Time, Duration: f.Duration}
	}
	c.sched = schedule.New(begin, entries)
}

// Step starts and ends every fault that is due at now with consensus at
// height (the height after the last committed one).
func (c *Core) Step(now time.Time, height int64) {
	if c.sched == nil {
		return
	}
	for _, a := range c.sched.Step(now, height) {
		t := c.tasks[a.Entry]
		if a.Kind == schedule.Start {
			c.start(t)
		} else if end := c.takeEnd(t); end != nil {
			end()
		}
	}
}

// Next is when time alone brings the next start or end; false when only
// heights (or nothing) are left.
func (c *Core) Next() (time.Time, bool) {
	if c.sched == nil {
		return time.Time{}, false
	}
	return c.sched.Next()
}

func (c *Core) emit(t *task, state, detail string) { c.fx.Emit(t.i, t.plan, state, detail) }

// setEnd and takeEnd guard a task's way back: the stepping goroutine sets
// and runs it, and a node job (a node-start or node-resume) may take it.
func (c *Core) setEnd(t *task, end func()) {
	c.mu.Lock()
	t.end = end
	c.mu.Unlock()
}

func (c *Core) takeEnd(t *task) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	end := t.end
	t.end = nil
	return end
}

// endedBy ends t's window because another fault (by) ended it: its end
// event names by, and its own scheduled end does nothing more.
func (c *Core) endedBy(t, by *task, detail string) {
	c.takeEnd(t)
	c.emit(t, End, fmt.Sprintf("%s (%s at %s)", detail, by.plan.Action, atText(by.plan.At)))
}

// onEnd sets t's way back: undo, then its end event.
func (c *Core) onEnd(t *task, detail string, undo func()) {
	c.setEnd(t, func() {
		undo()
		c.emit(t, End, detail)
	})
}

func (c *Core) start(t *task) {
	f := t.plan
	switch f.Action {
	case action.SignerDelay, action.SignerDrop, action.SignerError:
		on, err := startSigner(c.fx.SignerFaults(f.Target), t.id, f, c.seed)
		if err != nil { // checked by the scenario; an error here is a bug
			c.emit(t, Instant, "not applied: "+err.Error())
			return
		}
		c.emit(t, Start, on.What)
		if on.Undo != nil {
			c.onEnd(t, on.Detail, on.Undo)
		}
	case action.SignerOutage:
		if c.fx.SignerOutage(f.Target, true, f.Duration) {
			// valnet does not run this signer: the link is cut at the
			// node's end, which hangs up on the signer until the end.
			c.emit(t, Start, "link to the external signer cut at the node: connection closed, redials hung up on")
			c.onEnd(t, "link to the external signer mended; waiting for it to redial", func() { c.fx.SignerOutage(f.Target, false, f.Duration) })
			return
		}
		c.emit(t, Start, "remote signer disconnected; the node cannot reach it")
		c.onEnd(t, "remote signer reconnecting", func() { c.fx.SignerOutage(f.Target, false, f.Duration) })
	case action.SignerRestart:
		c.emit(t, Start, fmt.Sprintf("remote signer killed; restarting from its state file after %v", f.Duration))
		if err := c.fx.SignerRestart(f.Target, false, f.Duration); err != nil {
			c.emit(t, End, "restart failed: "+err.Error())
			return
		}
		c.onEnd(t, "remote signer started and redialing the node", func() { _ = c.fx.SignerRestart(f.Target, true, f.Duration) })
		if f.Duration == 0 {
			c.takeEnd(t)() // no downtime: the schedule has no end for it
		}
	case action.CosignerDown, action.CosignerSlow:
		c.cosigner(t)
	case action.Partition:
		pairs := links.PartitionPairs(f.Groups, c.names)
		if err := c.fx.Block(pairs, true); err != nil {
			c.emit(t, Instant, "not applied: "+err.Error())
			return
		}
		c.emit(t, Start, "partition "+groupsText(f.Groups))
		c.onEnd(t, "partition healed", func() { _ = c.fx.Block(pairs, false) })
		c.openNet(t, func() { _ = c.fx.Block(pairs, false) })
	case action.Isolate:
		if err := c.fx.Isolate(f.Target, true); err != nil {
			c.emit(t, Instant, "not applied: "+err.Error())
			return
		}
		c.emit(t, Start, f.Target+" cut off from every peer")
		c.onEnd(t, "reconnected", func() { _ = c.fx.Isolate(f.Target, false) })
		c.openNet(t, func() { _ = c.fx.Isolate(f.Target, false) })
	case action.Heal:
		c.heal(t)
	case action.NetworkLatency:
		c.latency(t)
	case action.NodeStop, action.NodeKill, action.NodeStart, action.NodeRestart, action.NodePause, action.NodeResume:
		c.node(t)
	default:
		// New refused it; a case missing here is a bug, not a quiet no-op.
		panic("faultcore: no case for action " + f.Action)
	}
}

// netWindow is an open partition or isolation and how a heal undoes it.
type netWindow struct {
	t    *task
	undo func()
}

// openNet notes a partition or isolation that a heal would end.
func (c *Core) openNet(t *task, undo func()) {
	c.mu.Lock()
	c.heals = append(c.heals, netWindow{t, undo})
	c.mu.Unlock()
}

// heal ends every partition and isolation still open: their links open,
// and their end events name the heal.
func (c *Core) heal(t *task) {
	c.mu.Lock()
	open := c.heals
	c.heals = nil
	c.mu.Unlock()
	healed := 0
	for _, w := range open {
		if c.takeEnd(w.t) == nil {
			continue // ended already
		}
		w.undo()
		c.emit(w.t, End, fmt.Sprintf("every link unblocked (%s at %s)", t.plan.Action, atText(t.plan.At)))
		healed++
	}
	if healed == 0 {
		c.emit(t, Instant, "every link unblocked; no partition or isolation was open")
	}
}

// latency sets the links a network-latency fault names, and puts them
// back at its end.
func (c *Core) latency(t *task) {
	f := t.plan
	lp := links.FaultLink(f)
	pairs := links.FaultPairs(f, c.names)
	prev := make([]network.Link, len(pairs))
	desc := "0"
	for i, p := range pairs {
		prev[i] = c.fx.Link(p[0], p[1])
		l, err := links.FromPlan(lp, c.seed, t.id+":"+p[0]+"->"+p[1])
		if err != nil {
			c.emit(t, Start, "not applied: "+err.Error())
			return
		}
		if i == 0 {
			desc = l.String()
		}
		c.fx.SetLink(p[0], p[1], l)
	}
	c.emit(t, Start, fmt.Sprintf("%d links now %s", len(pairs), desc))
	c.onEnd(t, "links restored", func() {
		for i, p := range pairs {
			c.fx.SetLink(p[0], p[1], prev[i])
		}
	})
}

// cosigner takes a threshold signer's cosigner down, or makes it slow,
// until the fault ends.
func (c *Core) cosigner(t *task) {
	f := t.plan
	cs, k := c.fx.Cosigner(f.Target)
	if cs == nil {
		c.emit(t, Instant, "not applied: "+f.Target+" is not a cosigner of a threshold signer")
		return
	}
	switch f.Action {
	case action.CosignerDown:
		if err := cs.SetDown(k, true); err != nil {
			c.emit(t, Instant, "not applied: "+err.Error())
			return
		}
		c.emit(t, Start, threshold.DownText(k))
		c.onEnd(t, threshold.UpText(k), func() { _ = cs.SetDown(k, false) })
	case action.CosignerSlow:
		m, err := latency.New(f.Latency.Spec, c.seed, t.id)
		if err == nil {
			err = cs.SetSlow(k, m)
		}
		if err != nil {
			c.emit(t, Instant, "not applied: "+err.Error())
			return
		}
		c.emit(t, Start, threshold.SlowText(k, m))
		c.onEnd(t, threshold.FastText(k), func() { _ = cs.SetSlow(k, nil) })
	}
}

// node stops, kills, pauses or restarts the target's node. A stop, kill
// or pause is a window that ends when the node runs again: at the end of
// its duration, or at a later node-start or node-resume, whose own event
// is that end. A call that fails ends its window at once, saying so.
// Node jobs run where NodeDo runs them, after the target's earlier ones,
// and report back.
func (c *Core) node(t *task) {
	f := t.plan
	// took is written by the fault's own job and read by its way back,
	// which runs after it on the target's queue.
	var took bool
	if err := c.fx.Controls(f.Target); err != nil {
		c.emit(t, Instant, "not applied: "+err.Error())
		return
	}
	do := func(job func(NodeControl)) { c.fx.NodeDo(f.Target, job) }
	down := func(what string, how NodeDown) {
		// Emitted first: the node's missed votes start now.
		c.emit(t, Start, f.Target+" "+what)
		do(func(n NodeControl) {
			if err := n.Down(how); err != nil {
				c.takeEnd(t)
				c.emit(t, End, "not applied: "+f.Action+" failed: "+err.Error())
				return
			}
			took = true
			c.mu.Lock()
			c.nodeDown[f.Target] = t
			c.mu.Unlock()
		})
	}
	back := func(what string, resume bool) {
		c.setEnd(t, func() {
			do(func(n NodeControl) {
				c.mu.Lock()
				open := c.nodeDown[f.Target] == t
				if open {
					delete(c.nodeDown, f.Target)
				}
				c.mu.Unlock()
				if !took || !open {
					return // failed, or ended by a node-start or node-resume
				}
				n.Up(resume, func(err error) {
					detail := what
					if err != nil {
						detail = what + " failed: " + err.Error()
					}
					c.emit(t, End, detail)
				})
			})
		})
	}
	// up runs the node again (node-start, node-resume) and ends the
	// window of the stop, kill or pause that took it down.
	up := func(what string, resume bool) {
		do(func(n NodeControl) {
			c.mu.Lock()
			open := c.nodeDown[f.Target]
			c.mu.Unlock()
			n.Up(resume, func(err error) {
				if err != nil {
					c.emit(t, Instant, "not applied: "+f.Action+" failed: "+err.Error())
					return
				}
				if open == nil {
					c.emit(t, Instant, f.Target+" "+what+"; it was not down")
					return
				}
				c.mu.Lock()
				delete(c.nodeDown, f.Target)
				c.mu.Unlock()
				c.endedBy(open, t, f.Target+" "+what)
			})
		})
	}
	switch f.Action {
	case action.NodeStop, action.NodeKill:
		how := Kill
		if f.Action == action.NodeStop {
			how = Halt
		}
		down("down ("+f.Action+")", how)
		back("started again from its home", false)
	case action.NodeStart:
		up("started again from its home", false)
	case action.NodeRestart:
		if f.Duration > 0 {
			down("restarting from its home", Kill)
			back("started again from its home", false)
			return
		}
		c.emit(t, Start, f.Target+" restarting from its home")
		do(func(n NodeControl) {
			n.Up(false, func(err error) {
				detail := f.Target + " running again"
				if err != nil {
					detail = "restart failed: " + err.Error()
				}
				c.emit(t, End, detail)
			})
		})
	case action.NodePause:
		down("paused (no progress, no answers)", Pause)
		back("resumed", true)
	case action.NodeResume:
		up("resumed", true)
	}
}

// atText says when a fault was due: "height 20" or "30s".
func atText(at scenarios.FaultAt) string {
	if at.Height > 0 {
		return fmt.Sprintf("height %d", at.Height)
	}
	return at.Time.String()
}

// groupsText is a partition's groups: "[a b] | [c d]".
func groupsText(groups [][]string) string {
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = "[" + strings.Join(g, " ") + "]"
	}
	return strings.Join(parts, " | ")
}
