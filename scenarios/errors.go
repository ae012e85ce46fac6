package scenarios

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Error is one problem in a scenario file, located at the key it concerns.
type Error struct {
	Pos     Pos
	Key     string   // dotted path, e.g. "validators[2].signer.latency.dist"; empty for the whole document
	Msg     string   // what is wrong and, where useful, how to fix it
	Allowed []string // the valid choices, when there is a closed set
}

// Error formats the problem as "file:line:col: key: message (allowed: a, b)".
// The key is left out for document-level problems, and the column when it is
// unknown (YAML syntax errors: yaml.v3 only reports a line).
func (e Error) Error() string {
	var b strings.Builder
	if e.Pos.fromSet() {
		// The setting names its path; the key would say it again.
		b.WriteString(e.Pos.File + ": " + e.Msg)
		writeAllowed(&b, e.Allowed)
		return b.String()
	}
	b.WriteString(e.Pos.String())
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	writeAllowed(&b, e.Allowed)
	return b.String()
}

// String is file:line:col, without the column when it is unknown and
// without both for a position with no line.
func (p Pos) String() string {
	switch {
	case p.Line <= 0:
		return p.File
	case p.Col <= 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// message is Msg with its allowed values, without position and key.
func (e Error) message() string {
	var b strings.Builder
	b.WriteString(e.Msg)
	writeAllowed(&b, e.Allowed)
	return b.String()
}

// writeAllowed appends " (allowed: a, b)" when there is a closed set.
func writeAllowed(b *strings.Builder, allowed []string) {
	if len(allowed) > 0 {
		b.WriteString(" (allowed: ")
		b.WriteString(strings.Join(allowed, ", "))
		b.WriteString(")")
	}
}

// Errors is every problem found in one scenario, in file order.
type Errors []Error

// Error is one problem per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// AsErrors returns the scenario problems carried by err, if any.
func AsErrors(err error) (Errors, bool) {
	var es Errors
	if errors.As(err, &es) {
		return es, true
	}
	var e Error
	if errors.As(err, &e) {
		return Errors{e}, true
	}
	return nil, false
}

// SplitErrors is each scenario problem carried by err on its own (err
// itself when it carries none), so that callers resolving a scenario many
// times can say each problem once.
func SplitErrors(err error) []error {
	es, ok := AsErrors(err)
	if !ok {
		return []error{err}
	}
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// sorted orders by position (stable, so problems found at one spot keep the
// order they were found in) and drops exact repeats, which aliases can cause.
func (es Errors) sorted() Errors {
	out := append(Errors(nil), es...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Pos.Line != out[j].Pos.Line {
			return out[i].Pos.Line < out[j].Pos.Line
		}
		return out[i].Pos.Col < out[j].Pos.Col
	})
	seen := make(map[string]bool)
	dedup := out[:0]
	for _, e := range out {
		if s := e.Error(); !seen[s] {
			seen[s] = true
			dedup = append(dedup, e)
		}
	}
	return dedup
}
