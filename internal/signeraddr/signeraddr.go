// Package signeraddr reads the two things written about a remote-signer
// hop: an address in CometBFT's priv_validator_laddr form (tcp://host:port,
// unix:///path) and a SecretConnection identity (its address in hex). The
// scenario schema (signer type external) and the signers (valnet signer
// serve) read them with the same rules.
package signeraddr

import (
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Transports.
const (
	TCP  = "tcp"
	Unix = "unix"
)

// Parse splits an address into network and address (host:port for tcp, a
// socket path for unix). Errors name the address and what is allowed.
func Parse(s string) (network, address string, err error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return "", "", fmt.Errorf("address %q has no scheme: write tcp://host:port or unix:///path/to/socket", s)
	}
	switch scheme {
	case TCP:
		host, port, err := net.SplitHostPort(rest)
		if err != nil {
			return "", "", fmt.Errorf("address %q: want tcp://host:port (%v)", s, err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", "", fmt.Errorf("address %q: port %q is not a port number", s, port)
		}
		return TCP, net.JoinHostPort(host, port), nil
	case Unix:
		if rest == "" {
			return "", "", fmt.Errorf("address %q: no socket path (write unix:///path/to/socket)", s)
		}
		return Unix, rest, nil
	default:
		return "", "", fmt.Errorf("address %q: unsupported scheme %q (allowed: tcp, unix)", s, scheme)
	}
}

// identityBytes is the length of a SecretConnection identity (an address).
const identityBytes = 20

// ParseIdentity reads an identity written as its address in hex (any
// case), as `valnet signer serve` prints its own, and returns it in upper
// case.
func ParseIdentity(s string) (string, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != identityBytes {
		return "", fmt.Errorf("identity %q is not an address of %d hex digits (as `valnet signer serve` prints it: \"identity 1A2B...\")", s, 2*identityBytes)
	}
	return strings.ToUpper(s), nil
}
