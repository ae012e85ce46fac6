package nodes

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// portsInUse remembers ports handed out by this process, so that two nodes
// of one run (or two runs in one test binary) never get the same port even
// before either has bound it.
var (
	portsMu    sync.Mutex
	portsInUse = map[int]bool{}
)

// lowestPickedPort is the bottom of the range FreePort picks from; the
// top is the kernel's ephemeral range's start. Below it sit the ports
// services usually claim.
const lowestPickedPort = 20000

// FreePort returns a loopback TCP port that is free now, for a node to
// bind later. It is picked below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range): a port in that range can be taken as
// the local end of any outgoing connection (a peer's dial, an RPC poll)
// between this check and the node's bind, which a busy host does, and the
// node then fails with "address already in use". Below it, only another
// program choosing a port on purpose can take it. Where the ephemeral
// range leaves no room below it, the kernel picks (port 0). A backend
// still retries a start that fails to bind.
func FreePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	top := ephemeralLow()
	for range 200 {
		port := 0
		if top-lowestPickedPort >= 1000 {
			port = lowestPickedPort + rand.IntN(top-lowestPickedPort)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			if port == 0 {
				return 0, fmt.Errorf("no free loopback port: %w", err)
			}
			continue // taken: try another
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !portsInUse[port] {
			portsInUse[port] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free loopback port after 200 tries")
}

// ephemeralLow is the first port of the kernel's ephemeral range, or 0
// when it cannot be read (not Linux): then the kernel picks.
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return 0
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0
	}
	return low
}

// ReleasePort lets port be handed out again.
func ReleasePort(port int) {
	portsMu.Lock()
	defer portsMu.Unlock()
	delete(portsInUse, port)
}
