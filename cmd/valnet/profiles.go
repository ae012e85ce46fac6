package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/valnet/valnet/signers/profiles"
)

func init() { commands = append(commands, newProfilesCmd) }

func newProfilesCmd() *cobra.Command {
	var verbose bool
	cmd := &cobra.Command{
		Use:   "profiles",
		Short: "List the built-in device profiles (models) for simulated signers",
		Long: `Every profile is a MODEL: a simulated signer signs with a real key but takes
the time the modelled device takes. Results label it "model:<name>".
Use one with: signer: {type: simulated, profile: NAME}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if verbose {
				for _, p := range profiles.Builtins() {
					fmt.Fprintf(out, "%s\n  timing:      %s\n  description: %s\n  source:      %s\n\n", p.Name, p.Summary(), p.Description, p.Source)
				}
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "profile\ttiming (model)\tdescription")
			for _, p := range profiles.Builtins() {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name, p.Summary(), p.Description)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "also print where each profile's numbers come from")
	return cmd
}
