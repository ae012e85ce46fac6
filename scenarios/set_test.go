package scenarios

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/latency"
)

// setBase is the scenario the --set tests write into.
const setBase = `name: set-base
chain:
  timeouts:
    propose: 2s
run:
  heights: 5
validators:
  - name: hsm
    signer: {type: simulated, profile: yubihsm2}
  - name: v
    count: 3
profiles:
  fast:
    latency: 1ms
`

func parseWithSets(t *testing.T, sets ...Setting) (*Plan, error) {
	t.Helper()
	return parse("base.yaml", "base.yaml", "", []byte(setBase), Overrides{Set: sets})
}

func TestSetGood(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		set   []Setting
		check func(p *Plan) any // returns the value to compare with want
		want  any
	}{
		{[]Setting{{Path: "run.heights", Value: "3"}}, func(p *Plan) any { return p.Run.Heights }, int64(3)},
		{[]Setting{{Path: "run.seed", Value: "42"}}, func(p *Plan) any { return p.Run.Seed }, int64(42)},
		{[]Setting{{Path: "chain.timeouts.propose", Value: "500ms"}}, func(p *Plan) any { return p.Timeouts.Propose }, 500 * ms},
		{[]Setting{{Path: "chain.timeouts.commit", Value: "2s"}}, func(p *Plan) any { return p.Timeouts.Commit }, 2 * time.Second},
		{[]Setting{{Path: "network.latency", Value: "20ms"}}, func(p *Plan) any { return p.Network.Default.Latency.Spec }, latency.Spec{Dist: latency.Fixed, Value: 20 * ms}},
		{[]Setting{{Path: "network.bandwidth", Value: "10mbit"}}, func(p *Plan) any { return p.Network.Default.Bandwidth }, 10e6 / 8},
		{[]Setting{{Path: "validators[v].count", Value: "5"}}, func(p *Plan) any { return len(p.Validators) }, 6},
		{[]Setting{{Path: "validators[hsm].signer.latency", Value: "200ms"}}, func(p *Plan) any { return p.Validators[0].Signer.Latency.Spec.Value }, 200 * ms},
		{[]Setting{{Path: "validators[hsm].signer.latency", Value: "{dist: uniform, min: 1ms, max: 5ms}"}},
			func(p *Plan) any { return p.Validators[0].Signer.Latency.Spec }, latency.Spec{Dist: latency.Uniform, Min: ms, Max: 5 * ms}},
		{[]Setting{{Path: "validators[hsm].signer.profile", Value: "fast"}}, func(p *Plan) any { return p.Validators[0].Signer.Profile }, "fast"},
		// a missing mapping on the way is created
		{[]Setting{{Path: "validators[v].signer.latency", Value: "7ms"}}, func(p *Plan) any { return p.Validators[3].Signer.Latency.Spec.Value }, 7 * ms},
		{[]Setting{{Path: "profiles[slow].latency", Value: "9ms"}}, func(p *Plan) any { return p.Profiles["slow"].Latency.Value }, 9 * ms},
		// a whole entry, replaced
		{[]Setting{{Path: "validators[hsm]", Value: "{name: hsm, power: 20}"}}, func(p *Plan) any { return [2]any{p.Validators[0].Power, p.Validators[0].Signer.Type} }, [2]any{int64(20), "local"}},
		// a later setting of the same key wins
		{[]Setting{{Path: "run.heights", Value: "3"}, {Path: "run.heights", Value: "4"}}, func(p *Plan) any { return p.Run.Heights }, int64(4)},
	}
	for _, tt := range tests {
		t.Run(tt.set[0].String(), func(t *testing.T) {
			p, err := parseWithSets(t, tt.set...)
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.check(p); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if !strings.Contains(string(p.Text), "#   --set "+tt.set[0].String()) {
				t.Errorf("the kept scenario text does not name the setting:\n%s", p.Text)
			}
		})
	}
}

// TestSetTextReparses checks that the scenario kept beside a run (with
// the settings applied) parses to the same plan.
func TestSetTextReparses(t *testing.T) {
	p, err := parseWithSets(t, Setting{Path: "validators[hsm].signer.latency", Value: "{dist: uniform, min: 1ms, max: 5ms}"}, Setting{Path: "run.heights", Value: "3"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := Parse("again.yaml", p.Text)
	if err != nil {
		t.Fatal(err)
	}
	if q.Run.Heights != 3 || !reflect.DeepEqual(q.Validators[0].Signer.Latency, p.Validators[0].Signer.Latency) {
		t.Errorf("reparsed plan differs: heights %d, latency %+v", q.Run.Heights, q.Validators[0].Signer.Latency)
	}
}

func TestSetBad(t *testing.T) {
	tests := []struct {
		set  Setting
		want string
	}{
		{Setting{Path: "validators[hsm].signer.latncy", Value: "1s"},
			`--set validators[hsm].signer.latncy=1s: unknown key "latncy" under validators[hsm].signer; did you mean "latency"? (allowed: type, key_type, via, latency, cpu_scale,`},
		{Setting{Path: "validators[nope].count", Value: "2"},
			`--set validators[nope].count=2: no validator named "nope" (the name as written in the file, before count expansion) (allowed: hsm, v)`},
		{Setting{Path: "validators[hsm].count", Value: "0"}, `--set validators[hsm].count=0: `},
		{Setting{Path: "validators[hsm].signer.latency", Value: "fast"}, `--set validators[hsm].signer.latency=fast: `},
		{Setting{Path: "run.heights", Value: "many"}, `--set run.heights=many: expected an integer, got "many"`},
		{Setting{Path: "run.heights", Value: ""}, `--set run.heights=: no value; write an integer or remove the key`},
		{Setting{Path: "chain.timeouts.commit", Value: "1"}, `--set chain.timeouts.commit=1: 1 has no unit; write e.g. 200ms`},
		{Setting{Path: "run.hieghts", Value: "3"}, `--set run.hieghts=3: unknown key "hieghts" under run; did you mean "heights"?`},
		{Setting{Path: "validators.count", Value: "3"}, `--set validators.count=3: validators is a list; pick an entry with validators[NAME]`},
		{Setting{Path: "run[x].heights", Value: "3"}, `--set run[x].heights=3: run is not a list or a map; [x] selects nothing there`},
		{Setting{Path: "run.heights.max", Value: "3"}, `--set run.heights.max=3: run.heights is a value (integer), not a mapping; end the path there`},
		{Setting{Path: "expect[x].max", Value: "3"}, `--set expect[x].max=3: entries of expect have no name to select them by`},
		{Setting{Path: "run..heights", Value: "3"}, `--set run..heights=3: path "run..heights" has an empty key`},
		{Setting{Path: "validators[hsm.count", Value: "3"}, `--set validators[hsm.count=3: path "validators[hsm.count": validators[ has no closing ]`},
		{Setting{Path: "chain.timeouts.propose", Value: "{a: [}"}, `--set chain.timeouts.propose={a: [}: the value is not YAML`},
		{Setting{Path: "network.latency", Value: "{dist: fixed, value: 1ms, min: 2ms}"}, `--set network.latency={dist: fixed, value: 1ms, min: 2ms}: `},
	}
	for _, tt := range tests {
		t.Run(tt.set.String(), func(t *testing.T) {
			_, err := parseWithSets(t, tt.set)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("got  %s\nwant %s...", err, tt.want)
			}
			if strings.Contains(err.Error(), "base.yaml:") {
				t.Errorf("the error names a file position for a value given by --set: %s", err)
			}
		})
	}
}

// TestSetErrorsTogether checks that every bad setting is reported at once,
// beside the file's own problems.
func TestSetErrorsTogether(t *testing.T) {
	_, err := parseWithSets(t, Setting{Path: "run.hieghts", Value: "3"}, Setting{Path: "chain.timeouts.commit", Value: "x"})
	es, ok := AsErrors(err)
	if !ok || len(es) != 2 {
		t.Fatalf("want 2 errors, got %v", err)
	}
}

func TestSplitValues(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  string
	}{
		{"50ms,200ms, 1s", []string{"50ms", "200ms", "1s"}, ""},
		{"3", []string{"3"}, ""},
		{"{dist: uniform, min: 1ms, max: 5ms},200ms", []string{"{dist: uniform, min: 1ms, max: 5ms}", "200ms"}, ""},
		{"[a, b],[c]", []string{"[a, b]", "[c]"}, ""},
		{`"a,b",'c,d'`, []string{`"a,b"`, `'c,d'`}, ""},
		{`"a\",b"`, []string{`"a\",b"`}, ""},
		{"{a: [1, 2]}", []string{"{a: [1, 2]}"}, ""},
		{"", nil, "empty value at character 1"},
		{"1s,,2s", nil, "empty value at character 4"},
		{"1s,", nil, "empty value"},
		{"{a: 1", nil, `unclosed "{" (expected '}')`},
		{"{a: 1]", nil, `unbalanced ']' at character 6`},
		{`"abc`, nil, "unclosed quote \""},
	}
	for _, tt := range tests {
		got, err := SplitValues(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("SplitValues(%q): error %v, want %q", tt.in, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("SplitValues(%q): %v", tt.in, err)
		case tt.err == "" && !reflect.DeepEqual(got, tt.want):
			t.Errorf("SplitValues(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPathKind(t *testing.T) {
	tests := []struct {
		path string
		want ValueKind
		err  string
	}{
		{"validators[hsm].signer.latency", KindLatency, ""},
		{"validators[hsm].signer.latency.value", KindDuration, ""},
		{"chain.timeouts.propose", KindDuration, ""},
		{"network.latency", KindLatency, ""},
		{"network.bandwidth", KindString, ""},
		{"run.heights", KindInteger, ""},
		{"run.seed", KindInteger, ""},
		{"validators[v].count", KindInteger, ""},
		{"validators[v].signer.cpu_scale", KindNumber, ""},
		{"validators[v].signer.profile", KindString, ""},
		{"validators[v]", KindMapping, ""},
		{"profiles[fast]", KindMapping, ""},
		{"network.zones[eu]", KindList, ""},
		{"chain.timeouts", KindMapping, ""},
		{"nope", "", `unknown key "nope"`},
		{"validators[v].signer.latncy", "", `unknown key "latncy" under validators[v].signer; did you mean "latency"?`},
	}
	for _, tt := range tests {
		got, err := PathKind(tt.path)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("PathKind(%q): error %v, want %q", tt.path, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("PathKind(%q): %v", tt.path, err)
		case got != tt.want:
			t.Errorf("PathKind(%q) = %s, want %s", tt.path, got, tt.want)
		}
	}
}

func TestParseSetFlag(t *testing.T) {
	path, vals, err := ParseSetFlag("validators[hsm].signer.latency=50ms,{dist: fixed, value: 1s}")
	if err != nil || path != "validators[hsm].signer.latency" || !reflect.DeepEqual(vals, []string{"50ms", "{dist: fixed, value: 1s}"}) {
		t.Errorf("got %q %q %v", path, vals, err)
	}
	for _, bad := range []string{"run.heights", "=3", "run.hieghts=3", "run.heights=3,,4"} {
		if _, _, err := ParseSetFlag(bad); err == nil {
			t.Errorf("ParseSetFlag(%q): no error", bad)
		}
	}
}

// Found by FuzzSetFlags: a value holding a newline (the shell passes one
// through quotes) split the message naming the setting over two lines, and
// the comment naming it in the run's scenario.yaml. Such a setting is
// shown quoted, on one line.
func TestSetWithNewlineStaysOnOneLine(t *testing.T) {
	set := Setting{Path: "network", Value: "0\n0"}
	_, err := ResolveWith("quickstart", Overrides{Set: []Setting{set}})
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), `--set "network=0\n0": `) {
		t.Errorf("error %q: want one line naming the setting quoted", err)
	}
	if _, _, err := ParseSetFlag("run.heights=\n"); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("ParseSetFlag: %q, want one line", err)
	}
	plan, err := ResolveWith("quickstart", Overrides{Set: []Setting{{Path: "description", Value: "a\tb"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(plan.Text), `#   --set "description=a\tb"`+"\n") {
		t.Errorf("scenario text does not name the setting on one line:\n%s", plan.Text)
	}
}

// TestSetBadValueIsOneError checks that a bad value set on a required key
// is reported once, as the bad value, and not again as a missing key.
func TestSetBadValueIsOneError(t *testing.T) {
	_, err := ResolveWith("capacity-shared-hsm", Overrides{Set: []Setting{{Path: "devices[hsm].background.chains", Value: "abc"}}})
	es, ok := AsErrors(err)
	if !ok || len(es) != 1 {
		t.Fatalf("want 1 error, got %v", err)
	}
	if want := "--set devices[hsm].background.chains=abc: expected an integer"; !strings.HasPrefix(es[0].Error(), want) {
		t.Errorf("got %s, want %s...", es[0], want)
	}
}

// A setting's problems name the flag that gave it; "" is --set.
func TestSetFlagNamed(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{
		{"", "--set run.heights=x: "},
		{"--vary", "--vary run.heights=x: "},
	} {
		_, err := parseWithSets(t, Setting{Path: "run.heights", Value: "x", Flag: tc.flag})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("flag %q: %v, want it to start %q", tc.flag, err, tc.want)
		}
	}
}

func TestParsePath(t *testing.T) {
	steps, err := ParsePath("validators[hsm.1].signer.latency")
	want := []PathStep{{Key: "validators", Select: "hsm.1", Has: true}, {Key: "signer"}, {Key: "latency"}}
	if err != nil || !reflect.DeepEqual(steps, want) {
		t.Errorf("ParsePath = %+v, %v; want %+v", steps, err, want)
	}
	for _, bad := range []string{"", "a..b", "validators[hsm", "validators[]"} {
		if _, err := ParsePath(bad); err == nil {
			t.Errorf("ParsePath(%q): no error", bad)
		}
	}
}
