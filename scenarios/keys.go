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
	walkKeys(func(level, key string, _ reflect.Type) {
		levels[level] = append(levels[level], key)
	})
	return levels
}

// walkKeys calls fn for every accepted key of every mapping level (named as
// in keyLevels), in declaration order, with the Go type of the key's value
// (pointers removed). It is the one walk over the raw schema; keyLevels and
// the --set paths (set.go) both read it.
func walkKeys(fn func(level, key string, t reflect.Type)) {
	var walk func(path string, t reflect.Type)
	walk = func(path string, t reflect.Type) {
		for _, f := range yamlFields(t) {
			ft := t.Field(f.Index).Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			fn(path, f.Key, ft)
			child, elem := childLevel(joinKey(path, f.Key), ft)
			if elem.Kind() == reflect.Struct {
				walk(child, elem)
			}
		}
	}
	walk("", reflect.TypeFor[rawScenario]())
}

// childLevel is the level name below key, whose value has type t, and the
// type of that level: "profiles.*" for a map, "validators[]" for a list.
func childLevel(key string, t reflect.Type) (string, reflect.Type) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Map {
		t = t.Elem()
		key += ".*"
	}
	if t.Kind() == reflect.Slice {
		t = t.Elem()
		key += "[]"
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return key, t
}

// joinKey extends a dotted key path.
func joinKey(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}
