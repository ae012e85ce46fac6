package nodes

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	cfg "github.com/cometbft/cometbft/config"
)

// LoadConfig reads a node's home as `cometbft start --home` does: CometBFT's
// defaults, overlaid with what config/config.toml says, paths rooted at
// home, validated.
//
// CometBFT reads the file with viper; valnet's module does not depend on
// viper, so the file is decoded here the way viper's Unmarshal does it:
// keys matched to `mapstructure` tags case-insensitively, durations from
// strings ("1s"), a string into a list split at commas (statesync's
// rpc_servers), weak conversions ("4" into an int), unknown keys ignored.
// TOML arrays of tables and dates are refused (config.toml has none).
func LoadConfig(home string) (*cfg.Config, error) {
	c, _, err := loadConfig(home)
	return c, err
}

// loadConfig is LoadConfig that also returns the keys it did not know
// (viper ignores them silently; the node logs them).
func loadConfig(home string) (*cfg.Config, []string, error) {
	path := filepath.Join(home, "config", "config.toml")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	tree, err := parseTOML(string(data))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	c := cfg.DefaultConfig()
	var unknown []string
	if err := decodeStruct(tree, reflect.ValueOf(c).Elem(), "", &unknown); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	c.SetRoot(home)
	if err := c.ValidateBasic(); err != nil {
		return nil, nil, fmt.Errorf("error in config file %s: %w", path, err)
	}
	slices.Sort(unknown)
	return c, unknown, nil
}

var durationType = reflect.TypeOf(time.Duration(0))

// fieldsOf maps the lower-cased mapstructure names of a struct's fields
// (squashed embedded structs included) to the fields.
func fieldsOf(v reflect.Value, into map[string]reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "squash") && f.Type.Kind() == reflect.Struct {
			fieldsOf(v.Field(i), into)
			continue
		}
		if name == "" {
			name = f.Name
		}
		into[strings.ToLower(name)] = v.Field(i)
	}
}

func decodeStruct(m map[string]any, v reflect.Value, prefix string, unknown *[]string) error {
	fields := map[string]reflect.Value{}
	fieldsOf(v, fields)
	for k, val := range m {
		f, ok := fields[strings.ToLower(k)]
		if !ok {
			*unknown = append(*unknown, prefix+k)
			continue
		}
		if err := decodeValue(val, f, prefix+k, unknown); err != nil {
			return err
		}
	}
	return nil
}

func decodeValue(in any, out reflect.Value, path string, unknown *[]string) error {
	bad := func() error {
		return fmt.Errorf("%s: cannot use %T %v as %s", path, in, in, out.Type())
	}
	if out.Kind() == reflect.Pointer {
		if out.IsNil() {
			out.Set(reflect.New(out.Type().Elem()))
		}
		return decodeValue(in, out.Elem(), path, unknown)
	}
	if out.Type() == durationType {
		switch x := in.(type) {
		case string:
			d, err := time.ParseDuration(x)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			out.SetInt(int64(d))
		case int64:
			out.SetInt(x)
		default:
			return bad()
		}
		return nil
	}
	switch out.Kind() {
	case reflect.Struct:
		m, ok := in.(map[string]any)
		if !ok {
			return bad()
		}
		return decodeStruct(m, out, path+".", unknown)
	case reflect.String:
		switch x := in.(type) {
		case string:
			out.SetString(x)
		case bool:
			out.SetString(map[bool]string{true: "1", false: "0"}[x])
		case int64:
			out.SetString(strconv.FormatInt(x, 10))
		case float64:
			out.SetString(strconv.FormatFloat(x, 'f', -1, 64))
		default:
			return bad()
		}
	case reflect.Bool:
		switch x := in.(type) {
		case bool:
			out.SetBool(x)
		case int64:
			out.SetBool(x != 0)
		case string:
			b, err := strconv.ParseBool(x)
			if x == "" {
				b, err = false, nil
			}
			if err != nil {
				return bad()
			}
			out.SetBool(b)
		default:
			return bad()
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := toInt(in)
		if err != nil || out.OverflowInt(n) {
			return bad()
		}
		out.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := toInt(in)
		if err != nil || n < 0 || out.OverflowUint(uint64(n)) {
			return bad()
		}
		out.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		switch x := in.(type) {
		case float64:
			out.SetFloat(x)
		case int64:
			out.SetFloat(float64(x))
		case string:
			f, err := strconv.ParseFloat(x, 64)
			if err != nil {
				return bad()
			}
			out.SetFloat(f)
		default:
			return bad()
		}
	case reflect.Slice:
		var items []any
		switch x := in.(type) {
		case []any:
			items = x
		case string:
			// viper's StringToSliceHookFunc(","): "" is an empty list.
			if x != "" {
				for _, s := range strings.Split(x, ",") {
					items = append(items, s)
				}
			}
		default:
			return bad()
		}
		s := reflect.MakeSlice(out.Type(), len(items), len(items))
		for i, it := range items {
			if err := decodeValue(it, s.Index(i), fmt.Sprintf("%s[%d]", path, i), unknown); err != nil {
				return err
			}
		}
		out.Set(s)
	case reflect.Map:
		m, ok := in.(map[string]any)
		if !ok || out.Type().Key().Kind() != reflect.String {
			return bad()
		}
		mv := reflect.MakeMap(out.Type())
		for k, x := range m {
			e := reflect.New(out.Type().Elem()).Elem()
			if err := decodeValue(x, e, path+"."+k, unknown); err != nil {
				return err
			}
			mv.SetMapIndex(reflect.ValueOf(k).Convert(out.Type().Key()), e)
		}
		out.Set(mv)
	default:
		return bad()
	}
	return nil
}

func toInt(in any) (int64, error) {
	switch x := in.(type) {
	case int64:
		return x, nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > math.MaxInt64 {
			return 0, errors.New("not an integer")
		}
		return int64(x), nil
	case string:
		if x == "" {
			return 0, nil
		}
		return strconv.ParseInt(x, 0, 64)
	}
	return 0, errors.New("not a number")
}

// parseTOML parses the TOML that CometBFT's config files use: tables,
// dotted keys, strings (basic, literal, multi-line), integers, floats,
// booleans, arrays and inline tables. Values are string, int64, float64,
// bool, []any and map[string]any.
func parseTOML(s string) (map[string]any, error) {
	p := &tomlParser{s: s, line: 1}
	root := map[string]any{}
	cur := root
	for {
		p.skipSpace(true)
		if p.eof() {
			return root, nil
		}
		var err error
		if p.peek() == '[' {
			cur, err = p.table(root)
		} else {
			err = p.keyValue(cur)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", p.line, err)
		}
		if err := p.endOfLine(); err != nil {
			return nil, fmt.Errorf("line %d: %w", p.line, err)
		}
	}
}

type tomlParser struct {
	s    string
	i    int
	line int
}

func (p *tomlParser) eof() bool  { return p.i >= len(p.s) }
func (p *tomlParser) peek() byte { return p.s[p.i] }

// skipSpace skips blanks and comments, and newlines too if nl.
func (p *tomlParser) skipSpace(nl bool) {
	for !p.eof() {
		switch c := p.peek(); {
		case c == ' ' || c == '\t' || c == '\r':
			p.i++
		case c == '\n' && nl:
			p.i++
			p.line++
		case c == '#':
			for !p.eof() && p.peek() != '\n' {
				p.i++
			}
		default:
			return
		}
	}
}

func (p *tomlParser) endOfLine() error {
	p.skipSpace(false)
	if p.eof() {
		return nil
	}
	if p.peek() != '\n' {
		return fmt.Errorf("unexpected %q after value", p.s[p.i:min(p.i+10, len(p.s))])
	}
	return nil
}

func (p *tomlParser) table(root map[string]any) (map[string]any, error) {
	p.i++ // [
	if !p.eof() && p.peek() == '[' {
		return nil, errors.New("arrays of tables are not supported")
	}
	keys, err := p.keyPath()
	if err != nil {
		return nil, err
	}
	p.skipSpace(false)
	if p.eof() || p.peek() != ']' {
		return nil, errors.New("expected ] after table name")
	}
	p.i++
	return descend(root, keys)
}

// descend returns the table at keys under m, creating it as needed.
func descend(m map[string]any, keys []string) (map[string]any, error) {
	for _, k := range keys {
		switch x := m[k].(type) {
		case nil:
			next := map[string]any{}
			m[k] = next
			m = next
		case map[string]any:
			m = x
		default:
			return nil, fmt.Errorf("key %q is already a value, not a table", k)
		}
	}
	return m, nil
}

func (p *tomlParser) keyValue(m map[string]any) error {
	keys, err := p.keyPath()
	if err != nil {
		return err
	}
	p.skipSpace(false)
	if p.eof() || p.peek() != '=' {
		return fmt.Errorf("expected = after key %q", strings.Join(keys, "."))
	}
	p.i++
	p.skipSpace(false)
	v, err := p.value()
	if err != nil {
		return fmt.Errorf("%s: %w", strings.Join(keys, "."), err)
	}
	t, err := descend(m, keys[:len(keys)-1])
	if err != nil {
		return err
	}
	last := keys[len(keys)-1]
	if _, dup := t[last]; dup {
		return fmt.Errorf("duplicate key %q", strings.Join(keys, "."))
	}
	t[last] = v
	return nil
}

func (p *tomlParser) keyPath() ([]string, error) {
	var keys []string
	for {
		p.skipSpace(false)
		if p.eof() {
			return nil, errors.New("expected a key")
		}
		var k string
		switch p.peek() {
		case '"', '\'':
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			k = v.(string)
		default:
			start := p.i
			for !p.eof() && isBareKeyChar(p.peek()) {
				p.i++
			}
			if p.i == start {
				return nil, fmt.Errorf("unexpected %q where a key belongs", p.peek())
			}
			k = p.s[start:p.i]
		}
		keys = append(keys, k)
		p.skipSpace(false)
		if p.eof() || p.peek() != '.' {
			return keys, nil
		}
		p.i++
	}
}

func isBareKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func (p *tomlParser) value() (any, error) {
	if p.eof() {
		return nil, errors.New("expected a value")
	}
	switch c := p.peek(); c {
	case '"':
		if strings.HasPrefix(p.s[p.i:], `"""`) {
			return p.multiline(`"""`, true)
		}
		return p.basicString()
	case '\'':
		if strings.HasPrefix(p.s[p.i:], `'''`) {
			return p.multiline(`'''`, false)
		}
		p.i++
		end := strings.IndexAny(p.s[p.i:], "'\n")
		if end < 0 || p.s[p.i+end] != '\'' {
			return nil, errors.New("unterminated string")
		}
		v := p.s[p.i : p.i+end]
		p.i += end + 1
		return v, nil
	case '[':
		return p.array()
	case '{':
		return p.inlineTable()
	}
	start := p.i
	for !p.eof() && !strings.ContainsRune(" \t\r\n,]}#", rune(p.peek())) {
		p.i++
	}
	return scalar(p.s[start:p.i])
}

func scalar(tok string) (any, error) {
	switch tok {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "inf", "+inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	case "nan", "+nan", "-nan":
		return math.NaN(), nil
	}
	clean := strings.ReplaceAll(tok, "_", "")
	if n, err := strconv.ParseInt(clean, 0, 64); err == nil {
		return n, nil
	}
	if f, err := strconv.ParseFloat(clean, 64); err == nil && !strings.ContainsAny(clean, "xXpP") {
		return f, nil
	}
	return nil, fmt.Errorf("unsupported value %q (dates are not supported)", tok)
}

func (p *tomlParser) basicString() (string, error) {
	p.i++ // "
	var b strings.Builder
	for {
		if p.eof() || p.peek() == '\n' {
			return "", errors.New("unterminated string")
		}
		c := p.peek()
		p.i++
		switch c {
		case '"':
			return b.String(), nil
		case '\\':
			if err := p.escape(&b); err != nil {
				return "", err
			}
		default:
			b.WriteByte(c)
		}
	}
}

func (p *tomlParser) escape(b *strings.Builder) error {
	if p.eof() {
		return errors.New("unterminated escape")
	}
	c := p.peek()
	p.i++
	switch c {
	case 'b':
		b.WriteByte('\b')
	case 't':
		b.WriteByte('\t')
	case 'n':
		b.WriteByte('\n')
	case 'f':
		b.WriteByte('\f')
	case 'r':
		b.WriteByte('\r')
	case 'e':
		b.WriteByte(0x1b)
	case '"', '\\', '/', '\'':
		// \' is not TOML, but CometBFT's template writes paths with
		// JavaScript escaping, which produces it.
		b.WriteByte(c)
	case 'u', 'U':
		n := 4
		if c == 'U' {
			n = 8
		}
		if p.i+n > len(p.s) {
			return errors.New("short unicode escape")
		}
		r, err := strconv.ParseUint(p.s[p.i:p.i+n], 16, 32)
		if err != nil {
			return fmt.Errorf("bad unicode escape: %w", err)
		}
		b.WriteRune(rune(r))
		p.i += n
	default:
		return fmt.Errorf("unknown escape \\%c", c)
	}
	return nil
}

func (p *tomlParser) multiline(delim string, escapes bool) (string, error) {
	p.i += 3
	// A newline right after the opening delimiter is trimmed.
	if strings.HasPrefix(p.s[p.i:], "\r\n") {
		p.i += 2
		p.line++
	} else if !p.eof() && p.peek() == '\n' {
		p.i++
		p.line++
	}
	var b strings.Builder
	for {
		if p.eof() {
			return "", errors.New("unterminated multi-line string")
		}
		if strings.HasPrefix(p.s[p.i:], delim) {
			p.i += 3
			return b.String(), nil
		}
		c := p.peek()
		p.i++
		switch {
		case c == '\n':
			p.line++
			b.WriteByte(c)
		case c == '\\' && escapes:
			// A backslash at the end of a line trims the line break and
			// the blanks that follow.
			rest := strings.TrimLeft(p.s[p.i:], " \t\r")
			if strings.HasPrefix(rest, "\n") {
				for !p.eof() && strings.ContainsRune(" \t\r\n", rune(p.peek())) {
					if p.peek() == '\n' {
						p.line++
					}
					p.i++
				}
				continue
			}
			if err := p.escape(&b); err != nil {
				return "", err
			}
		default:
			b.WriteByte(c)
		}
	}
}

func (p *tomlParser) array() ([]any, error) {
	p.i++ // [
	out := []any{}
	for {
		p.skipSpace(true)
		if p.eof() {
			return nil, errors.New("unterminated array")
		}
		if p.peek() == ']' {
			p.i++
			return out, nil
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		p.skipSpace(true)
		if p.eof() {
			return nil, errors.New("unterminated array")
		}
		switch p.peek() {
		case ',':
			p.i++
		case ']':
		default:
			return nil, fmt.Errorf("expected , or ] in array, got %q", p.peek())
		}
	}
}

func (p *tomlParser) inlineTable() (map[string]any, error) {
	p.i++ // {
	out := map[string]any{}
	for {
		p.skipSpace(false)
		if p.eof() {
			return nil, errors.New("unterminated inline table")
		}
		if p.peek() == '}' {
			p.i++
			return out, nil
		}
		if err := p.keyValue(out); err != nil {
			return nil, err
		}
		p.skipSpace(false)
		if p.eof() {
			return nil, errors.New("unterminated inline table")
		}
		switch p.peek() {
		case ',':
			p.i++
		case '}':
		default:
			return nil, fmt.Errorf("expected , or } in inline table, got %q", p.peek())
		}
	}
}
