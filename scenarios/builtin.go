package scenarios

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// The builtin scenarios ship inside the binary; `valnet run NAME` finds them
// by file name. Each must parse cleanly (TestBuiltinsParse).
//
//go:embed builtin/*.yaml
var builtinFS embed.FS

// BuiltinInfo names a builtin scenario for listings.
type BuiltinInfo struct {
	Name        string
	Description string // first line of the scenario's description
}

// Builtins lists the builtin scenarios, sorted by name.
func Builtins() []BuiltinInfo {
	var out []BuiltinInfo
	for _, name := range builtinNames() {
		info := BuiltinInfo{Name: name}
		if p, err := Builtin(name); err == nil {
			info.Description, _, _ = strings.Cut(p.Description, "\n")
		} else {
			info.Description = "(invalid builtin: " + err.Error() + ")"
		}
		out = append(out, info)
	}
	return out
}

// BuiltinSource returns the YAML text of a builtin scenario, e.g. for
// `valnet init --from NAME` or to show what a builtin does.
func BuiltinSource(name string) ([]byte, bool) {
	if !fs.ValidPath(name) || strings.Contains(name, "/") {
		return nil, false
	}
	data, err := builtinFS.ReadFile("builtin/" + name + ".yaml")
	if err != nil {
		return nil, false
	}
	return data, true
}

// Builtin parses the builtin scenario name; its Source is "builtin:NAME".
func Builtin(name string) (*Plan, error) {
	data, ok := BuiltinSource(name)
	if !ok {
		return nil, fmt.Errorf("no builtin scenario %q (builtins: %s)", name, strings.Join(builtinNames(), ", "))
	}
	source := "builtin:" + name
	return parse(source, source, "", data, Overrides{}) // a builtin's paths are kept as written
}

// builtinNames lists the builtin scenario names, sorted.
func builtinNames() []string {
	entries, err := builtinFS.ReadDir("builtin")
	if err != nil {
		panic("scenarios: embedded builtins unreadable: " + err.Error())
	}
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}
