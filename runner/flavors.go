package runner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/valnet/valnet/internal/cmtversion"
	"github.com/valnet/valnet/nodes"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers"
	"github.com/valnet/valnet/sim"
)

// flavors is what runs each validator's node, by name, as resolveFlavors
// found it.
type flavors map[string]*nodes.Flavor

// resolveFlavors reads every node binary's version and defaults (once per
// binary) and checks the scenario against them: a declared node.version,
// node.config keys, one CometBFT line for the whole network, vote
// extensions, and a signer dialect written for another version. The sim
// runs no binary: its line is node.version (default v1.0).
func resolveFlavors(ctx context.Context, plan *scenarios.Plan) (flavors, Problems) {
	var ps Problems
	add := func(key string, pos scenarios.Pos, err error) {
		if err != nil {
			ps = append(ps, Problem{Key: key, Pos: pos, Message: err.Error()})
		}
	}
	onSim := plan.Run.Backend == scenarios.BackendSim
	out := flavors{}
	lines := map[string][]string{} // line -> validators
	top, said := map[scenarios.Pos]bool{}, map[scenarios.Pos]bool{}
	for _, s := range plan.Node.Config {
		top[s.Pos] = true
	}
	for _, v := range plan.Validators {
		at := "validators[" + v.Name + "].node"
		np := v.Node
		f := nodes.OwnFlavor()
		if np.Binary != "" {
			var err error
			if f, err = nodes.ReadFlavor(ctx, np.Binary); err != nil {
				add(at+".binary", scenarios.Pos{}, err)
				continue
			}
		}
		if np.Version != "" {
			switch {
			case onSim:
				l, _ := cmtversion.Lookup(np.Version)
				f = &nodes.Flavor{Line: l, Reported: strings.TrimPrefix(l.Tested, "v") + " (MODEL)"}
			case f.Line.Name != np.Version && np.Binary != "":
				add(at+".version", scenarios.Pos{}, fmt.Errorf("%s, but the binary is %s", np.Version, f))
			case f.Line.Name != np.Version:
				add(at+".version", scenarios.Pos{}, fmt.Errorf("%s, but valnet's own node is CometBFT %s: another line needs node.binary (a stock cometbft of that line) on the process or docker backend", np.Version, f.Reported))
			}
		}
		out[v.Name] = f
		lines[f.Line.Name] = append(lines[f.Line.Name], v.Name)
		for _, pr := range checkNodeConfig(at, np.Config, f, onSim) {
			// A top-level entry is every validator's: said once, at its key.
			if top[pr.Pos] {
				if said[pr.Pos] {
					continue
				}
				said[pr.Pos] = true
				pr.Key = strings.Replace(pr.Key, at, "node", 1)
			}
			ps = append(ps, pr)
		}
		if h := plan.VoteExtensionsEnableHeight; h > 0 && !f.Line.VoteExtensions {
			add("chain.vote_extensions_enable_height", scenarios.Pos{}, fmt.Errorf("%d, but %s's node (%s) has no vote extensions: they came in v0.38", h, v.Name, f))
		}
		if d := v.Signer.Dialect; d != "" && d != string(signers.DialectAuto) && v.Signer.External == nil && d != f.Line.Dialect {
			add("validators["+v.Name+"].signer.dialect", scenarios.Pos{}, fmt.Errorf("%s, but its node (%s) reads the %s privval layout", d, f, f.Line.Dialect))
		}
	}
	if len(lines) > 1 {
		var parts []string
		for _, l := range slices.Sorted(maps.Keys(lines)) {
			parts = append(parts, fmt.Sprintf("%s: %s", l, strings.Join(lines[l], ", ")))
		}
		ps = append(ps, Problem{Key: "node", Message: "the network mixes CometBFT lines (" + strings.Join(parts, "; ") +
			"); CometBFT does not support a network of two lines (their blocks and votes differ), so valnet does not run one"})
	}
	return out, ps
}

// checkNodeConfig checks node.config entries against the keys f's
// version has (for the sim, the keys it models).
func checkNodeConfig(at string, settings []scenarios.ConfigSetting, f *nodes.Flavor, onSim bool) Problems {
	if len(settings) == 0 {
		return nil
	}
	keys := f.ConfigKeys()
	what := f.String()
	if onSim {
		keys, what = sim.ConfigKeys, "the sim (a MODEL of CometBFT "+f.Line.Name+")"
	}
	var ps Problems
	for _, s := range settings {
		if slices.Contains(keys, s.Key) {
			continue
		}
		section := ""
		if i := strings.IndexByte(s.Key, '.'); i > 0 {
			section = s.Key[:i+1]
		}
		var near []string
		for _, k := range keys {
			if section != "" && strings.HasPrefix(k, section) || section == "" && !strings.Contains(k, ".") {
				near = append(near, k)
			}
		}
		msg := fmt.Sprintf("%s has no config key %s%s", what, s.Key, scenarios.DidYouMean(s.Key, keys))
		if onSim {
			msg = fmt.Sprintf("%s does not model config key %s (it models: %s)", what, s.Key, strings.Join(keys, ", "))
		} else if len(near) > 0 {
			msg += " (its " + strings.TrimSuffix(section, ".") + " keys: " + strings.Join(near, ", ") + ")"
			if section == "" {
				msg = strings.Replace(msg, "(its  keys", "(its top-level keys", 1)
			}
		}
		ps = append(ps, Problem{Key: at + ".config." + s.Key, Pos: s.Pos, Message: msg})
	}
	return ps
}

// configSettings is node.config as the nodes package takes it.
func configSettings(np scenarios.NodePlan) []nodes.ConfigSetting {
	out := make([]nodes.ConfigSetting, len(np.Config))
	for i, s := range np.Config {
		out[i] = nodes.ConfigSetting{Key: s.Key, Value: s.Value}
	}
	return out
}
