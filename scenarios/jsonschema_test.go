package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	jsonschemav6 "github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/network"
)

// The JSON Schema is generated (jsonschema_gen_test.go); these tests hold
// what it says to the parser itself: its key table (keyLevels),
// latency.Params, value sets and what it accepts.

func loadSchema(t *testing.T) map[string]any {
	t.Helper()
	var schema map[string]any
	if err := json.Unmarshal(JSONSchema(), &schema); err != nil {
		t.Fatalf("schema.json is not valid JSON: %v", err)
	}
	return schema
}

// ref follows a local "$ref".
func ref(root, node map[string]any) map[string]any {
	for node["$ref"] != nil {
		name := strings.TrimPrefix(node["$ref"].(string), "#/$defs/")
		node = root["$defs"].(map[string]any)[name].(map[string]any)
	}
	return node
}

// objectOf finds the object form of node, looking into anyOf/oneOf.
func objectOf(root, node map[string]any) map[string]any {
	node = ref(root, node)
	switch typ := node["type"].(type) {
	case string:
		if typ == "object" {
			return node
		}
	case []any: // ["object", "null"]: a section that may be left empty
		if slices.Contains(typ, any("object")) {
			return node
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		branches, _ := node[k].([]any)
		for _, b := range branches {
			if o := objectOf(root, b.(map[string]any)); o != nil {
				return o
			}
		}
	}
	return nil
}

// schemaLevel finds the object schema of a keyLevels level.
func schemaLevel(t *testing.T, root map[string]any, level string) map[string]any {
	t.Helper()
	node := root
	if level != "" {
		for _, seg := range strings.Split(level, ".") {
			if seg == "*" { // a user-chosen name: the map's values
				child, ok := objectOf(root, node)["additionalProperties"].(map[string]any)
				if !ok {
					t.Fatalf("schema level %q: the map has no additionalProperties schema", level)
				}
				node = child
				continue
			}
			name, isList := strings.CutSuffix(seg, "[]")
			props, _ := objectOf(root, node)["properties"].(map[string]any)
			child, ok := props[name].(map[string]any)
			if !ok {
				t.Fatalf("schema has no %s (in %s)", name, level)
			}
			node = child
			if isList {
				node = ref(root, node)["items"].(map[string]any)
			}
		}
	}
	obj := objectOf(root, node)
	if obj == nil {
		t.Fatalf("schema level %q is not an object", level)
	}
	return obj
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestJSONSchemaMatchesWalker(t *testing.T) {
	root := loadSchema(t)
	if root["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %v, want draft 2020-12", root["$schema"])
	}
	levels := keyLevels()
	if len(levels) < 8 {
		t.Fatalf("keyLevels() found only %d levels: %v", len(levels), levels)
	}
	for level, keys := range levels {
		obj := schemaLevel(t, root, level)
		got := keysOf(obj["properties"].(map[string]any))
		if want := sortedCopy(keys); !reflect.DeepEqual(got, want) {
			t.Errorf("level %q: schema keys %v, parser keys %v", level, got, want)
		}
		if obj["additionalProperties"] != false {
			t.Errorf("level %q: schema must set additionalProperties: false, as the parser refuses unknown keys", level)
		}
	}
}

func TestJSONSchemaDistKeys(t *testing.T) {
	root := loadSchema(t)
	lat := schemaLevel(t, root, "validators[].signer.latency")
	seen := map[string]bool{}
	for _, c := range lat["allOf"].([]any) {
		c := c.(map[string]any)
		dist := c["if"].(map[string]any)["properties"].(map[string]any)["dist"].(map[string]any)["const"].(string)
		then := c["then"].(map[string]any)
		seen[dist] = true
		own := latency.Params(dist)
		if own == nil {
			t.Errorf("schema has dist %q, parser does not", dist)
			continue
		}
		if got, want := keysOf(then["properties"].(map[string]any)), sortedCopy(append(slices.Clone(own), latencyCommonKeys...)); !reflect.DeepEqual(got, want) {
			t.Errorf("dist %s: schema allows %v, parser %v", dist, got, want)
		}
		if got := sortedCopy(strs(then["required"])); !reflect.DeepEqual(got, sortedCopy(own)) {
			t.Errorf("dist %s: schema requires %v, parser %v", dist, got, own)
		}
	}
	for _, d := range latency.Dists() {
		if !seen[d] {
			t.Errorf("schema has no rule for dist %s", d)
		}
	}
}

func TestJSONSchemaEnums(t *testing.T) {
	root := loadSchema(t)
	prop := func(level, key string) map[string]any {
		return ref(root, schemaLevel(t, root, level)["properties"].(map[string]any)[key].(map[string]any))
	}
	var chainMetrics []string
	for _, m := range Metrics {
		if !m.PerValidator {
			chainMetrics = append(chainMetrics, m.Name)
		}
	}
	exp := schemaLevel(t, root, "expect[]")
	rules := exp["allOf"].([]any)
	metricIf := func(i int) map[string]any {
		cond := rules[i].(map[string]any)["if"].(map[string]any)
		if not, ok := cond["not"].(map[string]any); ok {
			cond = not
		}
		return cond["properties"].(map[string]any)["metric"].(map[string]any)
	}
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"run.backend", strs(prop("run", "backend")["enum"]), backends},
		{"app.transport", strs(prop("app", "transport")["enum"]), appTransports},
		{"signer.type", strs(prop("validators[].signer", "type")["enum"]), signerTypes},
		{"signer.key_type", strs(prop("validators[].signer", "key_type")["enum"]), keyTypes},
		{"signer.via", strs(prop("validators[].signer", "via")["enum"]), vias},
		{"signer.decrypt", strs(prop("validators[].signer", "decrypt")["enum"]), decryptModes},
		{"signer.connection", strs(prop("validators[].signer", "connection")["enum"]), ledgerDevices},
		{"signer.provision", strs(prop("validators[].signer", "provision")["enum"]), provisions},
		{"network.topology (words)", strs(ref(root, prop("network", "topology")["anyOf"].([]any)[0].(map[string]any))["enum"]), topologyWords},
		{"signer.profile (built-in)", strs(ref(root, prop("validators[].signer", "profile")["anyOf"].([]any)[0].(map[string]any))["enum"]), builtinProfiles},
		{"profile names (not built-in)", strs(ref(root, schemaLevel(t, root, "")["properties"].(map[string]any)["profiles"].(map[string]any)["propertyNames"].(map[string]any)["not"].(map[string]any))["enum"]), builtinProfiles},
		{"faults.action", strs(prop("faults[]", "action")["enum"]), faultActionNames()},
		{"faults.phases", strs(ref(root, prop("faults[]", "phases")["items"].(map[string]any))["enum"]), phase.All()},
		{"latency.dist", strs(prop("validators[].signer.latency", "dist")["enum"]), latency.Dists()},
		{"latency.phases", strs(ref(root, prop("validators[].signer.latency", "phases")["items"].(map[string]any))["enum"]), phase.All()},
		{"expect.phase", strs(prop("expect[]", "phase")["enum"]), phase.All()},
		{"expect.metric", strs(prop("expect[]", "metric")["enum"]), metricNames()},
		{"chain metrics (no validator)", strs(metricIf(0)["enum"]), chainMetrics},
		{"phased metrics", strs(metricIf(1)["enum"]), phasedMetricNames()},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: schema %v, parser %v", c.what, c.got, c.want)
		}
	}
}

// TestJSONSchemaSignerTypeKeys ties the signer's per-type rules to
// signerTypeKeys: the keys a rule refuses for other types are the type's.
func TestJSONSchemaSignerTypeKeys(t *testing.T) {
	root := loadSchema(t)
	signer := schemaLevel(t, root, "validators[].signer")
	seen := map[string]bool{}
	for _, r := range signer["allOf"].([]any) {
		r := r.(map[string]any)
		typ := r["if"].(map[string]any)["properties"].(map[string]any)["type"].(map[string]any)["const"].(string)
		not := r["else"].(map[string]any)["not"].(map[string]any)
		var keys []string
		if list, ok := not["anyOf"].([]any); ok {
			for _, c := range list {
				keys = append(keys, strs(c.(map[string]any)["required"])...)
			}
		} else {
			keys = strs(not["required"])
		}
		if want := signerTypeKeys[typ]; !reflect.DeepEqual(sortedCopy(keys), sortedCopy(want)) {
			t.Errorf("type %s: schema keeps %v to it, signerTypeKeys %v", typ, keys, want)
		}
		seen[typ] = true
	}
	for typ := range signerTypeKeys {
		if !seen[typ] {
			t.Errorf("schema.json has no rule for the keys of signer type %s", typ)
		}
	}
}

// TestJSONSchemaPatterns checks the schema's patterns for regions and
// bandwidths against the parser (both are RE2 and ECMA-262 alike).
func TestJSONSchemaPatterns(t *testing.T) {
	root := loadSchema(t)
	props := schemaLevel(t, root, "network")["properties"].(map[string]any)
	region := regexp.MustCompile(props["zones"].(map[string]any)["propertyNames"].(map[string]any)["pattern"].(string))
	var names []string
	for _, r := range append(network.Regions(), regionCodes...) {
		names = append(names, r, strings.ToLower(r), strings.ToUpper(r))
	}
	for _, n := range names {
		if !region.MatchString(n) {
			t.Errorf("schema refuses region %q, which valnet accepts", n)
		}
	}
	for _, n := range []string{"Mars", "us-east-7", "N Virginia", ""} {
		if region.MatchString(n) {
			t.Errorf("schema accepts region %q, which valnet refuses", n)
		}
	}
	bw := ref(root, map[string]any{"$ref": "#/$defs/bandwidth"})
	ok := regexp.MustCompile(bw["pattern"].(string))
	zero := regexp.MustCompile(bw["not"].(map[string]any)["pattern"].(string))
	for _, c := range []string{"10mbit", "10Mbit", "1.5 MB", ".5KB", "3.kB", "1GiB", "8bit", "100B", "0mbit", "0.0KB", "10mbps", "10kb", "10", "fast", "-1mbit", "10furlong"} {
		src := fmt.Sprintf("name: bw\nvalidators: [{name: a}]\nnetwork: {bandwidth: %q}\n", c)
		_, err := Parse("bw.yaml", []byte(src))
		if schema := ok.MatchString(c) && !zero.MatchString(c); schema != (err == nil) {
			t.Errorf("bandwidth %q: schema accepts it: %v; valnet: %v", c, schema, err)
		}
	}
}

// TestDistKeysMatchLatencyKeys ties latency.Params and rawLatency.params
// to the latency level's yaml tags.
func TestDistKeysMatchLatencyKeys(t *testing.T) {
	var params []string
	for k := range (&rawLatency{}).params() {
		params = append(params, k)
	}
	var fromDists []string
	for _, d := range latency.Dists() {
		fromDists = append(fromDists, latency.Params(d)...)
	}
	all := append(slices.Clone(params), latencyCommonKeys...)
	if got, want := sortedCopy(all), sortedCopy(keyLevels()["validators[].signer.latency"]); !reflect.DeepEqual(got, want) {
		t.Errorf("params + common keys %v, yaml tags %v", got, want)
	}
	if got, want := sortedCopy(fromDists), sortedCopy(params); !reflect.DeepEqual(got, want) {
		t.Errorf("latency.Params cover %v, params are %v", got, want)
	}
}

// TestJSONSchemaFaultRules ties the schema's per-action rules on faults to
// the faultActions table; each rule names itself in a $comment.
func TestJSONSchemaFaultRules(t *testing.T) {
	root := loadSchema(t)
	fault := schemaLevel(t, root, "faults[]")
	want := map[string]func(faultAction) bool{
		"latency":           func(a faultAction) bool { return a.Latency },
		"no phases":         func(a faultAction) bool { return !a.Phases },
		"duration required": func(a faultAction) bool { return a.Duration == durRequired },
		"no round":          func(a faultAction) bool { return !a.Round },
		"target required":   func(a faultAction) bool { return a.Target == targetRequired },
		"no target":         func(a faultAction) bool { return a.Target == targetNone },
		"groups":            func(a faultAction) bool { return a.Groups },
		"no link keys":      func(a faultAction) bool { return !a.Link },
		"no duration":       func(a faultAction) bool { return a.Duration == durNone },
	}
	seen := map[string]bool{}
	for _, r := range fault["allOf"].([]any) {
		r := r.(map[string]any)
		name, _ := r["$comment"].(string)
		has, ok := want[name]
		if !ok {
			t.Errorf("fault rule with $comment %q is not checked here", name)
			continue
		}
		seen[name] = true
		got := strs(r["if"].(map[string]any)["properties"].(map[string]any)["action"].(map[string]any)["enum"])
		var exp []string
		for _, a := range faultActions {
			if has(a) {
				exp = append(exp, a.Name)
			}
		}
		if !reflect.DeepEqual(got, exp) {
			t.Errorf("fault rule %q: schema applies it to %v, faultActions to %v", name, got, exp)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("schema.json has no fault rule %q", name)
		}
	}
}

// TestJSONSchemaAcceptsWhatValnetAccepts validates every built-in, every
// testdata/*.good.yaml and every scenario under docs/examples against the
// schema with a draft 2020-12 validator: an editor must never flag a
// scenario valnet runs. And every bad file refused for an unknown key is
// refused by the schema too.
func TestJSONSchemaAcceptsWhatValnetAccepts(t *testing.T) {
	c := jsonschemav6.NewCompiler()
	doc, err := jsonschemav6.UnmarshalJSON(bytes.NewReader(JSONSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("schema.json does not compile: %v", err)
	}
	instance := func(t *testing.T, src []byte) any {
		t.Helper()
		var v any
		if err := yaml.Unmarshal(src, &v); err != nil {
			t.Fatal(err)
		}
		// Through JSON, as an editor sees it (numbers as float64).
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschemav6.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return inst
	}
	good := map[string][]byte{}
	for _, b := range Builtins() {
		src, _ := BuiltinSource(b.Name)
		good["builtin "+b.Name] = src
	}
	files, _ := filepath.Glob("testdata/*.good.yaml")
	examples, _ := filepath.Glob("../docs/examples/*.yaml")
	more, _ := filepath.Glob("../docs/examples/*/*.yaml")
	for _, f := range append(append(files, examples...), more...) {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(f, src); err != nil {
			continue // not a scenario (a calibration, a signer serve config) or one that needs its files
		}
		good[f] = src
	}
	if len(good) < 30 {
		t.Fatalf("only %d scenarios found to validate", len(good))
	}
	for name, src := range good {
		if err := sch.Validate(instance(t, src)); err != nil {
			t.Errorf("%s: valnet accepts it, the schema refuses it:\n%v", name, err)
		}
	}
	bad, _ := filepath.Glob("testdata/*.bad.yaml")
	refused := 0
	for _, f := range bad {
		want, err := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".want")
		if err != nil || !strings.Contains(string(want), "unknown key") || strings.Contains(f, "alias") || strings.Contains(f, "laughs") {
			continue
		}
		src, _ := os.ReadFile(f)
		if sch.Validate(instance(t, src)) == nil {
			t.Errorf("%s: valnet refuses an unknown key in it, the schema accepts it", f)
		}
		refused++
	}
	if refused == 0 {
		t.Error("no bad file with an unknown key was checked")
	}
}
