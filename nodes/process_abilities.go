package nodes

import (
	"context"
	"fmt"
	"path/filepath"
)

var (
	_ Backend         = Process{}
	_ RemoteSigning   = Process{}
	_ LeftoverCleaner = Process{}
)

// SignerEndpoint: the node process listens for the runner's signer on a
// loopback TCP port (via: tcp, SecretConnection) or on a unix socket in
// sockDir.
func (Process) SignerEndpoint(name string, tcp bool, sockDir string) (SignerEndpoint, error) {
	if tcp {
		port, err := FreePort()
		if err != nil {
			return SignerEndpoint{}, err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		return SignerEndpoint{Listen: "tcp://" + addr, Network: "tcp", Addr: addr}, nil
	}
	if sockDir == "" {
		return SignerEndpoint{}, fmt.Errorf("node %s: no socket directory for its signer", name)
	}
	path := filepath.Join(sockDir, name+".sock")
	return SignerEndpoint{Listen: "unix://" + path, Network: "unix", Addr: path}, nil
}

// CleanLeftovers kills node and app processes of runners that are gone.
func (Process) CleanLeftovers(context.Context) ([]string, error) {
	killed, err := CleanOrphans()
	var out []string
	for _, pid := range killed {
		out = append(out, fmt.Sprintf("process %d", pid))
	}
	return out, err
}

// CheckProcessSupported says whether the process backend can run on this
// machine.
func CheckProcessSupported() error {
	if !processSupported {
		return errNoProcess
	}
	return nil
}
