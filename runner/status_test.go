package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/results"
)

// TestStatusLineSaysWhenTheChainStalls: a stall gets its own line, once
// per explanation, in CI logs and on a terminal alike; the live line
// marks it.
func TestStatusLineSaysWhenTheChainStalls(t *testing.T) {
	stall := "no height committed for 15s after the network started; likely cause network: … no peers connected"
	for _, terminal := range []bool{false, true} {
		var b strings.Builder
		s := &statusLine{w: &b, terminal: terminal, target: 5, plainEvery: time.Second}
		now := time.Unix(0, 0)
		for i, p := range []results.Progress{
			{Elapsed: time.Second},
			{Elapsed: 15 * time.Second, Stall: stall},
			{Elapsed: 16 * time.Second, Stall: stall},
			{Elapsed: 17 * time.Second, Height: 1},
		} {
			s.update(p, now.Add(time.Duration(i)*time.Second))
		}
		s.done()
		out := b.String()
		if n := strings.Count(out, "valnet: "+stall+"\n"); n != 1 {
			t.Errorf("terminal %v: the stall printed %d times:\n%q", terminal, n, out)
		}
		if !strings.Contains(out, "height 0/5  round 0  elapsed 15s  missed precommits 0  sign errors 0  STALLED") {
			t.Errorf("terminal %v: the live line does not mark the stall:\n%q", terminal, out)
		}
		if strings.Contains(out, "elapsed 17s  missed precommits 0  sign errors 0  STALLED") {
			t.Errorf("terminal %v: still marked stalled after a commit:\n%q", terminal, out)
		}
	}
}
