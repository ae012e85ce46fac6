package scenarios

import (
	"reflect"
	"strings"
)

// yamlField is one accepted key of a raw struct and the field it fills.
type yamlField struct {
	Key   string
	Index int
}

// yamlFields lists the keys a raw struct accepts, in declaration order, from
// its yaml tags. Fields without a tag are internal and never decoded.
func yamlFields(t reflect.Type) []yamlField {
	var out []yamlField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("yaml")
		if !ok || !f.IsExported() {
			continue
		}
		key, _, _ := strings.Cut(tag, ",")
		if key == "" || key == "-" {
			continue
		}
		out = append(out, yamlField{Key: key, Index: i})
	}
	return out
}

// keyLevels maps every mapping level of a scenario to its accepted keys.
// Levels are named like error keys with list indexes dropped and names
// chosen by the user (keys of a map, such as profile names) written "*":
// "" (the document), "chain.timeouts", "validators[]",
// "validators[].signer.latency", "profiles.*.by_payload[]".
// This is what the JSON Schema and the docs are checked against.
func keyLevels() map[string][]string {
	levels := make(map[string][]string)
	var walk func(path string, t reflect.Type)
	walk = func(path string, t reflect.Type) {
		for _, f := range yamlFields(t) {
			levels[path] = append(levels[path], f.Key)
			ft := t.Field(f.Index).Type
			child := joinKey(path, f.Key)
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Map {
				ft = ft.Elem()
				child += ".*"
			}
			if ft.Kind() == reflect.Slice {
				ft = ft.Elem()
				child += "[]"
			}
			if ft.Kind() == reflect.Struct {
				walk(child, ft)
			}
		}
	}
	walk("", reflect.TypeFor[rawScenario]())
	return levels
}

// joinKey extends a dotted key path.
func joinKey(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}
