// Package cmtversion names the CometBFT release lines valnet runs and what
// differs between them where valnet depends on it: the privval dialect,
// whether vote extensions exist and where genesis enables them, and the
// defaults the sim models. It is data only, so that the scenario schema,
// the backends and the sim read one table.
//
// Every figure is from that line's source in the Go module cache
// (github.com/cometbft/cometbft@<Tested>): config/config.go for the
// defaults, types/params.go for the consensus params, proto/tendermint/
// privval or api/cometbft/privval/v1 for the wire layout.
package cmtversion

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Line is one release line, as `cometbft version` names it (a binary
// built from a module reports its line, not always its exact release:
// module v0.40.0 prints 0.39.0 and v0.37.18 prints 0.37.16).
type Line struct {
	Name string // "v0.38"
	// Tested is the release valnet's integration tests run, built from the
	// Go module proxy.
	Tested string
	// Dialect is the privval layout (signers.Dialect's names): "v0.38" for
	// tendermint.privval (v0.34 to v0.40), "v1" for cometbft.privval.v1.
	Dialect string
	// VoteExtensions: the line has ABCI vote extensions (v0.38 on).
	VoteExtensions bool
	// VoteExtensionsParam is where genesis.json enables them, under
	// consensus_params: "abci" (v0.38-v0.40) or "feature" (v1); "" none.
	VoteExtensionsParam string
	// FlushThrottle is p2p.flush_throttle_timeout's default
	// (config.DefaultP2PConfig): 100 ms up to v0.38, 10 ms in v0.39, v0.40
	// and v1.
	FlushThrottle time.Duration
	// PeerGossipSleep is consensus.peer_gossip_sleep_duration's default:
	// 100 ms in every line.
	PeerGossipSleep time.Duration
	// InProcess: valnet links this line (the inprocess backend and
	// `valnet node` run it).
	InProcess bool
}

// The lines valnet knows, oldest first. v0.34 is not among them: its
// last release (v0.34.35) cannot be built from the Go module proxy (its
// go.mod replaces go-kit, afero and adlio/schema with informalsystems
// forks the proxy does not serve), so it cannot be tested here.
var lines = []Line{
	{Name: "v0.37", Tested: "v0.37.18", Dialect: "v0.38", FlushThrottle: 100 * time.Millisecond, PeerGossipSleep: 100 * time.Millisecond},
	{Name: "v0.38", Tested: "v0.38.26", Dialect: "v0.38", VoteExtensions: true, VoteExtensionsParam: "abci",
		FlushThrottle: 100 * time.Millisecond, PeerGossipSleep: 100 * time.Millisecond},
	{Name: "v0.39", Tested: "v0.39.4", Dialect: "v0.38", VoteExtensions: true, VoteExtensionsParam: "abci",
		FlushThrottle: 10 * time.Millisecond, PeerGossipSleep: 100 * time.Millisecond},
	{Name: "v0.40", Tested: "v0.40.0", Dialect: "v0.38", VoteExtensions: true, VoteExtensionsParam: "abci",
		FlushThrottle: 10 * time.Millisecond, PeerGossipSleep: 100 * time.Millisecond},
	{Name: "v1.0", Tested: "v1.0.1", Dialect: "v1", VoteExtensions: true, VoteExtensionsParam: "feature",
		FlushThrottle: 10 * time.Millisecond, PeerGossipSleep: 100 * time.Millisecond, InProcess: true},
}

// Default is the line valnet links: what runs when no binary is given.
func Default() Line { return lines[len(lines)-1] }

// Lines returns every line, oldest first, as a new slice.
func Lines() []Line { return append([]Line(nil), lines...) }

// Names lists the lines' names, for messages.
func Names() []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.Name
	}
	return out
}

var versionRE = regexp.MustCompile(`(?m)^\s*v?(\d+)\.(\d+)(?:\.(\d+))?(\S*)\s*$`)

// Lookup finds a line by a version as a scenario writes it ("v0.38",
// "0.38.26", "v1", "1.0.1").
func Lookup(version string) (Line, error) {
	s := strings.TrimPrefix(strings.TrimSpace(version), "v")
	if s == "1" {
		s = "1.0"
	}
	parts := strings.SplitN(s, ".", 3)
	if len(parts) >= 2 {
		name := "v" + parts[0] + "." + parts[1]
		for _, l := range lines {
			if l.Name == name {
				return l, nil
			}
		}
	}
	return Line{}, fmt.Errorf("CometBFT %q is not a version valnet knows (known: %s)", version, strings.Join(Names(), ", "))
}

// FromOutput finds the line in what `<binary> version` printed: its last
// line that is a version number (CometBFT prints "0.38.26"; a build may
// print more lines before it).
func FromOutput(out string) (Line, string, error) {
	ms := versionRE.FindAllStringSubmatch(out, -1)
	if len(ms) == 0 {
		return Line{}, "", fmt.Errorf("no version number in its output %q", firstLine(out))
	}
	m := ms[len(ms)-1]
	reported := m[1] + "." + m[2]
	if m[3] != "" {
		reported += "." + m[3]
	}
	reported += m[4]
	if _, err := strconv.Atoi(m[1]); err != nil {
		return Line{}, reported, err
	}
	l, err := Lookup(m[1] + "." + m[2])
	return l, reported, err
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}
