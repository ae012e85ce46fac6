package scenarios

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"gopkg.in/yaml.v3"
)

// Setting is one scenario key set from the command line (valnet sweep
// --set PATH=VALUE). It is written into the YAML tree before the strict
// decode, so the value is checked by the same decoder, as if the file said
// it; problems with it are reported as "--set PATH=VALUE: message".
//
// PATH is dotted keys of the schema (run.heights, chain.timeouts.commit);
// NAME[KEY] selects, on a list of named entries (validators), the entry
// whose name: is KEY as written in the file (before count expansion), and
// on a map of names (profiles) the entry KEY. Missing mappings on the way
// are created. VALUE is a YAML scalar or flow value: 200ms, 4,
// {dist: uniform, min: 1ms, max: 5ms}.
type Setting struct {
	Path  string
	Value string
	// Flag is the command-line flag that gave it, as messages name it
	// ("--vary" for valnet threshold); "" is "--set".
	Flag string
}

// flag is the flag messages name the setting by.
func (s Setting) flag() string {
	if s.Flag == "" {
		return "--set"
	}
	return s.Flag
}

// String is the setting as written on the command line (quoted, as Go
// quotes, when it holds a newline or another unprintable character, so
// that a message or the comment naming it stays on one line).
func (s Setting) String() string { return oneLine(s.Path + "=" + s.Value) }

// oneLine is text, or text quoted when it holds an unprintable character.
func oneLine(text string) string {
	if strings.IndexFunc(text, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(text)
	}
	return text
}

// ValueKind is what a path's value is, so a command can tell whether a
// value or a range fits it before anything runs.
type ValueKind string

// Value kinds.
const (
	KindDuration ValueKind = "duration" // 200ms
	KindInteger  ValueKind = "integer"
	KindNumber   ValueKind = "number"
	KindString   ValueKind = "string"
	KindBool     ValueKind = "boolean"
	KindLatency  ValueKind = "latency" // a duration (fixed delay) or a latency mapping
	KindMapping  ValueKind = "mapping"
	KindList     ValueKind = "list"
)

// Numeric reports whether values of the kind lie on a line (a range of
// them can be bisected): duration, integer, number, and latency written as
// a duration.
func (k ValueKind) Numeric() bool {
	return k == KindDuration || k == KindInteger || k == KindNumber || k == KindLatency
}

// ParseSetFlag splits a --set argument "PATH=v1,v2,..." into its path and
// values (SplitValues). The path is checked against the schema (PathKind).
func ParseSetFlag(arg string) (path string, values []string, err error) {
	path, list, ok := strings.Cut(arg, "=")
	path = strings.TrimSpace(path)
	arg = oneLine(arg) // as messages show it
	if !ok || path == "" {
		return "", nil, fmt.Errorf("--set %s: write PATH=VALUE[,VALUE...], e.g. --set 'validators[hsm].signer.latency=50ms,200ms'", arg)
	}
	if _, err := PathKind(path); err != nil {
		return "", nil, fmt.Errorf("--set %s: %w", arg, err)
	}
	values, err = SplitValues(list)
	if err != nil {
		return "", nil, fmt.Errorf("--set %s: %w", arg, err)
	}
	return path, values, nil
}

// SplitValues splits "v1,v2,..." on the commas that are outside braces,
// brackets and quotes, so flow values stay whole:
// "{dist: uniform, min: 1ms, max: 5ms},200ms" is two values. Values are
// trimmed; an empty one is an error.
func SplitValues(s string) ([]string, error) {
	var (
		out   []string
		depth []byte // the closing brackets expected, innermost last
		quote byte
		start int
	)
	flush := func(end int) error {
		v := strings.TrimSpace(s[start:end])
		if v == "" {
			return fmt.Errorf("empty value at character %d; write v1,v2,... with no empty values", start+1)
		}
		out = append(out, v)
		start = end + 1
		return nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '{':
			depth = append(depth, '}')
		case c == '[':
			depth = append(depth, ']')
		case c == '}' || c == ']':
			if len(depth) == 0 || depth[len(depth)-1] != c {
				return nil, fmt.Errorf("unbalanced %q at character %d", c, i+1)
			}
			depth = depth[:len(depth)-1]
		case c == ',' && len(depth) == 0:
			if err := flush(i); err != nil {
				return nil, err
			}
		}
	}
	switch {
	case quote != 0:
		return nil, fmt.Errorf("unclosed quote %c", quote)
	case len(depth) > 0:
		return nil, fmt.Errorf("unclosed %q (expected %q)", s[strings.LastIndexAny(s, "{["):][:1], depth[len(depth)-1])
	}
	if err := flush(len(s)); err != nil {
		return nil, err
	}
	return out, nil
}

// PathStep is one dotted part of a path: a key, and NAME[KEY]'s KEY
// (ParsePath; the one reader of the path grammar).
type PathStep struct {
	Key    string
	Select string
	Has    bool // written with [KEY]
}

// String is the step as written.
func (s PathStep) String() string {
	if s.Has {
		return s.Key + "[" + s.Select + "]"
	}
	return s.Key
}

// ParsePath splits a path into steps (the grammar alone; checkPath and
// PathKind check them against the schema):
// validators[hsm].signer.latency -> validators[hsm], signer, latency.
func ParsePath(path string) ([]PathStep, error) {
	if strings.TrimSpace(path) == "" {
		return nil, fmt.Errorf("empty path; write e.g. run.heights or validators[NAME].signer.latency")
	}
	var steps []PathStep
	rest := path
	for {
		end := strings.IndexAny(rest, ".[")
		if end < 0 {
			end = len(rest)
		}
		st := PathStep{Key: rest[:end]}
		if st.Key == "" {
			return nil, fmt.Errorf("path %q has an empty key; keys are joined by single dots", path)
		}
		rest = rest[end:]
		if strings.HasPrefix(rest, "[") {
			close := strings.IndexByte(rest, ']')
			if close < 0 {
				return nil, fmt.Errorf("path %q: %s[ has no closing ]", path, st.Key)
			}
			st.Select, st.Has = rest[1:close], true
			if st.Select == "" {
				return nil, fmt.Errorf("path %q: %s[] names no entry; write %s[NAME]", path, st.Key, st.Key)
			}
			rest = rest[close+1:]
		}
		steps = append(steps, st)
		if rest == "" {
			return steps, nil
		}
		if !strings.HasPrefix(rest, ".") {
			return nil, fmt.Errorf("path %q: expected . after %s", path, st)
		}
		rest = rest[1:]
	}
}

// schemaKey is one accepted key of a level and its value's type.
type schemaKey struct {
	Key  string
	Type reflect.Type
}

// schemaLevels is walkKeys as a table: level -> its keys in order.
var schemaLevels = sync.OnceValue(func() map[string][]schemaKey {
	levels := make(map[string][]schemaKey)
	walkKeys(func(level, key string, t reflect.Type) {
		levels[level] = append(levels[level], schemaKey{key, t})
	})
	return levels
})

// stepKind says how a step's value is stored in the tree.
type stepKind int

const (
	stepLeaf     stepKind = iota // a scalar or a value the decoder reads whole
	stepMapping                  // a mapping of schema keys
	stepNamed                    // a list of mappings selected by name:
	stepMapEntry                 // a map of user-chosen names
)

// schemaStep is a path step checked against the schema.
type schemaStep struct {
	PathStep
	kind stepKind
	elem reflect.Type // the value's type; after a selection, the entry's
}

// typeKind is how a Go type of the raw schema is written.
var latencyType = reflect.TypeFor[rawLatency]()

func valueKind(t reflect.Type) ValueKind {
	switch {
	case t == durationType:
		return KindDuration
	case t == latencyType:
		return KindLatency
	}
	switch t.Kind() {
	case reflect.String:
		return KindString
	case reflect.Int64:
		return KindInteger
	case reflect.Float64:
		return KindNumber
	case reflect.Bool:
		return KindBool
	case reflect.Slice:
		return KindList
	}
	return KindMapping
}

// checkPath walks steps through the schema. The error says what is allowed
// at the level that went wrong.
func checkPath(path string) ([]schemaStep, *Error) {
	steps, err := ParsePath(path)
	if err != nil {
		return nil, &Error{Msg: err.Error()}
	}
	levels := schemaLevels()
	level, at := "", ""
	out := make([]schemaStep, 0, len(steps))
	for i, st := range steps {
		keys := levels[level]
		idx := slices.IndexFunc(keys, func(k schemaKey) bool { return k.Key == st.Key })
		if idx < 0 {
			names := make([]string, len(keys))
			for j, k := range keys {
				names[j] = k.Key
			}
			where := ""
			if at != "" {
				where = " under " + at
			}
			return nil, &Error{Msg: fmt.Sprintf("unknown key %q%s", st.Key, where) + didYouMean(st.Key, names), Allowed: names}
		}
		t := keys[idx].Type
		here := joinKey(at, st.Key)
		last := i == len(steps)-1
		ss := schemaStep{PathStep: st, elem: t}
		child, elem := childLevel(joinKey(level, st.Key), t)
		switch {
		case t.Kind() == reflect.Slice && elem.Kind() == reflect.Struct:
			if !st.Has {
				if !last {
					return nil, &Error{Msg: fmt.Sprintf("%s is a list; pick an entry with %s[NAME]", here, st.Key)}
				}
				break // the whole list, as YAML
			}
			if _, named := elem.FieldByName("Name"); !named {
				return nil, &Error{Msg: fmt.Sprintf("entries of %s have no name to select them by; set the whole list (%s=[...])", here, here)}
			}
			ss.kind, ss.elem, level = stepNamed, elem, child
		case t.Kind() == reflect.Map:
			if !st.Has {
				if !last {
					return nil, &Error{Msg: fmt.Sprintf("%s is a map of names; pick an entry with %s[NAME]", here, st.Key)}
				}
				break
			}
			ss.kind, ss.elem, level = stepMapEntry, t.Elem(), child
			if elem.Kind() != reflect.Struct && !last {
				return nil, &Error{Msg: fmt.Sprintf("%s is a value, not a mapping; end the path there", st)}
			}
		case st.Has:
			return nil, &Error{Msg: fmt.Sprintf("%s is not a list or a map; [%s] selects nothing there", here, st.Select)}
		case t.Kind() == reflect.Struct && t != latencyType:
			ss.kind, level = stepMapping, child
		case t == latencyType && !last:
			ss.kind, level = stepMapping, child // latency.dist, latency.value, ...
		default:
			if !last {
				return nil, &Error{Msg: fmt.Sprintf("%s is a value (%s), not a mapping; end the path there", here, valueKind(t))}
			}
		}
		at = here
		if st.Has {
			at = here + "[" + st.Select + "]"
		}
		out = append(out, ss)
	}
	return out, nil
}

// PathKind checks path against the schema alone (keys, selections; not
// whether a selected validator exists, which needs the scenario) and
// returns what its value is. A path ending on a selection
// (validators[hsm]) is a mapping.
func PathKind(path string) (ValueKind, error) {
	steps, err := checkPath(path)
	if err != nil {
		return "", err.plain()
	}
	return valueKind(steps[len(steps)-1].elem), nil
}

// plain is the error without position, as "msg (allowed: ...)".
func (e *Error) plain() error {
	msg := e.Msg
	if len(e.Allowed) > 0 {
		msg += " (allowed: " + strings.Join(e.Allowed, ", ") + ")"
	}
	return fmt.Errorf("%s", msg)
}

// setLine marks nodes that come from the k-th setting: yaml.v3 lines are
// >= 1, so a negative line is never a file position (decoder.at).
func setLine(k int) int { return -(k + 1) }

// settingOf returns the index of the setting a node's line marks.
func settingOf(line int) (int, bool) { return -line - 1, line < 0 }

// markSet stamps n and everything under it as coming from setting k.
func markSet(n *yaml.Node, k int) {
	n.Line, n.Column = setLine(k), 0
	for _, c := range n.Content {
		markSet(c, k)
	}
}

// applySettings writes each setting into the document tree, in order (a
// later one wins), and returns what went wrong, one Error per bad setting.
func applySettings(root *yaml.Node, sets []Setting) Errors {
	var errs Errors
	for k, s := range sets {
		if err := applySetting(root, s, k); err != nil {
			err.Pos = setPos(s)
			errs = append(errs, *err)
		}
	}
	return errs
}

func applySetting(root *yaml.Node, s Setting, k int) *Error {
	steps, perr := checkPath(s.Path)
	if perr != nil {
		return perr
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(s.Value), &doc); err != nil {
		return &Error{Msg: "the value is not YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	value := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	if len(doc.Content) == 1 {
		value = doc.Content[0]
	}
	markSet(value, k)
	node, at := root, ""
	for i, st := range steps {
		last := i == len(steps)-1
		here := joinKey(at, st.Key)
		child := mappingValue(node, st.Key)
		if last && !st.Has {
			setMappingValue(node, st.Key, value, k)
			return nil
		}
		switch st.kind {
		case stepNamed:
			if child == nil || child.Kind != yaml.SequenceNode {
				return &Error{Msg: fmt.Sprintf("the scenario has no %s list to pick %q from", here, st.Select)}
			}
			item, names := namedItem(child, st.Select)
			if item == nil {
				what := fmt.Sprintf("no entry of %s is named %q", here, st.Select)
				if here == "validators" {
					what = fmt.Sprintf("no validator named %q (the name as written in the file, before count expansion)", st.Select)
				}
				return &Error{Msg: what + didYouMean(st.Select, names), Allowed: names}
			}
			if last {
				*item = *value // the whole entry, replaced in place
				return nil
			}
			node = item
		case stepMapEntry:
			if child == nil || isNull(child) {
				child = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				markSet(child, k)
				setMappingValue(node, st.Key, child, k)
			}
			if child.Kind != yaml.MappingNode {
				return &Error{Msg: fmt.Sprintf("%s is written as %s in the file, not a mapping of names", here, describe(child))}
			}
			if last {
				setMappingValue(child, st.Select, value, k)
				return nil
			}
			entry := mappingValue(child, st.Select)
			if entry == nil || isNull(entry) {
				entry = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				markSet(entry, k)
				setMappingValue(child, st.Select, entry, k)
			}
			node = entry
		default: // stepMapping
			if child == nil || isNull(child) {
				child = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				markSet(child, k)
				setMappingValue(node, st.Key, child, k)
			}
			node = child
		}
		if node.Kind != yaml.MappingNode {
			return &Error{Msg: fmt.Sprintf("%s is written as %s in the file, not a mapping; set %s itself", here, describe(node), here)}
		}
		at = here
		if st.Has {
			at += "[" + st.Select + "]"
		}
	}
	return nil
}

// mappingValue returns the value of key in mapping n (aliases followed),
// or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			v := n.Content[i+1]
			for v.Kind == yaml.AliasNode {
				v = v.Alias
			}
			return v
		}
	}
	return nil
}

// setMappingValue replaces key's value in n, or appends the key.
func setMappingValue(n *yaml.Node, key string, value *yaml.Node, k int) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			n.Content[i+1] = value
			return
		}
	}
	kn := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
	markSet(kn, k)
	n.Content = append(n.Content, kn, value)
}

// namedItem returns the mapping in list n whose name: is name, and every
// name written there.
func namedItem(n *yaml.Node, name string) (*yaml.Node, []string) {
	var names []string
	for _, item := range n.Content {
		for item.Kind == yaml.AliasNode {
			item = item.Alias
		}
		if item.Kind != yaml.MappingNode {
			continue
		}
		if v := mappingValue(item, "name"); v != nil && v.Kind == yaml.ScalarNode {
			if v.Value == name {
				return item, nil
			}
			names = append(names, v.Value)
		}
	}
	return nil, names
}

// settingsText is the scenario text with the settings applied, kept beside
// a run's results so its run directory says exactly what ran.
func settingsText(root *yaml.Node, sets []Setting, original []byte) []byte {
	var b strings.Builder
	b.WriteString("# valnet: this is the scenario with these keys set from the command line:\n")
	for _, s := range sets {
		fmt.Fprintf(&b, "#   %s %s\n", s.flag(), s)
	}
	out, err := yaml.Marshal(root)
	if err != nil {
		return original // cannot happen for a tree that was just parsed
	}
	return append([]byte(b.String()), out...)
}
