// Command valnet runs a network of real CometBFT validators, each wired to a
// chosen signer with injected delays, and reports what the signers did to
// the chain: missed votes, round changes, signing latency by phase.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

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

// run executes the CLI with args and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
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
