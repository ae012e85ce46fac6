package nodes

import (
	"fmt"
	"net"
	"sync"
)

// portsInUse remembers ports handed out by this process, so that two nodes
// of one run (or two runs in one test binary) never get the same port even
// before either has bound it.
var (
	portsMu    sync.Mutex
	portsInUse = map[int]bool{}
)

// FreePort returns a loopback TCP port that is free now. The kernel picks
// it (port 0), so concurrent processes are unlikely to collide; a backend
// retries a start that fails to bind.
func FreePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("no free loopback port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !portsInUse[port] {
			portsInUse[port] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free loopback port after 50 tries")
}

// ReleasePort lets port be handed out again.
func ReleasePort(port int) {
	portsMu.Lock()
	defer portsMu.Unlock()
	delete(portsInUse, port)
}
