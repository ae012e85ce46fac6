package scenarios

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cometbft/cometbft/types"
)

// validatorSet is the expanded validators, plus what expect entries need to
// explain a name that is not one of them.
type validatorSet struct {
	plans   []ValidatorPlan
	index   map[string]int      // expanded name -> its index in plans
	groups  map[string]string   // written name with count > 1 -> "v-1..v-3"
	members map[string][]string // written name with count > 1 -> its expanded names
	// zones are the validators entries' zone keys, in order, for
	// resolveZones (which knows regions).
	zones []writtenZone
	// sentries are the validators' sentry nodes, in validator order.
	sentries []PeerNodePlan
}

// writtenZone is one validators entry's zone: key is where it was
// written, names the validators it puts there.
type writtenZone struct {
	key, region string
	names       []string
}

// lookup finds an expanded validator by name.
func (vs validatorSet) lookup(name string) (ValidatorPlan, bool) {
	i, ok := vs.index[name]
	if !ok {
		return ValidatorPlan{}, false
	}
	return vs.plans[i], true
}

// names lists the expanded names in declaration order.
func (vs validatorSet) names() []string {
	out := make([]string, len(vs.plans))
	for i, v := range vs.plans {
		out[i] = v.Name
	}
	return out
}

// ref looks up a reference to one expanded validator; msg (with the
// allowed names, when they are few) explains a name that is not one of
// them.
func (vs validatorSet) ref(name string) (v ValidatorPlan, msg string, allowed []string) {
	if v, ok := vs.lookup(name); ok {
		return v, "", nil
	}
	if span := vs.groups[name]; span != "" {
		return ValidatorPlan{}, fmt.Sprintf("%s expands to %s; name one of them", name, span), nil
	}
	names := vs.names()
	msg = fmt.Sprintf("no validator named %q", name)
	if len(names) > maxListedValidators {
		return ValidatorPlan{}, fmt.Sprintf("%s (names are %s..%s)", msg, names[0], names[len(names)-1]), nil
	}
	return ValidatorPlan{}, msg, names
}

func (d *decoder) resolveValidators(raws []rawValidator, profiles profileSet, devices deviceSet, run RunPlan, top *NodePlan) validatorSet {
	const key = "validators"
	vs := validatorSet{index: make(map[string]int), groups: make(map[string]string), members: make(map[string][]string)}
	if !d.written(key) {
		d.fail(d.valuePos(key), key, "required: list at least one validator, e.g. validators: [{name: v, count: 4}]")
		return vs
	}
	if len(raws) == 0 && !d.failed(key) {
		d.fail(d.valuePos(key), key, "needs at least one validator")
		return vs
	}
	owner := make(map[string]int)     // expanded name -> index of the entry that made it
	keyfiles := make(map[string]int)  // key file path -> index of the entry that uses it
	ledgers := make(map[string]int)   // Ledger serial -> index of the entry that uses it
	externals := make(map[string]int) // external signer address -> index of the entry that uses it
	counts := make([]int64, len(raws))
	for i, rv := range raws {
		k := fmt.Sprintf("%s[%d]", key, i)
		nameOK := d.checkName(k+".name", rv.Name, "validator", "v1")
		counts[i] = 1
		if rv.Count != nil {
			switch c := *rv.Count; {
			case c < 1:
				d.fail(d.valuePos(k+".count"), k+".count", fmt.Sprintf("must be at least 1, got %d", c))
			case c > int64(maxValidatorsFor(run.Backend)):
				d.fail(d.valuePos(k+".count"), k+".count", fmt.Sprintf("must be at most %d, got %d (%s)", maxValidatorsFor(run.Backend), c, validatorLimitText))
			default:
				counts[i] = c
			}
		}
		power := int64(defaultPower)
		if rv.Power != nil {
			switch p := *rv.Power; {
			case p < 1:
				d.fail(d.valuePos(k+".power"), k+".power", fmt.Sprintf("must be at least 1, got %d", p))
			case p > types.MaxTotalVotingPower:
				d.fail(d.valuePos(k+".power"), k+".power", fmt.Sprintf("must be at most %d (CometBFT's maximum total voting power)", types.MaxTotalVotingPower))
			default:
				power = p
			}
		}
		signer := d.resolveSigner(k+".signer", rv.Signer, profiles, devices)
		d.checkKeyfileShared(k, i, counts[i], signer, keyfiles)
		d.checkLedgerShared(k, i, counts[i], signer, ledgers)
		d.checkExternalShared(k, i, counts[i], signer, run.Backend, externals)
		node := d.resolveNode(k+".node", rv.Node, run, top)
		if !nameOK {
			continue
		}
		names := expandNames(rv.Name, counts[i])
		if counts[i] > 1 {
			vs.groups[rv.Name] = expansionSpan(rv.Name, counts[i])
			vs.members[rv.Name] = names
		}
		var clash []string
		other := -1
		for _, n := range names {
			if j, taken := owner[n]; taken {
				clash = append(clash, n)
				if other < 0 {
					other = j
				}
			}
		}
		if len(clash) > 0 {
			d.fail(d.valuePos(k+".name"), k+".name", d.clashMessage(raws, counts, i, other, clash))
			continue
		}
		var sentries int64
		if rv.Sentries != nil {
			if sentries = *rv.Sentries; sentries < 0 || sentries > maxSentries {
				d.fail(d.valuePos(k+".sentries"), k+".sentries", fmt.Sprintf("must be 0 to %d, got %d", maxSentries, sentries))
				sentries = 0
			}
		}
		for _, n := range names {
			owner[n] = i
			vs.index[n] = len(vs.plans)
			vp := ValidatorPlan{Name: n, Power: power, Signer: signer.clone(), Node: node, Sentries: sentryNames(n, sentries)}
			vs.plans = append(vs.plans, vp)
			for _, s := range vp.Sentries {
				vs.sentries = append(vs.sentries, PeerNodePlan{Name: s, Role: RoleSentry, SentryOf: n})
			}
		}
		if rv.Zone != nil {
			zoned := slices.Clone(names)
			for _, n := range names {
				zoned = append(zoned, vs.plans[vs.index[n]].Sentries...)
			}
			vs.zones = append(vs.zones, writtenZone{key: k + ".zone", region: *rv.Zone, names: zoned})
		}
	}
	if n := len(vs.plans); n > maxValidatorsFor(run.Backend) {
		d.fail(d.valuePos(key), key, fmt.Sprintf("%d validators after count expansion; %s", n, validatorLimitText))
	}
	var total int64
	for _, v := range vs.plans {
		// Each power is <= MaxTotalVotingPower (MaxInt64/8), so this sum
		// cannot overflow before it crosses the limit.
		if total += v.Power; total > types.MaxTotalVotingPower {
			d.fail(d.valuePos(key), key, fmt.Sprintf("total voting power exceeds CometBFT's maximum %d", types.MaxTotalVotingPower))
			break
		}
	}
	return vs
}

// expandNames applies count: 1 keeps the name, N > 1 gives name-1..name-N.
func expandNames(name string, count int64) []string {
	if count == 1 {
		return []string{name}
	}
	out := make([]string, count)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", name, i+1)
	}
	return out
}

func expansionSpan(name string, count int64) string {
	return fmt.Sprintf("%s-1..%s-%d", name, name, count)
}

// clashMessage explains a duplicate name, saying where each side came from
// when count expansion is involved.
func (d *decoder) clashMessage(raws []rawValidator, counts []int64, this, other int, clash []string) string {
	by := fmt.Sprintf("validators[%d] (line %d)", other, d.valuePos(fmt.Sprintf("validators[%d].name", other)).Line)
	if counts[other] > 1 {
		by += fmt.Sprintf(", where %q with count %d expands to %s", raws[other].Name, counts[other], expansionSpan(raws[other].Name, counts[other]))
	}
	name, count := raws[this].Name, counts[this]
	if count == 1 {
		return fmt.Sprintf("duplicate validator name %q: already used by %s", name, by)
	}
	quoted := make([]string, len(clash))
	for i, c := range clash {
		quoted[i] = fmt.Sprintf("%q", c)
	}
	verb := "is"
	if len(clash) > 1 {
		verb = "are"
	}
	return fmt.Sprintf("%q with count %d expands to %s, but %s %s already used by %s",
		name, count, expansionSpan(name, count), strings.Join(quoted, ", "), verb, by)
}

// checkKeyfileShared refuses a key file used by two validators: both would
// sign with one key, which CometBFT refuses in a validator set (and which
// would make every vote of one a double sign of the other).
func (d *decoder) checkKeyfileShared(k string, entry int, count int64, signer SignerPlan, keyfiles map[string]int) {
	if signer.Keyfile == nil || signer.Keyfile.Path == "" || d.failed(k+".signer.path") {
		return
	}
	key := k + ".signer.path"
	path := filepath.Clean(signer.Keyfile.Path)
	if count > 1 {
		d.fail(d.valuePos(key), key, fmt.Sprintf("with count %d, every expanded validator would sign with this one key file; remove path (each key then lives in its validator's home) or write one entry per validator", count))
		return
	}
	if j, taken := keyfiles[path]; taken {
		d.fail(d.valuePos(key), key, fmt.Sprintf("key file %q is already used by validators[%d] (line %d); each validator needs its own key", signer.Keyfile.Path, j, d.valuePos(fmt.Sprintf("validators[%d]", j)).Line))
		return
	}
	keyfiles[path] = entry
}
