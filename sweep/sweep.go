package sweep

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/valnet/valnet/internal/metricref"
	"github.com/valnet/valnet/runner"
	"github.com/valnet/valnet/scenarios"
)

// Axis is one --set: a scenario key and the values it takes in turn.
type Axis struct {
	Path   string
	Values []string
}

// Config is one valnet sweep command.
type Config struct {
	Source  string // scenario file or builtin name
	Backend string // "" keeps the scenario's run.backend
	Axes    []Axis // the cross product of their values is the sweep's points
	Repeat  int    // runs per point, >= 1
	// Seed is the base seed; nil takes each point's run.seed. Repeat r
	// (1-based) of every point runs with base + r - 1: the same seeds at
	// every point, so points differ by their settings only.
	Seed    *int64
	OutDir  string
	Metrics []string // metric references to plot; nil: DefaultMetrics
}

// Point is one combination of axis values.
type Point struct {
	Set  []scenarios.Setting // one per axis, in axis order
	Name string              // its directory: label=value,label=value
	Plan *scenarios.Plan     // resolved with Set
}

// Sweep is a checked sweep: every point resolved, ready to run.
type Sweep struct {
	Config
	Points  []Point
	Labels  []string        // a short name per axis (the path's last keys)
	Metrics []metricref.Ref // what sweep.md and sweep.html show
	// Absent lists, per metric reference, the points that do not have it
	// (e.g. a validator that a setting removes); sweep.md says so.
	Absent map[string][]string
	// Identity says which sweep a directory holds (resume).
	Identity Identity
}

// Identity is what must match for a rerun to resume into a sweep
// directory: the scenario (its text at every point), the backend, the
// keys, their values and the base seed.
type Identity struct {
	Scenario string              `json:"scenario"`
	Backend  string              `json:"backend"`
	Keys     []string            `json:"keys"`
	Values   map[string][]string `json:"values"`
	BaseSeed *int64              `json:"base_seed,omitempty"`
	// ScenarioSHA256 hashes every point's resolved scenario text, so a
	// scenario edited between two invocations is noticed.
	ScenarioSHA256 string `json:"scenario_sha256"`
}

// Prepare checks a sweep before anything runs: every path, every value at
// every point (each point's scenario is resolved with its settings), the
// metrics to show. Every problem is reported, joined.
func Prepare(cfg Config) (*Sweep, error) {
	var errs []error
	if cfg.Repeat < 1 {
		errs = append(errs, fmt.Errorf("--repeat %d: give at least 1", cfg.Repeat))
	}
	if len(cfg.Axes) == 0 {
		errs = append(errs, errors.New("give at least one --set PATH=v1,v2,... to sweep over"))
	}
	stop := false // a bad flag every point would report again
	if err := checkBackend(cfg.Backend); err != nil {
		errs, stop = append(errs, err), true
	}
	seen := map[string]bool{}
	for _, a := range cfg.Axes {
		if err := refuseBackendPath("--set", a.Path); err != nil {
			errs, stop = append(errs, err), true
		}
		if seen[a.Path] {
			errs = append(errs, fmt.Errorf("--set %s is given twice; list all its values in one --set", a.Path))
		}
		seen[a.Path] = true
		if dup := firstDuplicate(a.Values); dup != "" {
			errs = append(errs, fmt.Errorf("--set %s: value %s is listed twice", a.Path, dup))
		}
	}
	if stop {
		return nil, errors.Join(errs...)
	}
	s := &Sweep{Config: cfg, Labels: axisLabels(cfg.Axes)}
	// The scenario is read once and every point resolved from its bytes
	// (standard input cannot be read again).
	src, err := scenarios.ReadSource(cfg.Source)
	if err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	names := map[string]bool{}
	hash := sha256.New()
	// A bad value fails at every point it is in: it is said once. Any other
	// problem is the scenario's at some points: said once, with them.
	var problems []string
	at := map[string][]string{}
	for _, set := range crossProduct(cfg.Axes) {
		plan, err := Resolve(src, set, cfg.Backend)
		if err != nil {
			for _, e := range scenarios.SplitErrors(err) {
				msg := e.Error()
				if _, ok := at[msg]; !ok {
					problems = append(problems, msg)
					at[msg] = []string{}
				}
				if !fromSetting(e) {
					at[msg] = append(at[msg], settingsString(set))
				}
			}
			continue
		}
		p := Point{Set: set, Name: pointName(s.Labels, set, names), Plan: plan}
		names[p.Name] = true
		hash.Write(plan.Text)
		s.Points = append(s.Points, p)
	}
	for _, msg := range problems {
		if pts := at[msg]; len(pts) > 0 {
			msg = "at " + strings.Join(pts, "; ") + ": " + msg
		}
		errs = append(errs, errors.New(msg))
	}
	if len(s.Points) > 0 { // the metrics are checked against a point's plan
		refs, err := s.chooseMetrics()
		if err != nil {
			errs = append(errs, err)
		}
		s.Metrics = refs
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	s.Identity = Identity{
		Scenario: cfg.Source, Backend: s.Points[0].Plan.Run.Backend, Keys: s.Keys(),
		Values: map[string][]string{}, BaseSeed: cfg.Seed, ScenarioSHA256: hex.EncodeToString(hash.Sum(nil)),
	}
	for _, a := range cfg.Axes {
		s.Identity.Values[a.Path] = a.Values
	}
	return s, nil
}

// Keys are the swept paths, in axis order.
func (s *Sweep) Keys() []string {
	keys := make([]string, len(s.Axes))
	for i, a := range s.Axes {
		keys[i] = a.Path
	}
	return keys
}

// Seed is the seed of repeat r (1-based) at point p.
func (s *Sweep) Seed(p Point, r int) int64 {
	base := p.Plan.Run.Seed
	if s.Config.Seed != nil {
		base = *s.Config.Seed
	}
	return RepeatSeed(base, r)
}

// RunDir is the run directory of repeat r at point p, relative to the
// sweep directory.
func RunDir(p Point, r int) string { return p.Name + "/r" + fmt.Sprint(r) }

// Preflight runs runner.Preflight once per distinct shape of plan (what it
// checks: backend, binaries, signer secrets and modules), before any run.
func (s *Sweep) Preflight(ctx context.Context) error {
	plans := make([]*scenarios.Plan, len(s.Points))
	for i, p := range s.Points {
		plans[i] = p.Plan
	}
	return PreflightPlans(ctx, plans)
}

// PreflightPlans runs runner.Preflight once per distinct shape of plan
// among plans; the problems found, each once, or nil.
func PreflightPlans(ctx context.Context, plans []*scenarios.Plan) error {
	done := map[string]bool{}
	var ps runner.Problems
	for _, plan := range plans {
		key := preflightShape(plan)
		if done[key] {
			continue
		}
		done[key] = true
		for _, pr := range runner.Preflight(ctx, plan) {
			if !slices.Contains(ps, pr) {
				ps = append(ps, pr)
			}
		}
	}
	if len(ps) > 0 {
		return ps
	}
	return nil
}

// preflightShape is what runner.Preflight reads of a plan: the backend,
// the node binaries and each validator's signer backend (keyfile secret,
// PKCS#11 module and PIN, ...). Points that agree on it pass or fail
// preflight alike.
func preflightShape(p *scenarios.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%+v|%d", p.Run.Backend, p.Node, p.VoteExtensionsEnableHeight)
	for _, v := range p.Validators {
		fmt.Fprintf(&b, "|%s|%+v|%s|%s", v.Name, v.Node, v.Signer.Type, v.Signer.Dialect)
		if k := v.Signer.Keyfile; k != nil {
			fmt.Fprintf(&b, "|%+v", *k)
		}
		if k := v.Signer.PKCS11; k != nil {
			fmt.Fprintf(&b, "|%+v", *k)
		}
	}
	return b.String()
}

// crossProduct lists every combination of axis values, the first axis
// varying slowest.
func crossProduct(axes []Axis) [][]scenarios.Setting {
	out := [][]scenarios.Setting{nil}
	for _, a := range axes {
		var next [][]scenarios.Setting
		for _, prefix := range out {
			for _, v := range a.Values {
				next = append(next, append(slices.Clone(prefix), scenarios.Setting{Path: a.Path, Value: v}))
			}
		}
		out = next
	}
	return out
}

// fromSetting reports whether a problem lies in a setting (its message
// names the setting, so the point).
func fromSetting(err error) bool {
	var e scenarios.Error
	return errors.As(err, &e) && e.Pos.FromSetting()
}

// settingsString is a point's settings as written: K=V, K=V.
func settingsString(set []scenarios.Setting) string {
	parts := make([]string, len(set))
	for i, st := range set {
		parts[i] = st.String()
	}
	return strings.Join(parts, ", ")
}

func firstDuplicate(vs []string) string {
	seen := map[string]bool{}
	for _, v := range vs {
		if seen[v] {
			return v
		}
		seen[v] = true
	}
	return ""
}

// pathParts is a path's steps as words, a selection kept as its name:
// validators[hsm].signer.latency -> validators, hsm, signer, latency. A
// path that does not parse is its own single word (Prepare refuses it).
func pathParts(path string) []string {
	steps, err := scenarios.ParsePath(path)
	if err != nil {
		return []string{path}
	}
	var parts []string
	for _, st := range steps {
		parts = append(parts, st.Key)
		if st.Has {
			parts = append(parts, st.Select)
		}
	}
	return parts
}

// axisLabels names each axis by the shortest tail of its path that no
// other axis shares: latency, commit; hsm.signer.latency beside
// v.signer.latency.
func axisLabels(axes []Axis) []string {
	parts := make([][]string, len(axes))
	for i, a := range axes {
		parts[i] = pathParts(a.Path)
	}
	labels := make([]string, len(axes))
	for i := range axes {
		for n := 1; n <= len(parts[i]); n++ {
			label := strings.Join(parts[i][len(parts[i])-n:], ".")
			unique := true
			for j := range axes {
				if j != i && strings.HasSuffix("."+strings.Join(parts[j], "."), "."+label) {
					unique = false
				}
			}
			labels[i] = label
			if unique {
				break
			}
		}
	}
	return labels
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._+-]+`)

// safeName is s as a file name: each run of other characters than
// letters, digits and ._+- becomes one _, none at either end. Sweep point
// and threshold directory names are made by it.
func safeName(s string) string {
	return strings.Trim(unsafeName.ReplaceAllString(s, "_"), "_")
}

// maxNamePart bounds one value in a directory name.
const maxNamePart = 40

// pointName is the point's directory name, filesystem-safe and unique
// among taken: latency=200ms,commit=1s.
func pointName(labels []string, set []scenarios.Setting, taken map[string]bool) string {
	parts := make([]string, len(set))
	for i, st := range set {
		v := safeName(st.Value)
		if len(v) > maxNamePart {
			v = v[:maxNamePart]
		}
		if v == "" {
			v = "_"
		}
		parts[i] = labels[i] + "=" + v
	}
	name := strings.Join(parts, ",")
	for k := 2; taken[name]; k++ {
		name = strings.Join(parts, ",") + fmt.Sprintf("~%d", k)
	}
	return name
}

// chooseMetrics reads --metric, or picks the defaults: every metric the
// scenario's expect names, missed_precommits of each validator a setting
// touches, block_interval_p50_ms and heights_with_round_change. Each is
// checked against every point (a setting may add or remove validators):
// a --metric no point has is refused, one some points lack is kept and
// s.Absent says where; a default no point has is left out.
func (s *Sweep) chooseMetrics() ([]metricref.Ref, error) {
	var refs []metricref.Ref
	s.Absent = map[string][]string{}
	// check finds ref at every point; ok false when no point has it.
	check := func(ref string) (metricref.Ref, bool, error) {
		var (
			found   *metricref.Ref
			missing []string
			first   error
		)
		for _, p := range s.Points {
			r, err := p.Plan.MetricRef(ref)
			if err != nil {
				if first == nil {
					first = err
				}
				missing = append(missing, p.Name)
				continue
			}
			if found == nil {
				found = &r
			}
		}
		if found == nil {
			return metricref.Ref{}, false, first
		}
		if len(missing) > 0 {
			s.Absent[found.String()] = missing
		}
		return *found, true, nil
	}
	add := func(r metricref.Ref) {
		if !slices.Contains(refs, r) {
			refs = append(refs, r)
		}
	}
	if len(s.Config.Metrics) > 0 {
		var errs []error
		for _, m := range s.Config.Metrics {
			r, ok, err := check(m)
			if !ok {
				where := ""
				if len(s.Points) > 1 {
					where = " (at every point)"
				}
				errs = append(errs, fmt.Errorf("--metric %s: %s%s", m, metricProblem(m, err), where))
				continue
			}
			add(r)
		}
		return refs, errors.Join(errs...)
	}
	var candidates []metricref.Ref
	propose := func(r metricref.Ref) {
		if !slices.Contains(candidates, r) {
			candidates = append(candidates, r)
		}
	}
	for _, p := range s.Points {
		for _, e := range p.Plan.Expect {
			if e.Default {
				continue // valnet's own, not what the scenario is about
			}
			if e.Validator != "" || !isPerValidator(e.Metric) {
				propose(metricref.Ref{Metric: e.Metric, Validator: e.Validator, Phase: e.Phase})
				continue
			}
			for _, v := range p.Plan.Validators {
				propose(metricref.Ref{Metric: e.Metric, Validator: v.Name, Phase: e.Phase})
			}
		}
	}
	for _, v := range s.variedValidators() {
		propose(metricref.Ref{Metric: "missed_precommits", Validator: v})
	}
	propose(metricref.Ref{Metric: "block_interval_p50_ms"})
	propose(metricref.Ref{Metric: "heights_with_round_change"})
	for _, c := range candidates {
		if r, ok, _ := check(c.String()); ok {
			add(r)
		}
	}
	return refs, nil
}

// metricProblem is what MetricRef says about ref, without its leading
// "metric REF: " (the caller names the flag and the reference itself).
func metricProblem(ref string, err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "metric "+ref+": "); ok {
		return rest
	}
	return msg
}

func isPerValidator(metric string) bool {
	m, _ := scenarios.LookupMetric(metric)
	return m.PerValidator
}

// variedValidators are the expanded validators a validators[NAME] axis
// touches (NAME, or NAME-1..NAME-N with count), at any point.
func (s *Sweep) variedValidators() []string {
	var out []string
	for _, a := range s.Axes {
		name, ok := selectedValidator(a.Path)
		if !ok {
			continue
		}
		for _, p := range s.Points {
			for _, v := range p.Plan.Validators {
				if (v.Name == name || strings.HasPrefix(v.Name, name+"-")) && !slices.Contains(out, v.Name) {
					out = append(out, v.Name)
				}
			}
		}
	}
	return out
}

// selectedValidator is the validator a validators[NAME]... path selects.
func selectedValidator(path string) (string, bool) {
	steps, err := scenarios.ParsePath(path)
	if err != nil || steps[0].Key != "validators" || !steps[0].Has {
		return "", false
	}
	return steps[0].Select, true
}
