// Package unixsock listens on unix sockets only their owner can use.
// valnet's sockets (a node's event socket, the remote signer's) live in
// 0700 directories (nodes.MkRunTempDir); the socket itself is made 0600 as
// well, so that a socket path given elsewhere is not open to other users
// either (docs/reliability.md).
package unixsock

import (
	"fmt"
	"net"
	"os"
)

// Mode is the mode of every unix socket valnet listens on.
const Mode os.FileMode = 0o600

// Listen listens on a unix socket at path, mode 0600. The kernel creates
// the socket with the umask's mode; it is narrowed before Listen returns,
// so before anything can be accepted on it.
func Listen(path string) (net.Listener, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, Mode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("unix socket %s: %w", path, err)
	}
	return ln, nil
}
