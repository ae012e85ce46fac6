// Package scenarios reads valnet scenario files (YAML, schema v1) into a
// Plan: strictly (unknown keys are errors), reporting every problem at once
// with file:line:col, and applying every default so that nothing downstream
// needs to know the YAML.
package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	goyaml "github.com/goccy/go-yaml"
	goyamlparser "github.com/goccy/go-yaml/parser"
	"gopkg.in/yaml.v3"
)

// Overrides replace scenario keys from the command line before the
// scenario is checked, so the result is checked as if the file said so.
type Overrides struct {
	Backend string // run.backend (valnet run --backend); "" keeps the file's
	// Set writes keys into the scenario, in order, before it is decoded
	// (valnet sweep --set; set.go has the path grammar).
	Set []Setting
}

// Load reads and parses the scenario file at path.
func Load(path string) (*Plan, error) {
	return LoadWith(path, Overrides{})
}

// LoadWith is Load with overrides.
func LoadWith(path string, o Overrides) (*Plan, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return parse(path, path, filepath.Dir(path), data, o)
}

// maxFileBytes bounds a file valnet reads as YAML. Scenarios are short
// (count: makes many validators of one entry); a bigger file is a mistake,
// and reading and parsing it would only hold memory.
const maxFileBytes = 2 << 20

// tooBig is the error of a file over maxFileBytes; what names the kind of
// file, as in yamlRoot.
func tooBig(file, what string) Error {
	msg := fmt.Sprintf("the file is larger than %d MiB, the most valnet reads for a %s", maxFileBytes>>20, what)
	if what == scenarioFile {
		msg += "; a scenario is short (count: makes many validators of one entry)"
	}
	return Error{Pos: Pos{File: file, Line: 1, Col: 1}, Msg: msg}
}

// readFile reads a scenario file, at most maxFileBytes+1 of it (enough to
// tell it is too big). A directory is refused at its path, as bad input.
func readFile(path string) ([]byte, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, Errors{{Pos: Pos{File: path, Line: 1, Col: 1},
			Msg: "is a directory; give a scenario file (a .yaml in it) or a builtin name"}}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading scenario: %w", err)
	}
	defer f.Close()
	return readLimited(f, "reading scenario")
}

// readLimited reads r up to maxFileBytes+1 bytes.
func readLimited(r io.Reader, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return data, nil
}

// Parse parses a scenario; name is the file name used in messages and as
// Plan.Source. Every problem in the input is reported together, as Errors.
// With no file to resolve them against, relative paths in the scenario
// (signer.path, signer.passphrase_file) are kept as written.
func Parse(name string, data []byte) (*Plan, error) {
	return parse(name, name, "", data, Overrides{})
}

// Stdin as a scenario name reads the scenario from standard input; its
// relative paths are kept as written, and messages name it <stdin>.
const (
	Stdin     = "-"
	stdinName = "<stdin>"
)

// Resolve loads nameOrPath as a file if it is an existing file or ends in
// .yaml or .yml, and as a builtin scenario otherwise.
func Resolve(nameOrPath string) (*Plan, error) {
	return ResolveWith(nameOrPath, Overrides{})
}

// ResolveWith is Resolve with overrides.
func ResolveWith(nameOrPath string, o Overrides) (*Plan, error) {
	src, err := ReadSource(nameOrPath)
	if err != nil {
		return nil, err
	}
	return src.Resolve(o)
}

// parse reads data (named file in messages) into a Plan from source.
// Relative paths in the scenario are joined to dir, unless dir is "".
func parse(file, source, dir string, data []byte, o Overrides) (*Plan, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	root, err := document(file, data)
	if err != nil {
		return nil, err
	}
	d := newDecoder(file)
	d.dir = dir
	d.sets = o.Set
	d.errs = append(d.errs, applySettings(root, o.Set)...)
	d.pos[""] = nodePos{Key: d.at(root), Value: d.at(root)}
	var raw rawScenario
	d.decode(root, "", reflect.ValueOf(&raw).Elem())
	if d.bombed != nil { // what was decoded is a fraction of the document
		return nil, Errors{*d.bombed}
	}
	o.apply(&raw)
	plan := d.resolve(&raw)
	if len(d.errs) > 0 {
		return nil, d.errs.sorted()
	}
	plan.Source = source
	plan.Text = data
	if len(o.Set) > 0 {
		plan.Text = settingsText(root, o.Set, data)
	}
	return plan, nil
}

// check refuses a bad override before the file is read: the flag is to
// blame, not the scenario's line.
func (o Overrides) check() error {
	if o.Backend != "" && !slices.Contains(backends, o.Backend) {
		return fmt.Errorf("--backend %s: unknown backend%s (one of %s)", o.Backend, didYouMean(o.Backend, backends), strings.Join(backends, ", "))
	}
	return nil
}

func (o Overrides) apply(raw *rawScenario) {
	if o.Backend != "" {
		if raw.Run == nil {
			raw.Run = &rawRun{}
		}
		raw.Run.Backend = &o.Backend
	}
}

// scenarioFile names a scenario in yamlRoot's messages.
const scenarioFile = "scenario file"

// document returns the single YAML document's top-level mapping.
func document(file string, data []byte) (*yaml.Node, error) {
	start := Pos{File: file, Line: 1, Col: 1}
	root, err := yamlRoot(file, scenarioFile, data)
	switch {
	case err != nil:
		return nil, err
	case root == nil:
		return nil, Errors{{Pos: start, Msg: "the file is empty; a scenario needs at least name and validators (valnet init writes a starter)"}}
	case isNull(root):
		return nil, Errors{{Pos: start, Msg: "the document is empty; a scenario needs at least name and validators (valnet init writes a starter)"}}
	case root.Kind != yaml.MappingNode:
		return nil, Errors{{Pos: Pos{File: file, Line: root.Line, Col: root.Column},
			Msg: "a scenario is a mapping of keys (name:, validators:, ...), got " + describe(root)}}
	}
	return root, nil
}

// yamlRoot returns the root node of data's single YAML document: nil for
// a file with no document, a null node for an empty one. Syntax errors
// and a second document are Errors; what names the file in them.
func yamlRoot(file, what string, data []byte) (*yaml.Node, error) {
	if len(data) > maxFileBytes {
		return nil, Errors{tooBig(file, what)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, Errors{syntaxError(file, data, err)}
	}
	for {
		var extra yaml.Node
		err := dec.Decode(&extra)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, Errors{syntaxError(file, data, err)}
		}
		if blankDocument(&extra) {
			continue // a stray trailing "---" holds nothing to lose
		}
		return nil, Errors{{Pos: Pos{File: file, Line: extra.Line, Col: extra.Column},
			Msg: "a " + what + " holds one YAML document; remove the '---' and what follows, or split it into two files"}}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	return root, nil
}

// blankDocument reports whether doc has no content at all.
func blankDocument(doc *yaml.Node) bool {
	return len(doc.Content) == 1 && isNull(doc.Content[0]) && doc.Content[0].Value == ""
}

// yamlLine finds the line in yaml.v3's syntax messages ("yaml: line 3: ...").
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns a yaml.v3 parse error into an Error with a line and a
// column. yaml.v3 gives no column, and its line is often where the
// enclosing block starts rather than the faulty line, so the line is the
// first one that stops the file from parsing (faultyLine); the column is
// where goccy/go-yaml's parser, which tracks columns, stops on that line,
// else the line's first character. A tab in the indentation is named as
// the cause, since YAML forbids it and both parsers say it obscurely.
func syntaxError(file string, data []byte, err error) Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	yline := 0
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		yline, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	line := faultyLine(data)
	if line == 0 {
		line = yline
	}
	text := lineText(data, line)
	indent := len(text) - len(strings.TrimLeft(text, " \t"))
	// A tab after a list item's dash ("-\tname: a") indents too.
	lead := len(text) - len(strings.TrimLeft(text, " \t-"))
	if tab := strings.IndexByte(text[:lead], '\t'); tab >= 0 {
		return Error{Pos: Pos{File: file, Line: line, Col: tab + 1},
			Msg: "YAML syntax error: tabs are not allowed for indentation in YAML; use spaces"}
	}
	col := indent + 1
	var se *goyaml.SyntaxError
	if _, gerr := goyamlparser.ParseBytes(data, 0); errors.As(gerr, &se) && se.Token != nil && se.Token.Position.Line == line {
		col = se.Token.Position.Column
	}
	return Error{Pos: Pos{File: file, Line: line, Col: col}, Msg: "YAML syntax error: " + msg}
}

// lineText is line n (1-based) of data without its newline; "" past the end.
func lineText(data []byte, n int) string {
	lines := strings.Split(string(data), "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	return strings.TrimSuffix(lines[n-1], "\r")
}

// maxSearchLines and maxSearchBytes bound faultyLine's quadratic search
// (the bytes it parses in all); scenarios are short. 32 MiB is well under
// a second of parsing.
const (
	maxSearchLines = 2000
	maxSearchBytes = 32 << 20
)

// faultyLine returns the line that makes data unparseable: one more than the
// longest run of leading lines that parses. An early construct that is
// closed later (a flow list over several lines) then does not take the
// blame for a later mistake. 0 if unknown (or too long to search).
func faultyLine(data []byte) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > maxSearchLines {
		return 0
	}
	budget := maxSearchBytes
	size := len(data)
	for k := len(lines) - 1; k >= 0; k-- {
		size -= len(lines[k]) // the bytes of lines[:k]
		if budget -= size; budget < 0 {
			return 0
		}
		if parsesAsYAML(data[:size]) {
			return k + 1
		}
	}
	return 0
}

// parsesAsYAML reports whether every document in data is valid YAML.
func parsesAsYAML(data []byte) bool {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			return errors.Is(err, io.EOF)
		}
	}
}
