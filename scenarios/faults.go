package scenarios

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// faultAction says which keys one fault action takes. This table is the
// list of actions: adding one is adding a row here, its constant in
// plan.go, its entry in schema.json and its paragraph in docs/scenario.md.
type faultAction struct {
	Name     string
	Verb     string        // what it does to a signature, for messages ("drop"); durWindow actions
	Latency  bool          // takes latency, and requires it
	Phases   bool          // takes phases (default: all)
	Round    bool          // at may give a round besides the height
	Remote   bool          // the target's signer must be remote (via tcp or unix)
	Duration faultDuration // what duration means
	Window   string        // what the duration is, for messages
	Whole    string        // actions without phases: why, for messages
}

// faultDuration is how an action reads its duration.
type faultDuration int

const (
	durUntilEnd faultDuration = iota // optional, >= 0; 0 or absent: until the run ends
	durWindow                        // optional, > 0; absent: at at.height (and at.round) only, so required with at.time
	durRequired                      // required, > 0
	durDowntime                      // optional, >= 0; default 0
)

var faultActions = []faultAction{
	{Name: FaultSignerDelay, Latency: true, Phases: true, Duration: durUntilEnd},
	{Name: FaultSignerDrop, Verb: "drop", Phases: true, Round: true, Duration: durWindow,
		Window: "the window in which signatures are dropped"},
	{Name: FaultSignerError, Verb: "fail", Phases: true, Round: true, Duration: durWindow,
		Window: "the window in which signing fails"},
	{Name: FaultSignerOutage, Remote: true, Duration: durRequired,
		Window: "how long the signer stays unreachable", Whole: "it makes the whole signer unreachable"},
	{Name: FaultSignerRestart, Remote: true, Duration: durDowntime,
		Whole: "it stops and starts the whole signer"},
}

// faultActionNames lists the actions in documentation order.
func faultActionNames() []string {
	out := make([]string, len(faultActions))
	for i, a := range faultActions {
		out[i] = a.Name
	}
	return out
}

// faultActionsWith lists the actions for which has is true, as prose.
func faultActionsWith(has func(faultAction) bool) string {
	var names []string
	for _, a := range faultActions {
		if has(a) {
			names = append(names, a.Name)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func (d *decoder) resolveFaults(raws []rawFault, vals validatorSet, run RunPlan) []FaultPlan {
	var out []FaultPlan
	for i, rf := range raws {
		key := fmt.Sprintf("faults[%d]", i)
		if d.failed(key) {
			continue // not a mapping; already reported
		}
		fp := FaultPlan{Action: rf.Action, Target: rf.Target, Pos: d.valuePos(key)}
		act, actOK := d.checkFaultAction(key+".action", rf.Action)
		target, targetOK := d.checkFaultTarget(key+".target", rf.Target, vals)
		fp.At = d.resolveFaultAt(key+".at", rf.At, act, actOK, run)
		if rf.Duration != nil {
			fp.Duration = *rf.Duration
		}
		if !actOK {
			// Whether latency and phases belong depends on the action;
			// their values can be checked all the same.
			if rf.Latency != nil {
				d.resolveLatency(key+".latency", rf.Latency)
			}
			d.resolvePhases(key+".phases", rf.Phases, "cover")
			out = append(out, fp)
			continue
		}
		d.checkFaultDuration(key, rf, act)
		latKey := key + ".latency"
		switch {
		case act.Latency && rf.Latency == nil && !d.failed(latKey):
			d.fail(d.valuePos(latKey), latKey, fmt.Sprintf("required for %s: the extra delay before each signature, e.g. latency: 2s or latency: {dist: uniform, min: 1s, max: 3s}", act.Name))
		case act.Latency:
			fp.Latency = d.resolveLatencyNoPhases(latKey, rf.Latency, fmt.Sprintf("phases go on the fault itself (%s.phases), not inside its latency", key))
		case d.written(latKey):
			d.fail(d.keyPos(latKey), latKey, fmt.Sprintf("only %s takes latency", faultActionsWith(func(a faultAction) bool { return a.Latency })))
		}
		phasesKey := key + ".phases"
		switch {
		case act.Phases:
			fp.Phases = d.resolvePhases(phasesKey, rf.Phases, "cover")
			if fp.Latency != nil {
				fp.Latency.Phases = slices.Clone(fp.Phases)
			}
		case d.written(phasesKey):
			d.fail(d.keyPos(phasesKey), phasesKey, fmt.Sprintf("%s takes no phases: %s", act.Name, act.Whole))
		}
		if act.Remote && targetOK && target.Signer.Via == ViaDirect {
			k := key + ".target"
			d.fail(d.valuePos(k), k, fmt.Sprintf("%s needs a remote signer (via: tcp or unix) on %s; %s signs in-process (via: direct)", act.Name, target.Name, target.Name))
		}
		out = append(out, fp)
	}
	return out
}

// checkFaultAction looks up a fault's action.
func (d *decoder) checkFaultAction(key, name string) (faultAction, bool) {
	if d.failed(key) {
		return faultAction{}, false
	}
	if !d.written(key) {
		d.fail(d.valuePos(key), key, "required: say what the fault does", faultActionNames()...)
		return faultAction{}, false
	}
	for _, a := range faultActions {
		if a.Name == name {
			return a, true
		}
	}
	msg := fmt.Sprintf("unknown fault action %q", name)
	if s := suggest(name, faultActionNames()); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	d.fail(d.valuePos(key), key, msg, faultActionNames()...)
	return faultAction{}, false
}

// checkFaultTarget looks up the validator a fault hits.
func (d *decoder) checkFaultTarget(key, name string, vals validatorSet) (ValidatorPlan, bool) {
	if d.failed(key) {
		return ValidatorPlan{}, false
	}
	if !d.written(key) {
		d.fail(d.valuePos(parentKey(key)), key, "required: name the validator the fault hits, e.g. target: v1")
		return ValidatorPlan{}, false
	}
	if len(vals.plans) == 0 && d.failed("validators") {
		return ValidatorPlan{}, false // no validators to look it up in; that is reported already
	}
	return d.checkValidatorRef(key, name, vals)
}

// resolveFaultAt checks when a fault starts.
func (d *decoder) resolveFaultAt(key string, ra *rawFaultAt, act faultAction, actOK bool, run RunPlan) FaultAt {
	var at FaultAt
	if d.failed(key) {
		return at
	}
	if ra == nil {
		d.fail(d.valuePos(key), key, "required: when the fault starts, e.g. at: {height: 10} or at: {time: 30s}")
		return at
	}
	heightKey, roundKey, timeKey := key+".height", key+".round", key+".time"
	hasHeight, hasRound, hasTime := d.written(heightKey), d.written(roundKey), d.written(timeKey)
	switch {
	case hasHeight && hasTime:
		d.fail(d.valuePos(key), key, "give either height or time, not both")
	case !hasHeight && !hasTime && !hasRound: // a lone round gets its own message below
		d.fail(d.valuePos(key), key, "needs height (a block height, >= 1) or time (how long after the network started, e.g. 30s)")
	}
	if ra.Height != nil {
		switch h := *ra.Height; {
		case h < 1:
			d.fail(d.valuePos(heightKey), heightKey, fmt.Sprintf("must be at least 1, got %d", h))
		case h > run.Heights && !d.failed("run.heights"):
			d.fail(d.valuePos(heightKey), heightKey, fmt.Sprintf("height %d is after the run's last height, %d (run.heights); the fault would never happen", h, run.Heights))
		default:
			at.Height = h
		}
	}
	if ra.Time != nil {
		switch t := *ra.Time; {
		case t == 0:
			d.fail(d.valuePos(timeKey), timeKey, "must be greater than 0: it counts from when the network started (for the start of the run, use height: 1)")
		case t >= run.MaxDuration && !d.failed("run.max_duration"):
			d.fail(d.valuePos(timeKey), timeKey, fmt.Sprintf("time %s is not before the run's hard stop, %s (run.max_duration); the fault would never happen", t, run.MaxDuration))
		default:
			at.Time = t
		}
	}
	if hasRound && !d.failed(roundKey) {
		switch r := *ra.Round; {
		case !hasHeight:
			d.fail(d.keyPos(roundKey), roundKey, "round needs height: it counts the rounds of that height, e.g. at: {height: 5, round: 0}")
		case actOK && !act.Round:
			d.fail(d.keyPos(roundKey), roundKey, fmt.Sprintf("round only applies to %s", faultActionsWith(func(a faultAction) bool { return a.Round })))
		case r < 0:
			d.fail(d.valuePos(roundKey), roundKey, fmt.Sprintf("must be at least 0, got %d", r))
		case r > math.MaxInt32:
			d.fail(d.valuePos(roundKey), roundKey, fmt.Sprintf("must be at most %d, got %d", math.MaxInt32, r))
		default:
			at.Round, at.HasRound = int32(r), true
		}
	}
	return at
}

// checkFaultDuration applies the action's reading of duration.
func (d *decoder) checkFaultDuration(key string, rf rawFault, act faultAction) {
	k := key + ".duration"
	if d.failed(k) {
		return
	}
	zero := rf.Duration != nil && *rf.Duration == 0
	switch act.Duration {
	case durRequired:
		if rf.Duration == nil {
			d.fail(d.valuePos(key), k, fmt.Sprintf("required for %s: %s, e.g. duration: 15s", act.Name, act.Window))
		} else if zero {
			d.fail(d.valuePos(k), k, fmt.Sprintf("must be greater than 0 for %s: %s", act.Name, act.Window))
		}
	case durWindow:
		atTime := rf.At != nil && rf.At.Time != nil && !d.written(key+".at.height")
		switch {
		case zero:
			d.fail(d.valuePos(k), k, fmt.Sprintf("must be greater than 0: it is %s (remove it to %s only at the height in at)", act.Window, act.Verb))
		case rf.Duration == nil && atTime:
			d.fail(d.valuePos(key), k, fmt.Sprintf("required for %s at a time: %s (only a fault at a height may leave it out, and then hits that height only)", act.Name, act.Window))
		}
	}
}
