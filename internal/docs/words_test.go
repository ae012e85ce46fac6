package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/valnet/valnet/scenarios"
)

// The starter scenario (valnet init), the README and the docs state facts
// that the code's own tables decide: the backends, the default halt
// threshold, the built-in scenarios. Each is checked here against those
// tables, so a word cannot drift from the code.

func read(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestStarterNamesEveryBackend(t *testing.T) {
	starter := read(t, "scenarios/starter.yaml")
	block := regexp.MustCompile(`(?s)run:\n(.*?)\n  backend:`).FindStringSubmatch(starter)
	if block == nil {
		t.Fatal("starter.yaml: no comment above run.backend")
	}
	for _, b := range scenarios.Backends() {
		if !strings.Contains(block[1], b) {
			t.Errorf("starter.yaml: the run.backend comment does not name backend %s", b)
		}
		if regexp.MustCompile(regexp.QuoteMeta(b) + `:? not available`).MatchString(starter) {
			t.Errorf("starter.yaml says backend %s is not available; it is", b)
		}
	}
}

// The default halt threshold at CometBFT's default timeouts is stated with
// the number the code computes.
func TestDefaultHaltThresholdIsStated(t *testing.T) {
	p, err := scenarios.Parse("default.yaml", []byte("name: d\nvalidators: [{name: v}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	d, explicit := p.HaltAfter()
	if explicit {
		t.Fatal("a scenario without halt_after has an explicit threshold")
	}
	want := fmt.Sprintf("%g s", d.Seconds())
	for _, f := range []string{"scenarios/starter.yaml", "docs/scenario.md", "docs/results.md"} {
		text := strings.ReplaceAll(read(t, f), "**", "")
		if !strings.Contains(text, want) {
			t.Errorf("%s does not state the default halt threshold %s", f, want)
		}
	}
}

// Every built-in is in the README's table, and docs that say what
// `valnet list` shows do not list a part of them.
func TestBuiltinsAreListed(t *testing.T) {
	readme := read(t, "README.md")
	var names []string
	for _, b := range scenarios.Builtins() {
		names = append(names, b.Name)
		if !strings.Contains(readme, "| `"+b.Name+"` |") {
			t.Errorf("README.md: builtin %s is not in the builtins table", b.Name)
		}
	}
	listing := regexp.MustCompile("`valnet list` shows them: ([^)]*)\\)")
	for _, f := range []string{"docs/scenario.md", "README.md"} {
		for _, m := range listing.FindAllStringSubmatch(read(t, f), -1) {
			listed := regexp.MustCompile("`([a-z0-9-]+)`").FindAllStringSubmatch(m[1], -1)
			if len(listed) != len(names) {
				t.Errorf("%s: %q lists %d of the %d builtins", f, m[0], len(listed), len(names))
			}
		}
	}
}

// Every fault action has its row in docs/scenario.md and an example in the
// starter; one that needs nodes in their own processes says process or
// docker, as the scenario check does.
func TestFaultActionsAreDescribed(t *testing.T) {
	doc, starter := read(t, "docs/scenario.md"), read(t, "scenarios/starter.yaml")
	for _, a := range scenarios.FaultActions() {
		row := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(a.Name) + "` \\|.*$").FindString(doc)
		if row == "" {
			t.Errorf("docs/scenario.md: no row for fault action %s", a.Name)
			continue
		}
		if !strings.Contains(starter, "action: "+a.Name+",") {
			t.Errorf("starter.yaml: no example of fault action %s", a.Name)
		}
		saysOnly := regexp.MustCompile(`(?i)process backend only`).MatchString(row)
		saysBoth := regexp.MustCompile(`(?i)process or docker`).MatchString(row)
		switch {
		case a.OwnProcess && (saysOnly || !saysBoth):
			t.Errorf("docs/scenario.md: %s needs run.backend process or docker; its row says %q", a.Name, row)
		case !a.OwnProcess && (saysOnly || saysBoth):
			t.Errorf("docs/scenario.md: %s runs on every backend; its row says %q", a.Name, row)
		}
	}
}
