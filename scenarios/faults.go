package scenarios

import (
	"fmt"
	"github.com/valnet/valnet/internal/action"
	"math"
	"slices"
	"strings"
)

// faultAction says which keys one fault action takes. This table is the
// list of actions: adding one is adding a row here, its constant in
// plan.go, its entry in schema.json and its paragraph in docs/scenario.md.
// TestJSONSchemaFaultRules holds schema.json's per-action rules to it.
type faultAction struct {
	Name       string
	Verb       string        // what it does to a signature, for messages ("drop"); durWindow actions
	Latency    bool          // takes latency, and requires it
	LatencyDoc string        // Latency: what the latency is, for messages
	Phases     bool          // takes phases (default: all)
	Round      bool          // at may give a round besides the height
	Remote     bool          // the target's signer must be remote (via tcp or unix)
	Cosigner   bool          // the target is a cosigner of a threshold signer, NAME.cosigner-K
	Signer     bool          // acts inside the target's signer: with run.backend process that signer must be the runner's (via tcp or unix)
	Target     targetRule    // whether it takes a target
	NoTarget   string        // targetNone: why, for messages
	Link       bool          // takes from, to, one_way, jitter and bandwidth
	Groups     bool          // takes groups, and requires them
	Process    string        // non-empty: needs run.backend process or docker; why, for messages
	Duration   faultDuration // what duration means
	Window     string        // what the duration is, for messages
	Whole      string        // actions without phases: why, for messages
	NoDuration string        // durNone: why, for messages
}

// targetRule says whether an action takes a target.
type targetRule int

const (
	targetRequired targetRule = iota // required: the validator it hits
	targetOptional                   // optional (network-latency: every link of one validator)
	targetNone                       // refused: the action names no single validator
)

// faultDuration is how an action reads its duration.
type faultDuration int

const (
	durUntilEnd faultDuration = iota // optional, >= 0; 0 or absent: until the run ends (or the fault is undone by another)
	durWindow                        // optional, > 0; absent: at at.height (and at.round) only, so required with at.time
	durRequired                      // required, > 0
	durDowntime                      // optional, >= 0; default 0
	durNone                          // refused: the action is instantaneous
)

// Texts shared by several rows.
const (
	wholeNode     = "it acts on the whole node"
	wholeNetwork  = "it acts on the network, whatever the links carry"
	nodeRunsAgain = "the node runs from then on"
)

var faultActions = []faultAction{
	{Name: action.SignerDelay, Signer: true, Latency: true, Phases: true, Duration: durUntilEnd,
		LatencyDoc: "the extra delay before each signature, e.g. latency: 2s or latency: {dist: uniform, min: 1s, max: 3s}"},
	{Name: action.SignerDrop, Signer: true, Verb: "drop", Phases: true, Round: true, Duration: durWindow,
		Window: "the window in which signatures are dropped"},
	{Name: action.SignerError, Signer: true, Verb: "fail", Phases: true, Round: true, Duration: durWindow,
		Window: "the window in which signing fails"},
	{Name: action.SignerOutage, Remote: true, Duration: durRequired,
		Window: "how long the signer stays unreachable", Whole: "it makes the whole signer unreachable"},
	{Name: action.SignerRestart, Remote: true, Duration: durDowntime,
		Whole: "it stops and starts the whole signer"},
	{Name: action.CosignerDown, Cosigner: true, Duration: durUntilEnd,
		Whole: "it stops the whole cosigner"},
	{Name: action.CosignerSlow, Cosigner: true, Latency: true, Duration: durUntilEnd,
		LatencyDoc: "the delay before each of the cosigner's answers, e.g. latency: 400ms", Whole: "it delays every answer of the cosigner"},
	{Name: action.NetworkLatency, Target: targetOptional, Latency: true, Link: true, Duration: durUntilEnd,
		LatencyDoc: "the links' one-way latency while the fault lasts, e.g. latency: 200ms", Whole: wholeNetwork},
	{Name: action.Partition, Target: targetNone, Groups: true, Duration: durUntilEnd,
		NoTarget: "its groups say who is cut off from whom", Whole: wholeNetwork},
	{Name: action.Isolate, Duration: durUntilEnd, Whole: wholeNetwork},
	{Name: action.Heal, Target: targetNone, Duration: durNone, Whole: wholeNetwork,
		NoTarget: "it ends every partition and isolation", NoDuration: "it ends every partition and isolation at once"},
	{Name: action.NodeStop, Duration: durUntilEnd, Whole: wholeNode},
	{Name: action.NodeStart, Duration: durNone, Whole: wholeNode, NoDuration: nodeRunsAgain},
	{Name: action.NodeKill, Duration: durUntilEnd, Whole: wholeNode},
	{Name: action.NodePause, Duration: durUntilEnd, Whole: wholeNode,
		Process: "in-process nodes cannot be frozen: they share valnet's own process (a paused node is a stopped OS process)"},
	{Name: action.NodeResume, Duration: durNone, Whole: wholeNode, NoDuration: nodeRunsAgain,
		Process: "in-process nodes cannot be frozen, so there is nothing to resume"},
	{Name: action.NodeRestart, Duration: durDowntime, Whole: wholeNode},
}

// faultLinkKeys are the keys of a fault that only Link actions take.
var faultLinkKeys = []string{"from", "to", "one_way", "jitter", "bandwidth"}

// FaultActionInfo is what the docs must say of a fault action.
type FaultActionInfo struct {
	Name string
	// OwnProcess: the action needs nodes in processes of their own
	// (run.backend process or docker).
	OwnProcess bool
}

// FaultActions lists every fault action in documentation order.
func FaultActions() []FaultActionInfo {
	out := make([]FaultActionInfo, len(faultActions))
	for i, a := range faultActions {
		out[i] = FaultActionInfo{Name: a.Name, OwnProcess: a.Process != ""}
	}
	return out
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
		fp.At = d.resolveFaultAt(key+".at", rf.At, act, actOK, run)
		if rf.Duration != nil {
			fp.Duration = *rf.Duration
		}
		if !actOK {
			// Which keys belong depends on the action; their values
			// can be checked all the same.
			if k := key + ".target"; d.written(k) && !d.failed(k) {
				d.validatorRef(k, rf.Target, vals)
			}
			if rf.Latency != nil {
				d.resolveLatency(key+".latency", rf.Latency)
			}
			d.resolvePhases(key+".phases", rf.Phases, "cover")
			d.resolveBandwidth(key+".bandwidth", rf.Bandwidth)
			out = append(out, fp)
			continue
		}
		target, targetOK := d.resolveFaultTarget(key, rf, act, vals)
		d.checkFaultDuration(key, rf, act)
		latKey := key + ".latency"
		switch {
		case act.Latency && rf.Latency == nil && !d.failed(latKey):
			d.fail(d.valuePos(latKey), latKey, fmt.Sprintf("required for %s: %s", act.Name, act.LatencyDoc))
		case act.Latency && act.Phases:
			fp.Latency = d.resolveLatencyNoPhases(latKey, rf.Latency, fmt.Sprintf("phases go on the fault itself (%s.phases), not inside its latency", key))
		case act.Latency:
			fp.Latency = d.resolveLatencyNoPhases(latKey, rf.Latency, linkLatencyNoPhases)
		case d.written(latKey):
			d.fail(d.keyPos(latKey), latKey, fmt.Sprintf("only %s take latency", faultActionsWith(func(a faultAction) bool { return a.Latency })))
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
		d.resolveFaultLink(key, rf, act, vals, &fp)
		fp.Groups = d.resolveGroups(key+".groups", rf.Groups, act, vals)
		if act.Process != "" && run.Backend != backendProcess && run.Backend != backendDocker && !d.failed("run.backend") {
			k := key + ".action"
			d.fail(d.valuePos(k), k, fmt.Sprintf("%s needs run.backend: process or docker; %s", act.Name, act.Process))
		}
		if act.Name == action.SignerRestart && targetOK && target.Signer.Type == SignerExternal {
			k := key + ".action"
			d.fail(d.valuePos(k), k, fmt.Sprintf("%s cannot restart %s's external signer: valnet does not run it (restart your KMS yourself, or cut the link with signer-outage)", act.Name, target.Name))
		}
		if act.Remote && targetOK && target.Signer.Via == ViaDirect && target.Signer.Type != SignerExternal {
			k := key + ".target"
			d.fail(d.valuePos(k), k, fmt.Sprintf("%s needs a remote signer (via: tcp or unix) on %s; %s signs in-process (via: direct)", act.Name, target.Name, target.Name))
		}
		out = append(out, fp)
	}
	return out
}

// resolveFaultTarget applies the action's target rule.
func (d *decoder) resolveFaultTarget(key string, rf rawFault, act faultAction, vals validatorSet) (ValidatorPlan, bool) {
	k := key + ".target"
	switch act.Target {
	case targetNone:
		if d.written(k) {
			d.fail(d.keyPos(k), k, fmt.Sprintf("%s takes no target: %s", act.Name, act.NoTarget))
		}
		return ValidatorPlan{}, false
	case targetOptional:
		if !d.written(k) || d.failed(k) {
			return ValidatorPlan{}, false
		}
		return d.validatorRef(k, rf.Target, vals)
	default:
		if act.Name == action.Isolate && strings.HasSuffix(rf.Target, SignerEndpointSuffix) {
			return d.signerLinkTarget(k, rf.Target, vals)
		}
		if _, _, ok := ParseCosignerEndpoint(rf.Target); ok && (act.Cosigner || act.Name == action.Isolate) {
			return d.cosignerTarget(k, rf.Target, vals)
		}
		if act.Cosigner && d.written(k) && !d.failed(k) {
			d.fail(d.valuePos(k), k, fmt.Sprintf("%s targets a cosigner of a threshold signer: NAME%s1, NAME%s2, ... (got %q)", act.Name, CosignerEndpointInfix, CosignerEndpointInfix, rf.Target))
			return ValidatorPlan{}, false
		}
		return d.checkFaultTarget(k, rf.Target, vals)
	}
}

// cosignerTarget is a target NAME.cosigner-K: cosigner K of NAME's
// threshold signer.
func (d *decoder) cosignerTarget(k, target string, vals validatorSet) (ValidatorPlan, bool) {
	name, n, _ := ParseCosignerEndpoint(target)
	v, ok := d.validatorRef(k, name, vals)
	if !ok {
		return v, false
	}
	tp := v.Signer.Threshold
	switch {
	case tp == nil:
		d.fail(d.valuePos(k), k, fmt.Sprintf("%s's signer is type %s, not threshold: only a threshold signer has cosigners", name, v.Signer.Type))
		return v, false
	case n > tp.Cosigners:
		d.fail(d.valuePos(k), k, fmt.Sprintf("%s's threshold signer has cosigners 1..%d, not %d", name, tp.Cosigners, n))
		return v, false
	}
	return v, true
}

// signerLinkTarget is an isolate target NAME.signer: NAME's signer link
// (signer.link), cut while its node runs on.
func (d *decoder) signerLinkTarget(k, target string, vals validatorSet) (ValidatorPlan, bool) {
	name := strings.TrimSuffix(target, SignerEndpointSuffix)
	v, ok := d.validatorRef(k, name, vals)
	if ok && v.Signer.Link == nil {
		d.fail(d.valuePos(k), k, fmt.Sprintf("%s has no signer link: give its signer a link (via: tcp, link: {latency: ...}) to isolate its signer, or isolate %s to cut its node", name, name))
		return v, false
	}
	return v, ok
}

// resolveFaultLink reads the link keys of network-latency: one link
// (from, to, one_way), every link of the target, or every link; and the
// jitter and bandwidth they get besides the latency.
func (d *decoder) resolveFaultLink(key string, rf rawFault, act faultAction, vals validatorSet, fp *FaultPlan) {
	if !act.Link {
		for _, name := range faultLinkKeys {
			if k := key + "." + name; d.written(k) {
				d.fail(d.keyPos(k), k, fmt.Sprintf("only %s takes %s", faultActionsWith(func(a faultAction) bool { return a.Link }), name))
			}
		}
		return
	}
	fromKey, toKey, oneWayKey := key+".from", key+".to", key+".one_way"
	hasFrom, hasTo, hasTarget := d.written(fromKey), d.written(toKey), d.written(key+".target")
	switch {
	case hasTarget && (hasFrom || hasTo):
		k := fromKey
		if !hasFrom || hasTo && before(d.keyPos(toKey), d.keyPos(fromKey)) {
			k = toKey
		}
		d.fail(d.keyPos(k), k, "give either target (every link of one validator) or from and to (one link), not both")
	case hasFrom && !hasTo:
		d.fail(d.valuePos(key), toKey, "from needs to: the validator at the link's other end")
	case hasTo && !hasFrom:
		d.fail(d.valuePos(key), fromKey, "to needs from: the validator at the link's other end")
	case hasFrom && hasTo:
		_, fromOK := d.validatorRef(fromKey, rf.From, vals)
		_, toOK := d.validatorRef(toKey, rf.To, vals)
		if fromOK && toOK && rf.From == rf.To {
			d.fail(d.valuePos(toKey), toKey, fmt.Sprintf("from and to are both %s: a link joins two validators", rf.From))
		} else if fromOK && toOK {
			fp.From, fp.To = rf.From, rf.To
		}
	}
	if d.written(oneWayKey) && !(hasFrom && hasTo) {
		d.fail(d.keyPos(oneWayKey), oneWayKey, "one_way needs from and to: it makes the change apply from -> to only")
	}
	if rf.OneWay != nil {
		fp.OneWay = *rf.OneWay
	}
	link := &LinkPlan{Bandwidth: d.resolveBandwidth(key+".bandwidth", rf.Bandwidth)}
	if fp.Latency != nil {
		link.Latency = fp.Latency.clone()
	}
	if rf.Jitter != nil {
		link.Jitter = *rf.Jitter
	}
	fp.Link = link
}

// resolveGroups checks a partition's groups: at least two, none empty,
// known names, no validator in two.
func (d *decoder) resolveGroups(key string, groups [][]string, act faultAction, vals validatorSet) [][]string {
	switch {
	case !act.Groups:
		if d.written(key) {
			d.fail(d.keyPos(key), key, fmt.Sprintf("only %s takes groups", faultActionsWith(func(a faultAction) bool { return a.Groups })))
		}
		return nil
	case d.failed(key):
		return nil
	case groups == nil:
		d.fail(d.valuePos(key), key, fmt.Sprintf("required for %s: the sides, each a list of validators, e.g. groups: [[v1, v2], [v3, v4]]", act.Name))
		return nil
	case len(groups) < 2:
		d.fail(d.valuePos(key), key, fmt.Sprintf("needs at least 2 groups, got %d: a partition cuts the links between groups (validators in no group keep every link)", len(groups)))
	}
	side := make(map[string]int)
	for gi, g := range groups {
		gk := fmt.Sprintf("%s[%d]", key, gi)
		if d.failed(gk) {
			continue
		}
		if len(g) == 0 {
			d.fail(d.valuePos(gk), gk, "group is empty; list at least one validator")
			continue
		}
		for vi, v := range g {
			vk := fmt.Sprintf("%s[%d]", gk, vi)
			if d.failed(vk) {
				continue
			}
			if _, ok := d.validatorRef(vk, v, vals); !ok {
				continue
			}
			switch prev, dup := side[v]; {
			case dup && prev == gi:
				d.fail(d.valuePos(vk), vk, fmt.Sprintf("%s is listed twice in this group", v))
			case dup:
				d.fail(d.valuePos(vk), vk, fmt.Sprintf("%s is already in %s[%d]; groups must not overlap", v, key, prev))
			default:
				side[v] = gi
			}
		}
	}
	out := make([][]string, len(groups))
	for i, g := range groups {
		out[i] = slices.Clone(g)
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
	msg := fmt.Sprintf("unknown fault action %q", name) + didYouMean(name, faultActionNames())
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
	return d.validatorRef(key, name, vals)
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
	case durNone:
		if d.written(k) {
			d.fail(d.keyPos(k), k, fmt.Sprintf("%s takes no duration: %s", act.Name, act.NoDuration))
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
