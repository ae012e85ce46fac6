// Package nodes runs CometBFT validator nodes for a run. A backend is driven
// by the runner and never drives: it starts a node from a Spec, reports what
// the node observes as eventlog.Event values through a Sink, and stops it.
package nodes

import (
	"context"

	cfg "github.com/cometbft/cometbft/config"
	"github.com/cometbft/cometbft/p2p"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/results/eventlog"
)

// Spec is everything a backend needs to run one validator.
type Spec struct {
	Name    string
	Config  *cfg.Config // rooted at the node's home; ports and peers set
	Genesis *types.GenesisDoc
	NodeKey *p2p.NodeKey
	Signer  types.PrivValidator
	// Names maps validator addresses (upper-case hex, as CometBFT prints
	// them) to validator names, so events can name validators.
	Names map[string]string
	// Sink receives the node's events; nil records nothing (a plain node,
	// for measuring what recording costs).
	Sink eventlog.Sink
	// Binary is the validator's own CometBFT-compatible binary (node.binary
	// or run.binary), for backends that run one; empty: valnet's node.
	Binary string
	// Flavor is what runs the node: valnet's own (nil) or Binary as
	// ReadFlavor found it; WriteHome writes the home that version reads.
	Flavor *Flavor
	// NodeConfig is the scenario's node.config, for a Flavor with its own
	// defaults (valnet's own node has them applied to Config already).
	NodeConfig []ConfigSetting
	// App is the validator's own ABCI application; nil: the built-in
	// kvstore.
	App *AppSpec
}

// Addrs are a running node's listen addresses.
type Addrs struct {
	RPC string // e.g. http://127.0.0.1:26657
	P2P string // e.g. <node id>@127.0.0.1:26656
}

// Node is one running validator node.
type Node interface {
	Name() string
	Addrs() Addrs
	// Stop shuts the node down and releases everything it holds; it is safe
	// to call more than once.
	Stop(ctx context.Context) error
}

// HeightReporter is an optional ability of a Node: the height of the last
// block in its store, read directly (benchmarks compare against plain
// networks that record no events).
type HeightReporter interface {
	Height(ctx context.Context) int64
}

// Controller is the optional ability to stop and start a node again on a
// fault timeline, as an operator would. Each method returns once the
// change has happened (or ctx ends).
type Controller interface {
	// Kill ends the node at once, without a clean shutdown (SIGKILL for a
	// process). Its home keeps whatever was written.
	Kill(ctx context.Context) error
	// Pause freezes the node: no progress, no answers (SIGSTOP).
	Pause(ctx context.Context) error
	// Resume undoes Pause (SIGCONT).
	Resume(ctx context.Context) error
	// Restart starts a stopped or killed node again from its own home
	// (WAL, block store, signer state); it catches up from its peers.
	Restart(ctx context.Context) error
}

// Halter is an optional ability: a clean stop (SIGTERM: consensus state,
// WAL and stores flushed) after which Controller.Restart starts the node
// again. Without it, node-stop falls back to Kill.
type Halter interface {
	Halt(ctx context.Context) error
}

// Backend starts nodes.
type Backend interface {
	Name() string
	Start(ctx context.Context, spec Spec) (Node, error)
}
