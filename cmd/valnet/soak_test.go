package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// valnet soak refuses bad input before anything runs, with exit 2 and
// what is allowed.
func TestSoakBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"soak", "baseline", "--duration", "10s"}, "--duration 10s leaves no time for faults: they run from 15s to the fault-free tail (--tail 1m30s); give at least 1m48s"},
		{[]string{"soak", "baseline", "--duration", "-5m"}, "--duration -5m0s: must be greater than 0"},
		{[]string{"soak", "baseline", "--backend", "qemu"}, "--backend qemu: unknown backend; allowed: inprocess, process, docker, sim"},
		{[]string{"soak", "baseline", "--backend", "sim"}, "the sim backend is a model in virtual time"},
		{[]string{"soak", "baseline", "--validators", "-2"}, "--validators -2: must be 0 (the scenario's) or more"},
		{[]string{"soak", "baseline", "--tail", "30s"}, "--resume-within 1m0s does not fit in the fault-free tail (--tail 30s)"},
		{[]string{"soak", "no-such-scenario"}, "neither a scenario file nor a builtin scenario"},
		{[]string{"soak", "baseline", "--duration", "ten"}, `invalid argument "ten" for "--duration"`},
		{[]string{"soak"}, "accepts 1 arg(s), received 0"},
	} {
		args := append(c.args, "--out", filepath.Join(t.TempDir(), "s"))
		code, stdout, stderr := runCLI(t, args...)
		if code != exitBadInput || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q (stdout %q); want exit 2 and %q", c.args, code, stderr, stdout, c.want)
		}
	}
}
