package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// A panic inside a command reaches the user as one line and exit 2, its
// stack in a file, never as a trace on the terminal.
func TestPanicIsAnErrorNotATrace(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	commands = append(commands, func() *cobra.Command {
		return &cobra.Command{Use: "boom", Hidden: true, RunE: func(*cobra.Command, []string) error {
			panic("Cannot create validator set: duplicate entry")
		}}
	})
	defer func() { commands = commands[:len(commands)-1] }()
	code, stdout, stderr := runCLI(t, "boom")
	if code != exitBadInput {
		t.Fatalf("exit %d, want %d", code, exitBadInput)
	}
	if !strings.Contains(stderr, "valnet: internal error (a bug in valnet, not in your input): Cannot create validator set: duplicate entry") {
		t.Errorf("stderr: %q", stderr)
	}
	if strings.Contains(stderr, "goroutine ") || strings.Contains(stdout, "goroutine ") {
		t.Errorf("a stack trace reached the terminal:\n%s%s", stdout, stderr)
	}
	m := regexp.MustCompile(`the stack is in (\S+);`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no stack file named: %q", stderr)
	}
	data, err := os.ReadFile(m[1])
	if err != nil || !strings.Contains(string(data), "goroutine ") {
		t.Errorf("stack file %s: %v %q", m[1], err, data)
	}
}
