package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/valnet/valnet/scenarios"
)

func newInitCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "init [FILE]",
		Short: "Write a commented starter scenario (default scenario.yaml)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "scenario.yaml"
			if len(args) == 1 {
				path = args[0]
			}
			flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
			if force {
				flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			}
			f, err := os.OpenFile(path, flags, 0o644)
			if errors.Is(err, os.ErrExist) {
				return &exitError{exitBadInput, fmt.Errorf("%s exists; use --force to overwrite it", path)}
			}
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			if _, err := f.Write(scenarios.StarterScenario()); err != nil {
				f.Close()
				return &exitError{exitBadInput, err}
			}
			if err := f.Close(); err != nil {
				return &exitError{exitBadInput, err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s; check it with: valnet validate %s; run it with: valnet run %s\n", path, path, path)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite FILE if it exists")
	return cmd
}
