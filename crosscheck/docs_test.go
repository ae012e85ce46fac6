package crosscheck

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func readDoc(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../docs/crosscheck.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// yamlKeys are the keys a raw grid type takes, in order.
func yamlKeys(v any) []string {
	var keys []string
	rt := reflect.TypeOf(v)
	for i := 0; i < rt.NumField(); i++ {
		if tag, ok := rt.Field(i).Tag.Lookup("yaml"); ok {
			keys = append(keys, strings.Split(tag, ",")[0])
		}
	}
	return keys
}

// TestDocsListEveryGridKey: the key table of docs/crosscheck.md has a row
// for every key of the grid file, and the goals' defaults it states are
// DefaultGoals.
func TestDocsListEveryGridKey(t *testing.T) {
	doc := readDoc(t)
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)` \\| ([a-z ]+) \\| ([^|]+) \\|")
	defaults := map[string][]string{}
	for _, m := range row.FindAllStringSubmatch(doc, -1) {
		defaults[m[1]] = append(defaults[m[1]], strings.TrimSpace(m[3]))
	}
	for _, v := range []any{rawGrid{}, rawGoals{}, rawCase{}} {
		for _, k := range yamlKeys(v) {
			if len(defaults[k]) == 0 {
				t.Errorf("docs/crosscheck.md: no row for grid key %s (%T)", k, v)
			}
		}
	}
	g := reflect.ValueOf(DefaultGoals)
	for i := 0; i < g.NumField(); i++ {
		key := strings.Split(g.Type().Field(i).Tag.Get("json"), ",")[0]
		if want := trim(g.Field(i).Float()); len(defaults[key]) != 1 || defaults[key][0] != want {
			t.Errorf("docs/crosscheck.md: %s's default is %q, the code's %s", key, defaults[key], want)
		}
	}
}

// TestDocsGridExampleRuns: the grid example of docs/crosscheck.md reads,
// every case resolves, and its goals are, as it says, the defaults.
func TestDocsGridExampleRuns(t *testing.T) {
	doc := readDoc(t)
	m := regexp.MustCompile("(?s)```yaml\n(# my-grid.yaml.*?)```").FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("docs/crosscheck.md: no ```yaml block starting with # my-grid.yaml")
	}
	g, err := ParseGrid("my-grid.yaml", "", []byte(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	if g.Goals != DefaultGoals || len(g.Cases) != 3 {
		t.Errorf("goals %+v, %d cases", g.Goals, len(g.Cases))
	}
	if _, err := Prepare(Config{Grid: g, Model: "process", Real: "inprocess", Repeat: 1}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc, "valnet crosscheck --grid my-grid.yaml") {
		t.Error("docs/crosscheck.md does not show the command that runs the example")
	}
}

// TestDocsListTheDefaultGrid: the default grid's table has a row per
// case, with its scenario and settings.
func TestDocsListTheDefaultGrid(t *testing.T) {
	doc := readDoc(t)
	g, err := ReadGrid("")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(doc, "\n## The default grid\n")
	section, _, _ = strings.Cut(section, "\n## ")
	rows := regexp.MustCompile("(?m)^\\| `([a-z0-9.-]+)` \\| ([a-z-]+) \\|([^|]*)\\|").FindAllStringSubmatch(section, -1)
	listed := map[string][]string{}
	for _, r := range rows {
		listed[r[1]] = r[2:]
	}
	if len(rows) != len(g.Cases) {
		t.Errorf("docs/crosscheck.md lists %d cases of the default grid, it has %d", len(rows), len(g.Cases))
	}
	for _, c := range g.Cases {
		r, ok := listed[c.Name]
		if !ok {
			t.Errorf("docs/crosscheck.md: default case %s is not listed", c.Name)
			continue
		}
		if r[0] != c.Scenario {
			t.Errorf("case %s: docs say scenario %s, the grid %s", c.Name, r[0], c.Scenario)
		}
		// one setting per case, or several as `a`, `b`, in the grid's order
		shown := strings.Split(strings.Trim(strings.TrimSpace(r[1]), "`"), "`, `")
		if len(c.Set) > 1 && len(shown) != len(c.Set) {
			t.Errorf("case %s: docs show %d settings, the grid sets %d", c.Name, len(shown), len(c.Set))
			continue
		}
		for i, s := range c.Set {
			if !strings.HasPrefix(s.String(), strings.TrimSuffix(shown[min(i, len(shown)-1)], ", ...}")) {
				t.Errorf("case %s: docs show %q, the grid sets %s", c.Name, shown[min(i, len(shown)-1)], s)
			}
		}
	}
}
