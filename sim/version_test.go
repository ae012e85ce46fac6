package sim

import (
	"testing"
	"time"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
)

// node.version picks the line's defaults where they differ from v1.0's
// (flush_throttle_timeout 100 ms up to v0.38), and node.config's modelled
// keys go over them; run_start says which line the MODEL used.
func TestParamsForVersionAndConfig(t *testing.T) {
	for _, tc := range []struct {
		node          string
		flush, gossip string
	}{
		{"", "10ms", "85ms"},                        // the default calibration, fitted on v1.0
		{"node: {version: v0.38}", "100ms", "85ms"}, // config/config.go of v0.38.26
		{"node: {version: v0.37}", "100ms", "85ms"},
		{"node: {version: v0.39}", "10ms", "85ms"},
		{"node: {version: v0.38, config: {p2p.flush_throttle_timeout: 20ms, consensus.peer_gossip_sleep_duration: 50ms}}", "20ms", "50ms"},
	} {
		plan, err := scenarios.Parse("t.yaml", []byte("name: t\nrun: {backend: sim}\n"+tc.node+"\nvalidators: [{name: v}]\n"))
		if err != nil {
			t.Fatal(err)
		}
		p, _, err := paramsFor(plan)
		if err != nil {
			t.Fatal(err)
		}
		if p.FlushThrottle.String() != tc.flush || p.GossipSleep.String() != tc.gossip {
			t.Errorf("%q: flush %v gossip %v, want %s %s", tc.node, p.FlushThrottle, p.GossipSleep, tc.flush, tc.gossip)
		}
	}
}

// With vote extensions a non-nil precommit costs its signer two
// signatures: on a device that takes 100 ms each, a precommit takes
// 200 ms and a prevote 100 ms.
func TestVoteExtensionsSignTwice(t *testing.T) {
	y := `name: ext
chain: {vote_extensions_enable_height: 1, timeouts: {commit: 0s}}
run: {backend: sim, heights: 4, sim: {calibration: CALIBRATION}}
profiles:
  slowdev: {latency: 100ms}
validators:
  - {name: v, count: 3}
  - {name: hsm, signer: {type: simulated, profile: slowdev}}
`
	events, _ := simRun(t, y, exactCalibration)
	var pv, pc []float64
	for _, e := range events {
		if e.Kind != eventlog.KindSign || e.Validator != "hsm" || e.Error != "" || e.BlockID == "" {
			continue
		}
		switch e.Phase {
		case phase.Prevote:
			pv = append(pv, e.LatencyMS)
		case phase.Precommit:
			pc = append(pc, e.LatencyMS)
		}
	}
	if len(pv) == 0 || len(pc) == 0 {
		t.Fatalf("hsm signed %d prevotes, %d precommits", len(pv), len(pc))
	}
	for _, l := range pv {
		if l != 100 {
			t.Errorf("prevote took %v ms, want 100", l)
		}
	}
	for _, l := range pc {
		if l != 200 {
			t.Errorf("non-nil precommit took %v ms, want 200 (vote and extension)", l)
		}
	}
}

// With vote extensions a non-nil precommit costs its receiver two
// verifications (types/vote_set.go VerifyVoteAndExtension); a prevote, a
// nil precommit and a precommit below the enable height cost one.
func TestVoteExtensionsVerifyTwice(t *testing.T) {
	w := &world{p: Params{VoteCost: 50 * time.Microsecond}, extHeight: 3}
	for _, tc := range []struct {
		name string
		e    event
		want time.Duration
	}{
		{"prevote", event{mk: mPrevote, height: 5, block: 1}, 50 * time.Microsecond},
		{"nil precommit", event{mk: mPrecommit, height: 5, block: noBlock}, 50 * time.Microsecond},
		{"precommit below the height", event{mk: mPrecommit, height: 2, block: 1}, 50 * time.Microsecond},
		{"precommit at the height", event{mk: mPrecommit, height: 3, block: 1}, 100 * time.Microsecond},
	} {
		if got := w.voteCost(&tc.e); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	off := &world{p: w.p}
	if got := off.voteCost(&event{mk: mPrecommit, height: 5, block: 1}); got != 50*time.Microsecond {
		t.Errorf("extensions off: %v, want 50µs", got)
	}
}
