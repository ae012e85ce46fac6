package nettest

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// Selected returns the names of all that the environment variable env
// selects: a comma-separated list of names, or "all" (and unset: all).
// make integ uses it to run a sample of a long matrix in CI while the
// long suites (make builtins, make versions) run every entry. A name not
// in all fails the test, so a typo never selects nothing. What is left
// out is logged, never silently dropped.
func Selected(t testing.TB, env string, all []string) []string {
	t.Helper()
	v := strings.TrimSpace(os.Getenv(env))
	if v == "" || v == "all" {
		return all
	}
	var picked []string
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !slices.Contains(all, n) {
			t.Fatalf("%s=%q: %q is not one of %s (or all)", env, v, n, strings.Join(all, ", "))
		}
		picked = append(picked, n)
	}
	var left []string
	for _, n := range all {
		if !slices.Contains(picked, n) {
			left = append(left, n)
		}
	}
	if len(left) > 0 {
		t.Logf("%s selects %d of %d; not run here: %s", env, len(picked), len(all), strings.Join(left, ", "))
	}
	return slices.DeleteFunc(slices.Clone(all), func(n string) bool { return !slices.Contains(picked, n) })
}
