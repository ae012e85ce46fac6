package runner

import (
	"strings"
	"testing"
)

// unexplainedRefusals are the signer's refusals other than those a node
// restarted mid-height causes. A node killed after its precommit at H but
// before committing H replays its WAL and asks again for H's proposal
// and prevote: the high-water mark refuses them as step regressions, as
// CometBFT's FilePV does (privval/file.go, checkHRS), and the node goes on
// (CI: v1.0.1 killed at height 6 after its precommit). Such a refusal is
// a "double-sign guard" one at a height whose precommit the signer had
// already signed; anything else is a fault.
func unexplainedRefusals(records string) []string {
	var bad []string
	precommitted := map[string]bool{}
	for _, line := range strings.Split(records, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 4 {
			continue
		}
		phase, height, verdict := fields[0], fields[1], fields[3]
		switch {
		case verdict == "ok" && phase == "precommit":
			precommitted[height] = true
		case verdict == "ERROR" && !(precommitted[height] && strings.Contains(line, "double-sign guard")):
			bad = append(bad, line)
		}
	}
	return bad
}

func TestUnexplainedRefusals(t *testing.T) {
	restart := "proposal h=6 r=0 ok\nprevote h=6 r=0 ok\nprecommit h=6 r=0 ok\n" +
		"proposal h=6 r=0 ERROR double-sign guard: error signing proposal: step regression at height 6 round 0. Got 1, last step 3\n" +
		"prevote h=6 r=0 ERROR double-sign guard: error signing vote: step regression at height 6 round 0. Got 2, last step 3\n" +
		"precommit h=6 r=0 ok\nproposal h=7 r=0 ok\n"
	for _, tc := range []struct {
		name    string
		records string
		bad     int
	}{
		{"clean", "proposal h=1 r=0 ok\nprevote h=1 r=0 ok\nprecommit h=1 r=0 ok\n", 0},
		{"restart after the precommit", restart, 0},
		{"regression before any precommit at that height", "prevote h=6 r=0 ok\nproposal h=6 r=0 ERROR double-sign guard: step regression\n", 1},
		{"another error after the precommit", "precommit h=6 r=0 ok\nprevote h=6 r=0 ERROR signer timed out\n", 1},
		{"a guard refusal at another height", "precommit h=5 r=0 ok\nprevote h=6 r=0 ERROR double-sign guard: step regression\n", 1},
	} {
		if got := unexplainedRefusals(tc.records); len(got) != tc.bad {
			t.Errorf("%s: unexplained %q, want %d", tc.name, got, tc.bad)
		}
	}
}
