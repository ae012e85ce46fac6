package nodes

import (
	"context"

	cfg "github.com/cometbft/cometbft/config"
)

// What differs between backends for a whole run sits behind these
// optional abilities of a Backend, so the runner asks "can you?" and never
// "which one are you?". A backend without any of them runs every node in
// the runner's process on loopback ports valnet picks (InProcess).

// Layout is what a Preparer learns of the network before any home is
// written.
type Layout struct {
	Names []string // validator names, in scenario order
	// NeedsFabric: links are shaped or network faults are planned, so
	// every node reaches its peers through valnet's link fabric.
	NeedsFabric bool
}

// Preparer is a backend that must know the whole network before any home
// is written (the docker backend gives each container its IP). It refuses
// a layout it cannot run, before anything starts.
type Preparer interface {
	Prepare(ctx context.Context, l Layout) error
}

// Releaser is a backend that holds something for the whole run (a Docker
// network, relays); Release runs once, after every node is stopped, also
// after a failure or Ctrl-C.
type Releaser interface {
	Release() error
}

// SignerEndpoint is where a node in another process listens for its
// remote signer (priv_validator_laddr) and where the runner's signer dials
// it.
type SignerEndpoint struct {
	Listen  string // the node's priv_validator_laddr, e.g. unix:///dir/v-1.sock
	Network string // "tcp" or "unix": how the runner's signer dials
	Addr    string // host:port or socket path the runner's signer dials
}

// RemoteSigning is a backend whose nodes run outside the runner's process
// (processes, containers): every signer stays in the runner and is served
// to its node over CometBFT's remote-signer protocol.
type RemoteSigning interface {
	// SignerEndpoint says where validator name's node listens for its
	// signer. tcp: the scenario asks for via: tcp (SecretConnection);
	// otherwise a unix socket in sockDir, a short directory the runner
	// owns and removes.
	SignerEndpoint(name string, tcp bool, sockDir string) (SignerEndpoint, error)
}

// Addresser is a backend whose nodes listen on addresses it assigns (a
// container's own IP and fixed ports) rather than loopback ports valnet
// picks for each node.
type Addresser interface {
	// ConfigureListen sets c's listen addresses for the backend.
	ConfigureListen(c *cfg.Config)
	// PeerAddr is host:port where peers reach validator name's P2P port.
	PeerAddr(name string) string
	// FabricHost is the address the link fabric's proxies listen on so
	// the nodes can reach them.
	FabricHost() string
}

// KeepInfo is a backend that can say how to remove what a run left up
// (printed with --keep, written to network.json), should valnet be killed.
type KeepInfo interface {
	KeepCommand() string
}

// LeftoverCleaner is a backend that can remove what runners killed earlier
// left behind (node processes, containers) before a new run starts.
type LeftoverCleaner interface {
	CleanLeftovers(ctx context.Context) ([]string, error)
}
