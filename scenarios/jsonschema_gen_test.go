package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/invopop/jsonschema"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/network"
)

// schema.json is generated from the raw types (schema.go) by invopop's
// reflector: their yaml tags are the keys, their doc comments the
// descriptions, their jsonschema tags the simple bounds and defaults. What
// a tag cannot say (value sets, which keys go with which signer type, fault
// action or distribution) is added below by each raw type's
// JSONSchemaExtend, from the same tables the parser uses. Regenerate with
//
//	go generate ./scenarios/    (go test ./scenarios/ -run TestJSONSchemaIsGenerated -update)

const jsonSchemaFile = "schema.json"

func TestJSONSchemaIsGenerated(t *testing.T) {
	got, err := generateJSONSchema(".")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(jsonSchemaFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(got, jsonSchema) {
		t.Errorf("%s is not what the raw types generate; run go generate ./scenarios/ (go test ./scenarios/ -run TestJSONSchemaIsGenerated -update)", jsonSchemaFile)
	}
}

// generateJSONSchema reflects rawScenario, reading doc comments from the
// Go files in dir.
func generateJSONSchema(dir string) ([]byte, error) {
	comments, err := fieldComments(dir)
	if err != nil {
		return nil, err
	}
	r := &jsonschema.Reflector{
		FieldNameTag:               "yaml",
		RequiredFromJSONSchemaTags: true,
		Anonymous:                  true,
		ExpandedStruct:             true,
		Namer:                      defName,
		Mapper: func(t reflect.Type) *jsonschema.Schema {
			if t == reflect.TypeFor[time.Duration]() {
				return &jsonschema.Schema{Ref: defRef("duration")}
			}
			return nil
		},
		LookupComment: func(t reflect.Type, field string) string {
			if field == "" {
				return "" // type comments are for Go readers
			}
			return comments[t.Name()+"."+field]
		},
	}
	s := r.Reflect(&rawScenario{})
	s.Version = "https://json-schema.org/draft/2020-12/schema"
	s.Title = "valnet scenario (schema v1)"
	s.Description = "A network of CometBFT validators with chosen signers, the network between them, injected signer latency and faults. " +
		"Reference: docs/scenario.md. valnet itself is stricter than this schema; its messages are authoritative."
	for name, def := range sharedDefs() {
		s.Definitions[name] = def
	}
	allowNull(s, reflect.TypeFor[rawScenario](), s.Definitions)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// defName is a raw type's definition name: rawSignerLink -> signerLink;
// rawLatency is the mapping form, latencyModel (latency is either form).
func defName(t reflect.Type) string {
	if t == reflect.TypeFor[rawLatency]() {
		return "latencyModel"
	}
	name := strings.TrimPrefix(t.Name(), "raw")
	if name == "" {
		return ""
	}
	return string(unicode.ToLower(rune(name[0]))) + name[1:]
}

func defRef(name string) string { return "#/$defs/" + name }

// fieldComments maps "rawType.Field" to the field's doc comment (else its
// line comment), from the non-test Go files of dir.
func fieldComments(dir string) (map[string]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			for _, field := range st.Fields.List {
				text := field.Doc.Text()
				if text == "" {
					text = field.Comment.Text()
				}
				for _, name := range field.Names {
					out[ts.Name.Name+"."+name.Name] = strings.Join(strings.Fields(text), " ")
				}
			}
			return false
		})
	}
	return out, nil
}

// allowNull lets every section written with nothing after its key (a
// null, which the parser takes as "not written") be null in the schema:
// a struct reached through a pointer, and an optional list or map.
func allowNull(root *jsonschema.Schema, t reflect.Type, defs jsonschema.Definitions) {
	done := map[reflect.Type]bool{}
	var walk func(s *jsonschema.Schema, t reflect.Type)
	walk = func(s *jsonschema.Schema, t reflect.Type) {
		if done[t] {
			return
		}
		done[t] = true
		for _, f := range yamlFields(t) {
			ft := t.Field(f.Index).Type
			p, ok := s.Properties.Get(f.Key)
			if !ok {
				continue
			}
			optional := !slices.Contains(s.Required, f.Key)
			ptr := ft.Kind() == reflect.Pointer
			if ptr {
				ft = ft.Elem()
			}
			switch {
			case ft.Kind() == reflect.Struct && ptr:
				if def := defs[defName(ft)]; def != nil && p.Ref == defRef(defName(ft)) {
					genNullable(def)
				} else {
					genNullable(p)
				}
			case (ft.Kind() == reflect.Map || ft.Kind() == reflect.Slice) && optional:
				genNullable(p)
			}
			elem := ft
			for elem.Kind() == reflect.Map || elem.Kind() == reflect.Slice || elem.Kind() == reflect.Pointer {
				elem = elem.Elem()
			}
			if elem.Kind() == reflect.Struct && elem != reflect.TypeFor[time.Duration]() {
				if def := defs[defName(elem)]; def != nil && def.Properties != nil {
					walk(def, elem)
				}
			}
		}
	}
	walk(root, t)
}

// nullable widens s to also accept null.
func genNullable(s *jsonschema.Schema) {
	switch {
	case s.Type != "":
		if s.Extras == nil {
			s.Extras = map[string]any{}
		}
		s.Extras["type"] = []string{s.Type, "null"}
		s.Type = ""
	case len(s.AnyOf) > 0:
		s.AnyOf = append(s.AnyOf, &jsonschema.Schema{Type: "null"})
	}
}

// prop is s's property key; a missing one is a bug of this file.
func genProp(s *jsonschema.Schema, key string) *jsonschema.Schema {
	p, ok := s.Properties.Get(key)
	if !ok {
		panic("schema generator: no property " + key)
	}
	return p
}

// ref makes p a reference to the definition name, keeping its description.
func genRef(p *jsonschema.Schema, name string) {
	p.Ref, p.Type, p.Items, p.AnyOf = defRef(name), "", nil, nil
}

// either makes p one of the named definitions.
func genEither(p *jsonschema.Schema, names ...string) {
	p.Ref, p.Type = "", ""
	p.AnyOf = nil
	for _, n := range names {
		p.AnyOf = append(p.AnyOf, &jsonschema.Schema{Ref: defRef(n)})
	}
}

func genEnum(p *jsonschema.Schema, values []string) {
	p.Enum = nil
	for _, v := range values {
		p.Enum = append(p.Enum, v)
	}
}

func genRequired(keys ...string) *jsonschema.Schema { return &jsonschema.Schema{Required: keys} }

// anyRequired is "some of keys is written".
func genAnyRequired(keys []string) *jsonschema.Schema {
	if len(keys) == 1 {
		return genRequired(keys...)
	}
	s := &jsonschema.Schema{}
	for _, k := range keys {
		s.AnyOf = append(s.AnyOf, genRequired(k))
	}
	return s
}

// fragment is a schema written out, for rules no table holds.
func genFragment(text string) *jsonschema.Schema {
	s := &jsonschema.Schema{}
	if err := json.Unmarshal([]byte(text), s); err != nil {
		panic(fmt.Sprintf("schema generator: %v in %s", err, text))
	}
	return s
}

// positive: a duration > 0 (the pattern refuses 0, 0s, 0ms and the like).
func genPositive(p *jsonschema.Schema) { genRef(p, "positiveDuration") }

// caseless is a pattern matching s in any case.
func caseless(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) {
			fmt.Fprintf(&b, "[%c%c]", unicode.ToUpper(r), unicode.ToLower(r))
		} else {
			b.WriteString(regexpQuote(string(r)))
		}
	}
	return b.String()
}

func regexpQuote(s string) string {
	if strings.ContainsAny(s, `\.+*?()|[]{}^$`) {
		return `\` + s
	}
	return s
}

// regionPattern matches network.Regions and their AWS codes, in any case.
func regionPattern() string {
	var alts []string
	for _, r := range append(network.Regions(), regionCodes...) {
		alts = append(alts, caseless(r))
	}
	return "^(" + strings.Join(alts, "|") + ")$"
}

// sharedDefs are the definitions no raw type reflects to: value forms the
// parser reads from text.
func sharedDefs() jsonschema.Definitions {
	phases := &jsonschema.Schema{Type: "array", MinItems: genPtr(uint64(1)), UniqueItems: true, Items: &jsonschema.Schema{Ref: defRef("phase")}}
	builtin := &jsonschema.Schema{}
	genEnum(builtin, builtinProfiles)
	ph := &jsonschema.Schema{}
	genEnum(ph, phase.All())
	noPhases := genFragment(`{"type": "object", "additionalProperties": false, "required": ["dist"], "allOf": [{"$ref": "#/$defs/latencyModel"}]}`)
	noPhases.Properties = jsonschema.NewProperties()
	for _, k := range keyLevels()["validators[].signer.latency"] {
		if k == "phases" {
			noPhases.Properties.Set(k, jsonschema.FalseSchema)
			continue
		}
		noPhases.Properties.Set(k, &jsonschema.Schema{Ref: defRef("latencyModel") + "/properties/" + k})
	}
	return jsonschema.Definitions{
		"name": genFragment(`{"type": "string", "pattern": "^[a-z0-9][a-z0-9-]*$", "maxLength": 48}`),
		"duration": genFragment(`{"description": "A Go duration such as 200ms, 1.5s or 2m. A bare 0 means zero; other bare numbers are refused (no unit).",
			"anyOf": [{"type": "string", "pattern": "^(0|(([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$"}, {"const": 0}]}`),
		"positiveDuration": genFragment(`{"description": "A duration > 0: the pattern refuses 0, 0s, 0ms and the like.",
			"allOf": [{"$ref": "#/$defs/duration"}], "not": {"const": 0}, "pattern": "[1-9]"}`),
		"bandwidth": genFragment(`{"description": "A bandwidth, > 0: a number and a unit. bit, kbit, mbit, gbit: bits per second (SI, any case: 10mbit = 1,250,000 bytes/s); B, KB (or kB), MB, GB: bytes per second (SI); KiB, MiB, GiB: bytes per second (powers of 2).",
			"type": "string", "pattern": "^([0-9]+(\\.[0-9]*)?|\\.[0-9]+) ?([bB][iI][tT]|[kKmMgG][bB][iI][tT]|B|[kK]B|MB|GB|KiB|MiB|GiB)$",
			"not": {"pattern": "^(0+\\.?0*|\\.0+) ?[A-Za-z]+$"}}`),
		"latencyModelNoPhases": noPhases,
		"phase":                ph,
		"phases":               phases,
		"builtinProfile":       builtin,
	}
}

func genPtr[T any](v T) *T { return &v }

// latencyForm makes p a latency: a bare duration or the mapping form
// (withPhases: a signer's own latency; else without phases).
func latencyForm(p *jsonschema.Schema, withPhases bool) {
	if withPhases {
		genEither(p, "duration", "latencyModel")
	} else {
		genEither(p, "duration", "latencyModelNoPhases")
	}
}

func (rawScenario) JSONSchemaExtend(s *jsonschema.Schema) {
	genRef(genProp(s, "name"), "name")
	genProp(s, "profiles").PropertyNames = genFragment(`{"$ref": "#/$defs/name", "not": {"$ref": "#/$defs/builtinProfile"}}`)
	genProp(s, "devices").PropertyNames = &jsonschema.Schema{Ref: defRef("name")}
}

func (rawRun) JSONSchemaExtend(s *jsonschema.Schema) {
	genEnum(genProp(s, "backend"), backends)
	genPositive(genProp(s, "halt_after"))
}

func (rawApp) JSONSchemaExtend(s *jsonschema.Schema) {
	genEnum(genProp(s, "transport"), appTransports)
	genProp(s, "command").Contains = genFragment(`{"type": "string", "pattern": "\\{addr\\}"}`)
}

func (rawNodeConfig) JSONSchema() *jsonschema.Schema {
	// config.toml's values: scalars, lists and tables.
	return &jsonschema.Schema{Type: "object", AdditionalProperties: jsonschema.TrueSchema}
}

func (rawNetwork) JSONSchemaExtend(s *jsonschema.Schema) {
	latencyForm(genProp(s, "latency"), false)
	genRef(genProp(s, "bandwidth"), "bandwidth")
	genProp(s, "zones").PropertyNames = &jsonschema.Schema{Pattern: regionPattern()}
	genProp(s, "zones").AdditionalProperties.UniqueItems = true
	genProp(s, "peers").AdditionalProperties.UniqueItems = true
	// topology explicit goes with peers, and peers with topology explicit.
	s.AllOf = append(s.AllOf,
		genFragment(`{"if": {"type": "object", "required": ["peers", "topology"]}, "then": {"properties": {"topology": {"const": "explicit"}}}}`),
		genFragment(`{"if": {"type": "object", "required": ["topology"], "properties": {"topology": {"const": "explicit"}}}, "then": {"required": ["peers"]}}`))
}

func (rawLink) JSONSchemaExtend(s *jsonschema.Schema) {
	latencyForm(genProp(s, "latency"), false)
	genRef(genProp(s, "bandwidth"), "bandwidth")
}

func (rawSignerLink) JSONSchemaExtend(s *jsonschema.Schema) {
	latencyForm(genProp(s, "latency"), false)
	genRef(genProp(s, "bandwidth"), "bandwidth")
}

// JSONSchemaExtend: a bare word (mesh, explicit) or {ring: K} or {random: K}.
func (rawTopology) JSONSchemaExtend(s *jsonschema.Schema) {
	object := *s
	object.OneOf = []*jsonschema.Schema{genRequired("ring"), genRequired("random")}
	words := &jsonschema.Schema{}
	genEnum(words, topologyWords)
	*s = jsonschema.Schema{AnyOf: []*jsonschema.Schema{words, &object}}
}

func (rawLoad) JSONSchemaExtend(s *jsonschema.Schema) {
	genProp(s, "rate").Not = &jsonschema.Schema{Pattern: `^(0+\.?0*|\.0+) ?/`}
}

func (rawProfile) JSONSchemaExtend(s *jsonschema.Schema) {
	latencyForm(genProp(s, "latency"), false)
	s.OneOf = []*jsonschema.Schema{genRequired("latency"), genRequired("by_payload")}
}

func (rawDevice) JSONSchemaExtend(s *jsonschema.Schema) {
	genEither(genProp(s, "profile"), "builtinProfile", "name")
}

func (rawValidator) JSONSchemaExtend(s *jsonschema.Schema) {
	genRef(genProp(s, "name"), "name")
}

// signerTypeRules are what a signer type requires of its keys, beyond
// which keys are its own (signerTypeKeys, the else branches).
var signerTypeRules = map[string]string{
	SignerKeyfile:   `{"oneOf": [{"required": ["passphrase_env"]}, {"required": ["passphrase_file"]}]}`,
	SignerSimulated: `{"oneOf": [{"required": ["profile"], "not": {"required": ["device"]}}, {"required": ["device"], "not": {"required": ["profile"]}}]}`,
	SignerPKCS11: `{"properties": {"key_type": {"const": "ed25519"}}, "if": {"required": ["provision"]},
		"then": {"not": {"anyOf": [{"required": ["slot"]}, {"required": ["pin_env"]}, {"required": ["pin_file"]}]}},
		"else": {"required": ["module", "key"], "allOf": [{"oneOf": [{"required": ["token"]}, {"required": ["slot"]}]}, {"oneOf": [{"required": ["pin_env"]}, {"required": ["pin_file"]}]}]}}`,
	SignerLedger: `{"properties": {"key_type": {"const": "ed25519"}}, "if": {"required": ["connection"], "properties": {"connection": {"const": "hid"}}},
		"then": {"not": {"anyOf": [{"required": ["confirm_delay"]}, {"required": ["host_stall"]}, {"required": ["wire"]}, {"required": ["device_sign"]}]}},
		"else": {"not": {"required": ["serial"]}}}`,
	SignerExternal:  `{"required": ["address"], "not": {"type": "object", "anyOf": [{"required": ["key_type"]}, {"required": ["cpu_scale"]}, {"required": ["device"]}, {"required": ["via"]}]}}`,
	SignerThreshold: `{"properties": {"key_type": {"const": "ed25519"}}, "not": {"type": "object", "anyOf": [{"required": ["device"]}, {"required": ["regions", "links"]}]}}`,
}

func (rawSigner) JSONSchemaExtend(s *jsonschema.Schema) {
	genEnum(genProp(s, "type"), signerTypes)
	genEnum(genProp(s, "key_type"), keyTypes)
	genEnum(genProp(s, "via"), vias)
	genEnum(genProp(s, "decrypt"), decryptModes)
	genEnum(genProp(s, "provision"), provisions)
	genEnum(genProp(s, "connection"), ledgerDevices)
	latencyForm(genProp(s, "latency"), true)
	genRef(genProp(s, "device"), "name")
	genEither(genProp(s, "profile"), "builtinProfile", "name")
	genProp(s, "regions").Items.Pattern = regionPattern()
	for _, k := range []string{"host_stall", "wire", "device_sign", "timeout"} {
		genPositive(genProp(s, k))
	}
	for _, typ := range signerTypes {
		keys := signerTypeKeys[typ]
		if len(keys) == 0 {
			continue
		}
		own := genAnyRequired(keys)
		own.Type = "object"
		rule := &jsonschema.Schema{
			If:   genFragment(fmt.Sprintf(`{"type": "object", "required": ["type"], "properties": {"type": {"const": %q}}}`, typ)),
			Else: &jsonschema.Schema{Not: own},
		}
		if then, ok := signerTypeRules[typ]; ok {
			rule.Then = genFragment(then)
		}
		s.AllOf = append(s.AllOf, rule)
	}
}

// JSONSchemaExtend: each dist takes its own keys (latency.Params) and
// requires them.
func (rawLatency) JSONSchemaExtend(s *jsonschema.Schema) {
	genEnum(genProp(s, "dist"), latency.Dists())
	genRef(genProp(s, "phases"), "phases")
	for _, d := range latency.Dists() {
		own := latency.Params(d)
		then := &jsonschema.Schema{Required: own, Properties: jsonschema.NewProperties(), AdditionalProperties: jsonschema.FalseSchema}
		for _, k := range append(slices.Clone(latencyCommonKeys), own...) {
			then.Properties.Set(k, jsonschema.TrueSchema)
		}
		s.AllOf = append(s.AllOf, &jsonschema.Schema{
			If:   genFragment(fmt.Sprintf(`{"required": ["dist"], "properties": {"dist": {"const": %q}}}`, d)),
			Then: then,
		})
	}
}

// faultRules are the per-action rules on a fault's keys: each applies to
// the actions of faultActions for which has is true, and names itself in a
// $comment (TestJSONSchemaFaultRules reads it).
var faultRules = []struct {
	name      string
	has       func(faultAction) bool
	then, els string
}{
	{"latency", func(a faultAction) bool { return a.Latency }, `{"required": ["latency"]}`, `{"not": {"required": ["latency"]}}`},
	{"no phases", func(a faultAction) bool { return !a.Phases }, `{"not": {"required": ["phases"]}}`, ""},
	{"duration required", func(a faultAction) bool { return a.Duration == durRequired },
		`{"required": ["duration"], "properties": {"duration": {"$ref": "#/$defs/positiveDuration"}}}`, ""},
	{"no round", func(a faultAction) bool { return !a.Round }, `{"properties": {"at": {"not": {"required": ["round"]}}}}`, ""},
	{"target required", func(a faultAction) bool { return a.Target == targetRequired }, `{"required": ["target"]}`, ""},
	{"no target", func(a faultAction) bool { return a.Target == targetNone }, `{"not": {"required": ["target"]}}`, ""},
	{"groups", func(a faultAction) bool { return a.Groups }, `{"required": ["groups"]}`, `{"not": {"required": ["groups"]}}`},
	{"no link keys", func(a faultAction) bool { return !a.Link },
		`{"not": {"anyOf": [{"required": ["from"]}, {"required": ["to"]}, {"required": ["one_way"]}, {"required": ["jitter"]}, {"required": ["bandwidth"]}]}}`, ""},
	{"no duration", func(a faultAction) bool { return a.Duration == durNone }, `{"not": {"required": ["duration"]}}`, ""},
}

func (rawFault) JSONSchemaExtend(s *jsonschema.Schema) {
	genEnum(genProp(s, "action"), faultActionNames())
	latencyForm(genProp(s, "latency"), false)
	genRef(genProp(s, "phases"), "phases")
	genRef(genProp(s, "bandwidth"), "bandwidth")
	// from and to name one link together; not with target.
	s.DependentRequired = map[string][]string{"from": {"to"}, "to": {"from"}, "one_way": {"from", "to"}}
	s.Not = genFragment(`{"anyOf": [{"required": ["target", "from"]}, {"required": ["target", "to"]}]}`)
	groups := genProp(s, "groups")
	groups.MinItems = genPtr(uint64(2))
	groups.Items.MinItems, groups.Items.UniqueItems = genPtr(uint64(1)), true
	for _, r := range faultRules {
		var actions []string
		for _, a := range faultActions {
			if r.has(a) {
				actions = append(actions, a.Name)
			}
		}
		cond := &jsonschema.Schema{}
		genEnum(cond, actions)
		rule := &jsonschema.Schema{Comments: r.name, If: &jsonschema.Schema{Required: []string{"action"}, Properties: jsonschema.NewProperties()}, Then: genFragment(r.then)}
		rule.If.Properties.Set("action", cond)
		if r.els != "" {
			rule.Else = genFragment(r.els)
		}
		s.AllOf = append(s.AllOf, rule)
	}
}

func (rawFaultAt) JSONSchemaExtend(s *jsonschema.Schema) {
	s.OneOf = []*jsonschema.Schema{genRequired("height"), genRequired("time")}
	s.DependentRequired = map[string][]string{"round": {"height"}}
	genPositive(genProp(s, "time"))
}

// JSONSchemaExtend: a chain metric takes no validator, and only phased
// metrics take a phase (Metrics).
func (rawExpect) JSONSchemaExtend(s *jsonschema.Schema) {
	genEnum(genProp(s, "metric"), metricNames())
	genRef(genProp(s, "phase"), "phase")
	s.AnyOf = []*jsonschema.Schema{genRequired("min"), genRequired("max")}
	var chain []string
	for _, m := range Metrics {
		if !m.PerValidator {
			chain = append(chain, m.Name)
		}
	}
	chainIf := &jsonschema.Schema{Required: []string{"metric"}, Properties: jsonschema.NewProperties()}
	chainIf.Properties.Set("metric", &jsonschema.Schema{})
	genEnum(genProp(chainIf, "metric"), chain)
	phased := &jsonschema.Schema{Properties: jsonschema.NewProperties()}
	phased.Properties.Set("metric", &jsonschema.Schema{})
	genEnum(genProp(phased, "metric"), phasedMetricNames())
	s.AllOf = []*jsonschema.Schema{
		{If: chainIf, Then: genFragment(`{"not": {"required": ["validator"]}}`)},
		{If: &jsonschema.Schema{Required: []string{"metric"}, Not: phased}, Then: genFragment(`{"not": {"required": ["phase"]}}`)},
	}
}
