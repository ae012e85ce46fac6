package nodes

import (
	"net"
	"strconv"
	"testing"
)

// FreePort hands out distinct ports that can be bound, below the
// kernel's ephemeral range where outgoing connections cannot take them.
func TestFreePortBelowTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 100 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ReleasePort(port) })
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
		if low-lowestPickedPort >= 1000 && (port < lowestPickedPort || port >= low) {
			t.Errorf("port %d outside [%d, %d)", port, lowestPickedPort, low)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatalf("port %d cannot be bound: %v", port, err)
		}
		l.Close()
	}
}
