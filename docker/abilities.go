package docker

import (
	"context"
	"errors"
	"fmt"

	cfg "github.com/cometbft/cometbft/config"

	"github.com/valnet/valnet/nodes"
)

// The docker backend's run-wide abilities (see nodes/abilities.go): the
// runner drives a docker run through these and never asks for it by name.
var (
	_ nodes.Backend       = Backend{}
	_ nodes.Preparer      = Backend{}
	_ nodes.Releaser      = Backend{}
	_ nodes.RemoteSigning = Backend{}
	_ nodes.Addresser     = Backend{}
	_ nodes.KeepInfo      = Backend{}
)

// Open connects to the engine and creates the run's network (NewRun with
// default options) and returns its backend; Release removes it all.
func Open(ctx context.Context, runID string) (nodes.Backend, error) {
	r, err := NewRun(ctx, runID, Options{})
	if err != nil {
		return nil, err
	}
	return r.Backend(), nil
}

// Prepare gives every validator its IP on the run's network. A remote
// engine cannot run shaped links: valnet's fabric would have to run on
// the engine's host.
func (b Backend) Prepare(_ context.Context, l nodes.Layout) error {
	if b.run.Remote() && l.NeedsFabric {
		return errors.New("backend docker on a remote engine: shaped links and network faults need valnet's link fabric between the containers, which cannot run on the engine's host; use unshaped links or a local engine")
	}
	_, err := b.run.Prepare(l.Names)
	return err
}

// Release removes every container and the network of the run.
func (b Backend) Release() error { return b.run.Close() }

// SignerEndpoint: with tcp the signer stays on this host and dials into
// the container's fixed signer port; otherwise a unix socket in the
// directory bind-mounted into the container (a remote engine: TCP
// through a relay on this host). sockDir is not used: the run has its own.
func (b Backend) SignerEndpoint(name string, tcp bool, _ string) (nodes.SignerEndpoint, error) {
	if tcp {
		addr, ok := b.nodeAddresses(name)
		if !ok {
			return nodes.SignerEndpoint{}, fmt.Errorf("docker: validator %s was not prepared", name)
		}
		return nodes.SignerEndpoint{Listen: fmt.Sprintf("tcp://0.0.0.0:%d", PrivValPort), Network: "tcp", Addr: addr.PrivVal}, nil
	}
	laddr, network, addr := b.run.SignerAddr(name)
	return nodes.SignerEndpoint{Listen: laddr, Network: network, Addr: addr}, nil
}

// ConfigureListen: fixed ports on every interface of the container.
func (Backend) ConfigureListen(c *cfg.Config) { Configure(c, false) }

// PeerAddr is the container's IP and P2P port.
func (b Backend) PeerAddr(name string) string {
	a, _ := b.nodeAddresses(name)
	return a.P2P
}

// FabricHost is this host's address on the run's bridge.
func (b Backend) FabricHost() string { return b.run.Gateway() }

// KeepCommand removes the run's containers and network.
func (b Backend) KeepCommand() string { return b.run.KeepCommand() }

func (b Backend) nodeAddresses(name string) (NodeAddresses, bool) {
	b.run.mu.Lock()
	defer b.run.mu.Unlock()
	a, ok := b.run.addressesLocked().Nodes[name]
	return a, ok
}

// CheckEngine reports whether a Docker engine answers (DOCKER_HOST, else
// the default socket) and a node binary can be had for its image, without
// creating or building anything: valnet run checks it before a run
// directory exists.
func CheckEngine(ctx context.Context) error {
	c, err := connect(ctx, "")
	if err != nil {
		return err
	}
	_, goarch, err := engineArch(c)
	if err != nil {
		return err
	}
	return checkBinarySource(ctx, goarch)
}
