package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/valnet/valnet/nodes"
)

func init() { commands = append(commands, newNodeCmd) }

// newNodeCmd is `valnet node`: one CometBFT validator in this process,
// spawned by the process backend (docs/process-backend.md). Hidden: users
// run scenarios, the runner runs nodes.
func newNodeCmd() *cobra.Command {
	var opts nodes.NodeOptions
	cmd := &cobra.Command{
		Use:    "node --home DIR [--events unix:///path/events.sock|tcp://HOST:PORT] [--name NAME] [--proxy-app ADDR --abci socket|grpc]",
		Short:  "Run one CometBFT validator from a home (used by the process backend)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// SIGTERM is the runner's clean stop; SIGINT a user's Ctrl-C.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := nodes.RunNode(ctx, opts); err != nil {
				return &exitError{exitBadInput, err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.Home, "home", "", "the node's CometBFT home (config/config.toml, genesis, keys, data)")
	cmd.Flags().StringVar(&opts.Events, "events", "", "stream events as JSON lines to this socket (unix:///path or tcp://HOST:PORT)")
	cmd.Flags().StringVar(&opts.Name, "name", "", "the node's name in events (default: the moniker)")
	cmd.Flags().StringVar(&opts.ProxyApp, "proxy-app", "", "connect to this ABCI application (unix:///path or tcp://HOST:PORT) instead of the built-in kvstore")
	cmd.Flags().StringVar(&opts.ABCI, "abci", "socket", "the ABCI transport of --proxy-app: socket or grpc")
	_ = cmd.MarkFlagRequired("home")
	return cmd
}
