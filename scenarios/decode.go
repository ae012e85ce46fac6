package scenarios

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// decoder walks a yaml.Node tree into the raw types (schema.go) itself,
// rather than through yaml.v3's Decode, so that it can report every unknown
// key, duplicate key and wrong type at once, each with line and column.
// yaml.v3 stops at the first unknown key and reports no columns.
type decoder struct {
	file string
	dir  string // relative paths in the scenario are joined to it; "": kept as written
	errs Errors
	pos  map[string]nodePos // every key path written in the file
	bad  map[string]bool    // key paths that already have an error
	// latencyText lets a latency also be written as latency.Parse's text,
	// as the signer serve command's --latency is (its config file only).
	latencyText bool
	// sets are the command-line settings written into the tree
	// (Overrides.Set); their nodes carry negative lines (setLine).
	sets []Setting
	// maxDuration is run.max_duration once resolved (0 before, and for a
	// signer serve config): a latency longer than the run is an error.
	maxDuration time.Duration
	// hasLoad: the scenario has a load key (load metrics may be expected).
	hasLoad bool
	// visits counts the nodes decoded, aliases followed; past maxVisits
	// (the document's own nodes plus maxAliasValues) decoding stops, and
	// bombed holds the one error said.
	visits, maxVisits int
	alias             *yaml.Node // the outermost alias being followed, if any
	aliasKey          string     // its key path
	bombed            *Error
}

// maxAliasValues is how many values YAML aliases may add to a document
// beyond those written in it. Reusing an anchor for every validator adds a
// few thousand; an alias bomb ("billion laughs": lists of aliases to lists
// of aliases) adds billions in a few hundred bytes, and would hold the
// decoder and its memory for as long.
const maxAliasValues = 100_000

// nodePos is where a key and its value were written. List items have both
// set to the item.
type nodePos struct{ Key, Value Pos }

func newDecoder(file string) *decoder {
	return &decoder{file: file, pos: make(map[string]nodePos), bad: make(map[string]bool)}
}

// at is the position of n in the file.
func (d *decoder) at(n *yaml.Node) Pos {
	if k, ok := settingOf(n.Line); ok && k < len(d.sets) {
		return setPos(d.sets[k])
	}
	return Pos{File: d.file, Line: n.Line, Col: n.Column}
}

// fail records one problem.
func (d *decoder) fail(p Pos, key, msg string, allowed ...string) {
	d.errs = append(d.errs, Error{Pos: p, Key: key, Msg: msg, Allowed: allowed})
	if key != "" { // an odd key in the document must not silence every other check
		d.bad[key] = true
	}
}

// laterKey is whichever of two written keys comes later in the file: where
// "give only one of a and b" belongs.
func (d *decoder) laterKey(a, b string) string {
	if before(d.keyPos(b), d.keyPos(a)) {
		return a
	}
	return b
}

// written reports whether key appears in the file.
func (d *decoder) written(key string) bool {
	_, ok := d.pos[key]
	return ok
}

// failed reports whether key or a key above it already has an error, so
// that later checks stay quiet instead of piling a second message on the
// first (a list item that is not a mapping has no name to complain about).
func (d *decoder) failed(key string) bool {
	for {
		if d.bad[key] {
			return true
		}
		if key == "" {
			return false
		}
		key = parentKey(key)
	}
}

// valuePos is where key's value was written or, for a key that is not in the
// file, where its nearest written parent is: that is where to add it.
func (d *decoder) valuePos(key string) Pos {
	for {
		if p, ok := d.pos[key]; ok {
			return p.Value
		}
		if key == "" {
			return Pos{File: d.file, Line: 1, Col: 1}
		}
		key = parentKey(key)
	}
}

// keyPos is where key itself was written (falls back like valuePos).
func (d *decoder) keyPos(key string) Pos {
	if p, ok := d.pos[key]; ok {
		return p.Key
	}
	return d.valuePos(key)
}

// parentKey strips the last ".name" or "[i]" from a key path.
func parentKey(key string) string {
	i := strings.LastIndexAny(key, ".[")
	if i < 0 {
		return ""
	}
	return key[:i]
}

// scalarShorthand is implemented by raw types that also accept a bare scalar
// in place of their mapping (latency: 200ms).
type scalarShorthand interface {
	decodeScalar(d *decoder, n *yaml.Node, key string)
}

// customDecoder is implemented by raw types whose keys are not valnet's
// (node.config holds CometBFT's config.toml keys): they walk their node
// themselves.
type customDecoder interface {
	decodeYAML(d *decoder, n *yaml.Node, key string)
}

var durationType = reflect.TypeFor[time.Duration]()

// decode fills v (addressable) from n. key is n's path, for messages.
// The first call (with the document's root) sets the alias budget.
func (d *decoder) decode(n *yaml.Node, key string, v reflect.Value) {
	if d.maxVisits == 0 {
		d.maxVisits = countNodes(n) + maxAliasValues
	}
	if d.overBudget(n, key) {
		return
	}
	if n.Kind == yaml.AliasNode && d.alias == nil {
		d.alias, d.aliasKey = n, key
		defer func() { d.alias = nil }()
	}
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if v.Kind() == reflect.Pointer {
		// A null mapping or list (a key with nothing after it, or whose
		// entries are all commented out) means "not written". A null
		// scalar is a missing value and reported below.
		elem := v.Type().Elem()
		if isNull(n) && (elem.Kind() == reflect.Struct || elem.Kind() == reflect.Slice) {
			return
		}
		v.Set(reflect.New(elem))
		d.decode(n, key, v.Elem())
		if d.bad[key] {
			v.SetZero() // a bad value counts as not given; the error says why
		}
		return
	}
	if c, ok := v.Addr().Interface().(customDecoder); ok {
		c.decodeYAML(d, n, key)
		return
	}
	if s, ok := v.Addr().Interface().(scalarShorthand); ok && n.Kind == yaml.ScalarNode && !isNull(n) {
		s.decodeScalar(d, n, key)
		return
	}
	switch {
	case v.Type() == durationType:
		if dur, ok := d.duration(n, key); ok {
			v.SetInt(int64(dur))
		}
	case v.Kind() == reflect.Struct:
		d.mapping(n, key, v)
	case v.Kind() == reflect.Slice:
		d.sequence(n, key, v)
	case v.Kind() == reflect.Map && v.Type().Key().Kind() == reflect.String:
		d.dict(n, key, v)
	case v.Kind() == reflect.String:
		if d.scalar(n, key, "a string") {
			v.SetString(n.Value)
		}
	case v.Kind() == reflect.Int64:
		if i, ok := d.integer(n, key); ok {
			v.SetInt(i)
		}
	case v.Kind() == reflect.Float64:
		if f, ok := d.number(n, key); ok {
			v.SetFloat(f)
		}
	case v.Kind() == reflect.Bool:
		if b, ok := d.boolean(n, key); ok {
			v.SetBool(b)
		}
	default:
		panic("scenarios: no decoder for " + v.Type().String())
	}
}

// countNodes is the number of nodes written in the tree under n (aliases
// count once, not what they stand for).
func countNodes(n *yaml.Node) int {
	c := 1
	for _, child := range n.Content {
		c += countNodes(child)
	}
	return c
}

// overBudget counts one visit and reports whether decoding has gone past
// the alias budget, saying so once, at the alias being followed.
func (d *decoder) overBudget(n *yaml.Node, key string) bool {
	if d.bombed != nil {
		return true
	}
	if d.visits++; d.visits <= d.maxVisits {
		return false
	}
	at := n
	if d.alias != nil {
		at, key = d.alias, d.aliasKey
	}
	d.bombed = &Error{Pos: d.at(at), Key: key, Msg: fmt.Sprintf(
		"YAML aliases here expand to more than %d values beyond the %d written in the file (an alias bomb?); write the values out, or nest fewer aliases",
		maxAliasValues, d.maxVisits-maxAliasValues)}
	d.errs = append(d.errs, *d.bombed)
	return true
}

// unknownKeyHints replace the "did you mean" guess for keys that are
// refused on purpose, by the raw type they were written in.
var unknownKeyHints = map[reflect.Type]map[string]string{
	reflect.TypeFor[rawSigner](): {
		"passphrase": "passphrases never go in a scenario; use passphrase_env or passphrase_file",
		"password":   "passphrases never go in a scenario; use passphrase_env or passphrase_file",
	},
}

// mapping fills struct v from mapping n, key by key.
func (d *decoder) mapping(n *yaml.Node, key string, v reflect.Value) {
	if isNull(n) {
		return // e.g. a list item with nothing in it; required keys are checked later
	}
	if n.Kind != yaml.MappingNode {
		d.fail(d.at(n), key, "expected a mapping (key: value lines), got "+describe(n))
		return
	}
	fields := yamlFields(v.Type())
	allowed := make([]string, len(fields))
	for i, f := range fields {
		allowed[i] = f.Key
	}
	d.entries(n, key, func(kn, vn *yaml.Node, name, child string) {
		idx := -1
		for _, f := range fields {
			if f.Key == name {
				idx = f.Index
			}
		}
		if idx < 0 {
			msg := "unknown key"
			if hint := unknownKeyHints[v.Type()][name]; hint != "" {
				msg += ": " + hint
			} else {
				msg += didYouMean(name, allowed)
			}
			d.fail(d.at(kn), child, msg, allowed...)
			return
		}
		d.pos[child] = nodePos{Key: d.at(kn), Value: d.at(vn)}
		d.decode(vn, child, v.Field(idx))
	})
}

// dict fills map v (string keys chosen by the user, such as profile names)
// from mapping n; entries are keyed "key.name".
func (d *decoder) dict(n *yaml.Node, key string, v reflect.Value) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.fail(d.at(n), key, "expected a mapping (name: value lines), got "+describe(n))
		return
	}
	m := reflect.MakeMap(v.Type())
	d.entries(n, key, func(kn, vn *yaml.Node, name, child string) {
		d.pos[child] = nodePos{Key: d.at(kn), Value: d.at(vn)}
		elem := reflect.New(v.Type().Elem()).Elem()
		d.decode(vn, child, elem)
		m.SetMapIndex(reflect.ValueOf(name), elem)
	})
	v.Set(m)
}

// entries calls fn for each key of mapping n that is a plain, unrepeated
// name, reporting the others.
func (d *decoder) entries(n *yaml.Node, key string, fn func(kn, vn *yaml.Node, name, child string)) {
	firstLine := make(map[string]int)
	for i := 0; i+1 < len(n.Content) && d.bombed == nil; i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		for kn.Kind == yaml.AliasNode {
			kn = kn.Alias
		}
		if kn.Kind != yaml.ScalarNode {
			d.fail(d.at(kn), key, "keys must be plain names, got "+describe(kn))
			continue
		}
		name := kn.Value
		child := joinKey(key, name)
		if kn.ShortTag() == "!!merge" {
			d.fail(d.at(kn), child, "YAML merge keys are not supported; write the keys out")
			continue
		}
		if line, dup := firstLine[name]; dup {
			d.fail(d.at(kn), child, fmt.Sprintf("duplicate key (first at line %d)", line))
			continue
		}
		firstLine[name] = kn.Line
		fn(kn, vn, name, child)
	}
}

// sequence fills slice v from list n; items are keyed "key[i]".
func (d *decoder) sequence(n *yaml.Node, key string, v reflect.Value) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(d.at(n), key, "expected a list (\"- item\" lines), got "+describe(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		if d.bombed != nil {
			break
		}
		child := fmt.Sprintf("%s[%d]", key, i)
		d.pos[child] = nodePos{Key: d.at(item), Value: d.at(item)}
		d.decode(item, child, s.Index(i))
	}
	v.Set(s)
}

// scalar checks that n is a single non-null value.
func (d *decoder) scalar(n *yaml.Node, key, want string) bool {
	if n.Kind == yaml.ScalarNode && !isNull(n) {
		return true
	}
	if isNull(n) {
		d.fail(d.at(n), key, "no value; write "+want+" or remove the key")
	} else {
		d.fail(d.at(n), key, "expected "+want+", got "+describe(n))
	}
	return false
}

// bigInt matches integers too large for int64, which yaml.v3 tags !!float.
var bigInt = regexp.MustCompile(`^[-+]?[0-9]+$`)

func (d *decoder) integer(n *yaml.Node, key string) (int64, bool) {
	if !d.scalar(n, key, "an integer") {
		return 0, false
	}
	if n.ShortTag() == "!!float" && bigInt.MatchString(n.Value) {
		d.fail(d.at(n), key, fmt.Sprintf("integer %s is out of range", n.Value))
		return 0, false
	}
	if n.ShortTag() != "!!int" {
		d.fail(d.at(n), key, "expected an integer, got "+describe(n))
		return 0, false
	}
	var i int64
	if err := n.Decode(&i); err != nil {
		d.fail(d.at(n), key, fmt.Sprintf("integer %s is out of range", n.Value))
		return 0, false
	}
	return i, true
}

func (d *decoder) number(n *yaml.Node, key string) (float64, bool) {
	if !d.scalar(n, key, "a number") {
		return 0, false
	}
	if t := n.ShortTag(); t != "!!int" && t != "!!float" {
		d.fail(d.at(n), key, "expected a number, got "+describe(n))
		return 0, false
	}
	var f float64
	if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		d.fail(d.at(n), key, fmt.Sprintf("expected a finite number, got %s", n.Value))
		return 0, false
	}
	return f, true
}

// boolean reads true or false. yaml.v3 also tags yes, no, on and off as
// strings (YAML 1.2), so they are refused rather than guessed.
func (d *decoder) boolean(n *yaml.Node, key string) (bool, bool) {
	if !d.scalar(n, key, "true or false") {
		return false, false
	}
	var b bool
	if n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		d.fail(d.at(n), key, "expected true or false, got "+describe(n))
		return false, false
	}
	return b, true
}

// duration reads a Go duration string ("200ms", "1.5s"). A bare 0 is zero;
// any other bare number is refused, as its unit would be a guess. Every
// duration in a scenario is a delay or a timeout, so none may be negative.
func (d *decoder) duration(n *yaml.Node, key string) (time.Duration, bool) {
	if !d.scalar(n, key, "a duration like 200ms") {
		return 0, false
	}
	switch n.ShortTag() {
	case "!!str":
		v, err := time.ParseDuration(n.Value)
		if err != nil {
			d.fail(d.at(n), key, fmt.Sprintf("%q is not a duration; write e.g. 200ms, 1.5s or 2m", n.Value))
			return 0, false
		}
		if v < 0 {
			d.fail(d.at(n), key, fmt.Sprintf("negative duration %s; delays and timeouts must be >= 0", n.Value))
			return 0, false
		}
		return v, true
	case "!!int", "!!float":
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil && f == 0 {
			return 0, true
		}
		d.fail(d.at(n), key, fmt.Sprintf("%s has no unit; write e.g. 200ms", n.Value))
		return 0, false
	default:
		d.fail(d.at(n), key, "expected a duration like 200ms, got "+describe(n))
		return 0, false
	}
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names what a node holds, for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.ShortTag() {
	case "!!null":
		return "nothing"
	case "!!int":
		return "integer " + n.Value
	case "!!float":
		return "number " + n.Value
	case "!!bool":
		return "boolean " + n.Value
	default:
		return strconv.Quote(n.Value)
	}
}

// suggest returns the allowed key closest to a misspelt one, if close.
func suggest(got string, allowed []string) string {
	best, bestDist := "", 3 // more than two edits away is not a typo
	for _, a := range allowed {
		if dist := editDistance(got, a); dist < bestDist {
			best, bestDist = a, dist
		}
	}
	return best
}

// didYouMean is "; did you mean X?" for the allowed value closest to a
// misspelt one, or "" when none is close.
func didYouMean(got string, allowed []string) string {
	if s := suggest(got, allowed); s != "" {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// DidYouMean is didYouMean for checks outside the decoder (node.config
// keys, which only the node binary knows).
func DidYouMean(got string, allowed []string) string { return didYouMean(got, allowed) }
