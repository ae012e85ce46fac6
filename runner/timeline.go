package runner

import (
	"fmt"
	"strings"
	"time"

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
	signer  *validatorSigner
	started bool
}

type scheduled struct {
	at time.Time
	do func()
}

func newTimeline(r *run) *timeline {
	t := &timeline{r: r}
	byName := map[string]*validatorSigner{}
	for i, m := range r.members {
		byName[m.plan.Name] = r.signers[i]
	}
	for i, f := range r.plan.Faults {
		task := &faultTask{plan: f, id: fmt.Sprintf("faults[%d]:%s", i, f.Action), signer: byName[f.Target]}
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
		model, err := signers.NewModel(*modelSpec(f.Latency), t.r.seed, task.id)
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
