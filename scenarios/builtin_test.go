package scenarios

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestBuiltinsParse(t *testing.T) {
	names := builtinNames()
	for _, want := range []string{"baseline", "quickstart", "slow-signer"} {
		if !slices.Contains(names, want) {
			t.Errorf("builtin %s is missing (have %v)", want, names)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			p, err := Builtin(name)
			if err != nil {
				t.Fatalf("builtin does not parse:\n%v", err)
			}
			if p.Name != name || p.Source != "builtin:"+name {
				t.Errorf("name %q, source %q: the file name and name: must agree", p.Name, p.Source)
			}
			if p.Description == "" || len(p.Expect) == 0 {
				t.Errorf("a builtin needs a description and expectations")
			}
			src, _ := BuiltinSource(name)
			if !bytes.HasPrefix(src, []byte("# "+name+":")) {
				t.Errorf("a builtin starts with a comment block \"# %s: what it demonstrates\"", name)
			}
		})
	}
}

func TestBuiltinShapes(t *testing.T) {
	for _, c := range []struct {
		name       string
		validators string
		slow       time.Duration
	}{
		{"quickstart", "v-1 v-2 v-3 slow", 200 * time.Millisecond},
		{"baseline", "v-1 v-2 v-3 v-4", 0},
		{"slow-signer", "v-1 v-2 v-3 v-4 v-5 v-6 v-7 v-8 v-9 slow", 1500 * time.Millisecond},
	} {
		p, err := Builtin(c.name)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		var slow time.Duration
		for _, v := range p.Validators {
			names = append(names, v.Name)
			if v.Signer.Latency != nil {
				slow = v.Signer.Latency.Value
			}
		}
		if got := strings.Join(names, " "); got != c.validators || slow != c.slow {
			t.Errorf("%s: validators %q slow %v, want %q slow %v", c.name, got, slow, c.validators, c.slow)
		}
	}
}

func TestBuiltinsList(t *testing.T) {
	list := Builtins()
	if len(list) != len(builtinNames()) {
		t.Fatalf("Builtins() = %v", list)
	}
	for i, b := range list {
		if i > 0 && list[i-1].Name >= b.Name {
			t.Errorf("not sorted: %s before %s", list[i-1].Name, b.Name)
		}
		if b.Description == "" || strings.Contains(b.Description, "\n") {
			t.Errorf("%s: description %q should be one non-empty line", b.Name, b.Description)
		}
	}
}

func TestBuiltinLookup(t *testing.T) {
	for _, name := range []string{"nonesuch", "../parse", "builtin/baseline", "", "."} {
		if _, ok := BuiltinSource(name); ok {
			t.Errorf("BuiltinSource(%q) found something", name)
		}
	}
	if _, err := Builtin("nonesuch"); err == nil || !strings.Contains(err.Error(), "quickstart") {
		t.Errorf("Builtin(nonesuch) = %v, want the builtins listed", err)
	}
}

// TestStarterParses keeps `valnet init`'s output valid and complete: it
// must mention every key of the schema.
func TestStarterParses(t *testing.T) {
	src := StarterScenario()
	if _, err := Parse("starter.yaml", src); err != nil {
		t.Fatalf("starter scenario does not parse:\n%v", err)
	}
	for level, keys := range keyLevels() {
		for _, k := range keys {
			if !bytes.Contains(src, []byte(k+":")) {
				t.Errorf("starter scenario does not show %s", joinKey(level, k))
			}
		}
	}
	src[0] = 'X'
	if StarterScenario()[0] == 'X' {
		t.Errorf("StarterScenario returns shared bytes")
	}
}
