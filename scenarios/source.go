package scenarios

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Source is a scenario's text read once (a file, a builtin or standard
// input), so that it can be resolved many times with different overrides
// (valnet sweep's points, valnet threshold's probes) from the very same
// bytes: standard input is read once, and a file edited meanwhile does not
// mix two scenarios.
type Source struct {
	file string // the name in messages
	name string // Plan.Source
	dir  string // relative paths in the scenario are joined to it; "" keeps them
	data []byte
}

// ReadSource reads nameOrPath as Resolve does: "-" is standard input, an
// existing file or a name ending in .yaml or .yml is a file, anything else
// a builtin name.
func ReadSource(nameOrPath string) (*Source, error) {
	if nameOrPath == Stdin {
		data, err := readLimited(os.Stdin, "reading the scenario from standard input")
		if err != nil {
			return nil, err
		}
		return &Source{file: stdinName, name: stdinName, data: data}, nil
	}
	_, err := os.Stat(nameOrPath)
	if ext := strings.ToLower(filepath.Ext(nameOrPath)); err == nil || ext == ".yaml" || ext == ".yml" {
		data, err := readFile(nameOrPath)
		if err != nil {
			return nil, err
		}
		return &Source{file: nameOrPath, name: nameOrPath, dir: filepath.Dir(nameOrPath), data: data}, nil
	}
	if data, ok := BuiltinSource(nameOrPath); ok {
		source := "builtin:" + nameOrPath
		return &Source{file: source, name: source, data: data}, nil // a builtin's paths are kept as written
	}
	return nil, fmt.Errorf("%q is neither a scenario file nor a builtin scenario%s (builtins: %s)", nameOrPath, didYouMean(nameOrPath, builtinNames()), strings.Join(builtinNames(), ", "))
}

// Resolve parses the source's bytes with overrides.
func (s *Source) Resolve(o Overrides) (*Plan, error) {
	return parse(s.file, s.name, s.dir, s.data, o)
}

// Text is the scenario text as read.
func (s *Source) Text() []byte { return s.data }
