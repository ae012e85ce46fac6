// Command valnet runs a network of real CometBFT validators, each wired to a
// chosen signer with injected delays, and reports what the signers did to
// the chain: missed votes, round changes, signing latency by phase.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Exit codes are a contract with CI.
const (
	exitOK       = 0 // ran, and every expectation held
	exitFailed   = 1 // ran, and an expectation failed
	exitBadInput = 2 // bad input, or the run could not be done
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the CLI with args and returns the exit code. A panic is a
// bug in valnet; it never reaches a user as a stack trace: it is said in
// one line with exit 2 (the run's own cleanup has run while it unwound),
// and the stack is kept in a file for the bug report.
func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			where := savePanic(r, debug.Stack())
			fmt.Fprintf(stderr, "valnet: internal error (a bug in valnet, not in your input): %v\n", r)
			if where != "" {
				fmt.Fprintf(stderr, "valnet: the stack is in %s; please report it with the command and the scenario\n", where)
			}
			code = exitBadInput
		}
	}()
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "valnet:", ee.err)
		}
		return ee.code
	}
	// Cobra's own errors (unknown flag, wrong args) are bad input.
	fmt.Fprintln(stderr, "valnet:", err)
	return exitBadInput
}

// savePanic writes a panic and its stack to a file of its own in the temp
// directory and returns its path ("" if it could not).
func savePanic(r any, stack []byte) string {
	f, err := os.CreateTemp("", "valnet-panic-*.txt")
	if err != nil {
		return ""
	}
	defer f.Close()
	fmt.Fprintf(f, "valnet %s: panic: %v\n\n%s", version, r, stack)
	return f.Name()
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "valnet",
		Short: "What does my signer do to my chain? Run CometBFT validators with real signers and injected delays",
		Long: `valnet runs a scenario: a network of real CometBFT validators, each signing
through a chosen backend with injected delays, and records per validator and
per height missed votes, round changes and signing latency by phase.

Exit codes: 0 ran and every expectation held, 1 an expectation failed,
2 bad input or the run could not be done.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, c := range commands {
		root.AddCommand(c())
	}
	return root
}

// commands are valnet's subcommands; a command in its own file may add
// itself from an init function.
var commands = []func() *cobra.Command{
	newRunCmd, newValidateCmd, newListCmd, newInitCmd, newReportCmd, newVersionCmd,
}
