package scenarios

import (
	"fmt"
	"slices"
	"sort"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/signers/profiles"
)

// builtinProfiles are the device profiles valnet ships, for simulated
// signers, read from the catalog itself (signers/profiles is data only, it
// knows no engine), so the two can never drift. A scenario's own profiles
// may not reuse these names.
var builtinProfiles = profiles.Names()

// BuiltinProfileNames lists the built-in device profile names that a
// simulated signer's profile may name, in documentation order.
func BuiltinProfileNames() []string { return slices.Clone(builtinProfiles) }

// minPayloadRows is the smallest by_payload table: two points to
// interpolate between.
const minPayloadRows = 2

// profileSet is the scenario's own profiles, for signers to refer to.
type profileSet struct {
	plans   map[string]ProfilePlan // nil when the scenario defines none
	defined []string               // every name written under profiles, sorted, even ones with errors
}

// has reports whether name is a built-in or scenario profile. A scenario
// profile with errors still counts: its own errors say what is wrong.
func (ps profileSet) has(name string) bool {
	return contains(builtinProfiles, name) || contains(ps.defined, name)
}

// allowed lists the profile names a signer may use: the scenario's own
// (leaving out names that are wrong in themselves), then the built-in ones.
func (ps profileSet) allowed() []string {
	var out []string
	for _, name := range ps.defined {
		if namePattern.MatchString(name) && len(name) <= maxNameLen && !contains(builtinProfiles, name) {
			out = append(out, name)
		}
	}
	return append(out, builtinProfiles...)
}

func (d *decoder) resolveProfiles(raws map[string]rawProfile) profileSet {
	var ps profileSet
	if len(raws) == 0 {
		return ps
	}
	ps.plans = make(map[string]ProfilePlan, len(raws))
	for name := range raws {
		ps.defined = append(ps.defined, name)
	}
	sort.Strings(ps.defined)
	for _, name := range ps.defined {
		key := "profiles." + name
		d.checkProfileName(key, name)
		ps.plans[name] = d.resolveProfile(key, name, raws[name])
	}
	return ps
}

// checkProfileName checks a name defined under profiles.
func (d *decoder) checkProfileName(key, name string) {
	if d.checkKeyName(key, name, "profile") && contains(builtinProfiles, name) {
		d.fail(d.keyPos(key), key, fmt.Sprintf("%q is a built-in profile; give yours another name (a signer can use the built-in one as it is)", name))
	}
}

// checkKeyName checks a name the user chose as a mapping key (a profile,
// a device): the alphabet and length of every valnet name.
func (d *decoder) checkKeyName(key, name, what string) bool {
	p := d.keyPos(key)
	switch {
	case !namePattern.MatchString(name):
		d.fail(p, key, fmt.Sprintf("%q is not a valid %s name: %s", name, what, namePatternAdvice))
	case len(name) > maxNameLen:
		d.fail(p, key, fmt.Sprintf("%s name is %d characters long; the maximum is %d", what, len(name), maxNameLen))
	default:
		return true
	}
	return false
}

func (d *decoder) resolveProfile(key, name string, rp rawProfile) ProfilePlan {
	pp := ProfilePlan{Name: name, Description: rp.Description, Source: rp.Source}
	if d.failed(key) {
		return pp // not a mapping; already reported
	}
	latKey, tableKey := key+".latency", key+".by_payload"
	hasLat := d.written(latKey) && (rp.Latency != nil || d.failed(latKey))
	hasTable := d.written(tableKey) && (rp.ByPayload != nil || d.failed(tableKey))
	switch {
	case hasLat && hasTable:
		d.fail(d.keyPos(key), key, "give either latency or by_payload, not both: a profile is one distribution of signing times, or one table of them by payload size")
	case !hasLat && !hasTable:
		d.fail(d.keyPos(key), key, "needs latency (a distribution of signing times, e.g. {dist: lognormal, p50: 120ms, p99: 300ms}) or by_payload (a table of signing time by payload size)")
	}
	if rp.Latency != nil {
		pp.Latency = d.resolveLatencyNoPhases(latKey, rp.Latency, "a profile describes a device, whatever it signs; phases is not allowed here (a fault or a signer's own latency can target phases)")
		if pp.Latency != nil {
			pp.Latency.Phases = phase.All()
		}
	}
	if rp.ByPayload != nil {
		pp.ByPayload = d.resolvePayloadTable(tableKey, *rp.ByPayload)
	}
	return pp
}

// resolvePayloadTable checks a by_payload table: at least two rows, each
// with bytes and latency, bytes strictly increasing (so the table is
// sorted as written).
func (d *decoder) resolvePayloadTable(key string, rows []rawPayloadPoint) []PayloadPoint {
	if len(rows) < minPayloadRows {
		d.fail(d.valuePos(key), key, fmt.Sprintf("needs at least %d rows to interpolate between, got %d", minPayloadRows, len(rows)))
	}
	var (
		out  []PayloadPoint
		prev *int64 // bytes of the nearest row above that has them
	)
	for i, r := range rows {
		rk := fmt.Sprintf("%s[%d]", key, i)
		if d.failed(rk) {
			prev = nil
			continue
		}
		bytesKey, latKey := rk+".bytes", rk+".latency"
		if r.Bytes == nil && !d.failed(bytesKey) {
			d.fail(d.valuePos(rk), bytesKey, "required: the payload size in bytes, e.g. bytes: 32")
		}
		if r.Latency == nil && !d.failed(latKey) {
			d.fail(d.valuePos(rk), latKey, "required: the signing time for that payload size, e.g. latency: 105ms")
		}
		if r.Bytes != nil {
			switch b := *r.Bytes; {
			case b < 1:
				d.fail(d.valuePos(bytesKey), bytesKey, fmt.Sprintf("must be at least 1, got %d", b))
			case prev != nil && b <= *prev:
				d.fail(d.valuePos(bytesKey), bytesKey, fmt.Sprintf("%d is not greater than the row before (%d): list rows by strictly increasing bytes", b, *prev))
			}
		}
		prev = r.Bytes
		if r.Bytes != nil && r.Latency != nil {
			out = append(out, PayloadPoint{Bytes: int(*r.Bytes), Latency: *r.Latency})
		}
	}
	return out
}

// resolveLatencyNoPhases resolves a latency model where phases are not
// the model's business; why explains where they belong instead.
func (d *decoder) resolveLatencyNoPhases(key string, rl *rawLatency, why string) *LatencyPlan {
	if k := key + ".phases"; d.written(k) && !d.failed(k) {
		d.fail(d.keyPos(k), k, why) // which also stops resolveLatency checking them
	}
	return d.resolveLatency(key, rl)
}

// DeviceProfile is the device profile name names: one of the scenario's
// `profiles:` (a user-defined model) or a built-in.
func (p *Plan) DeviceProfile(name string) (profiles.Profile, error) {
	if pp, ok := p.Profiles[name]; ok {
		out := profiles.Profile{Name: pp.Name, Description: pp.Description + " (user-defined model)", Source: pp.Source}
		if pp.Latency != nil {
			spec := pp.Latency.Spec
			out.Latency = &spec
		}
		for _, pt := range pp.ByPayload {
			out.ByPayload = append(out.ByPayload, profiles.Point{Bytes: pt.Bytes, Latency: pt.Latency})
		}
		return out, out.Validate()
	}
	if bp, ok := profiles.Builtin(name); ok {
		return bp, nil
	}
	return profiles.Profile{}, fmt.Errorf("unknown device profile %q", name)
}
