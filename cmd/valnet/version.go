package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time: -ldflags "-X main.version=v0.1.0".
var version = ""

func versionString() string {
	v := version
	cmt := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == "github.com/cometbft/cometbft" {
				cmt = d.Version
			}
		}
	}
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	return fmt.Sprintf("valnet %s (CometBFT %s)", v, cmt)
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print valnet's version and the CometBFT version it runs",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), versionString())
		},
	}
}
