package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/valnet/valnet/runner"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/suite"
)

func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate SCENARIO... (a file, a builtin name, a directory of them, or - for standard input)",
		Short: "Check scenario files and report every problem at once (file:line:col)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bad := 0
			var names []string
			for _, a := range args {
				if suite.IsScenarioDir(a) {
					files, err := suite.Files(a)
					if err != nil {
						bad++
						fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", a, err)
					}
					names = append(names, files...)
					continue
				}
				names = append(names, a)
			}
			for _, a := range names {
				plan, err := scenarios.Resolve(a)
				if err != nil {
					bad++
					fmt.Fprintln(cmd.ErrOrStderr(), err)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (%s: %d validators, %d heights, %d expectations)\n",
					a, plan.Name, len(plan.Validators), plan.Run.Heights, len(plan.Expect))
				// The scenario is valid; this machine may still be unable
				// to run it (valnet run refuses to start then).
				for _, p := range runner.Preflight(cmd.Context(), plan) {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: warning: %s\n", a, p)
				}
			}
			if bad > 0 {
				return &exitError{code: exitBadInput}
			}
			return nil
		},
	}
}
