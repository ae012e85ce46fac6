package nettest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// fakeTB records Fatalf instead of stopping the test.
type fakeTB struct {
	testing.TB
	fatal, logs []string
}

func (f *fakeTB) Helper()                   {}
func (f *fakeTB) Fatalf(s string, a ...any) { f.fatal = append(f.fatal, fmt.Sprintf(s, a...)) }
func (f *fakeTB) Logf(s string, a ...any)   { f.logs = append(f.logs, fmt.Sprintf(s, a...)) }

func TestSelected(t *testing.T) {
	all := []string{"a", "b", "c"}
	for _, tc := range []struct {
		env, want, fatal, log string
	}{
		{env: "", want: "a,b,c"},
		{env: "all", want: "a,b,c"},
		{env: "c, a", want: "a,c", log: "not run here: b"},
		{env: "a,zz", fatal: `"zz" is not one of a, b, c`},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv("VALNET_TEST_SELECT", tc.env)
			f := &fakeTB{TB: t}
			got := Selected(f, "VALNET_TEST_SELECT", all)
			if tc.fatal != "" {
				if len(f.fatal) != 1 || !strings.Contains(f.fatal[0], tc.fatal) {
					t.Fatalf("fatal %q, want one naming %q", f.fatal, tc.fatal)
				}
				return
			}
			if len(f.fatal) != 0 || strings.Join(got, ",") != tc.want {
				t.Fatalf("got %v (fatal %q), want %s", got, f.fatal, tc.want)
			}
			if tc.log != "" && !slices.ContainsFunc(f.logs, func(l string) bool { return strings.Contains(l, tc.log) }) {
				t.Errorf("logs %q, want one saying %q", f.logs, tc.log)
			}
		})
	}
}
