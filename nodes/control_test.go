package nodes

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/internal/nettest"
)

// An in-process validator is killed and restarted from its home with the
// same signer object: its handshake replays the block store into a fresh
// in-memory app, it catches up with the others, and its signer never signs
// two blocks at one height, round and type.
func TestInProcessKillRestart(t *testing.T) {
	tn := newTestNet(t, t.TempDir(), 4)
	victim := newCountingSigner(tn.specs[3].Signer)
	tn.specs[3].Signer = victim
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	tn.start(ctx, InProcess{})
	all := []string{"v0", "v1", "v2", "v3"}
	others := all[:3]

	nettest.WaitFor(t, 3*time.Minute, "every node at height 4", func() bool { return tn.Log.MinBlock(all...) >= 4 })
	ctl := tn.Ctl("v3")
	if err := ctl.Pause(ctx); !errors.Is(err, ErrPauseInProcess) {
		t.Fatalf("Pause in-process: got %v, want ErrPauseInProcess", err)
	}
	tn.KillRestart(ctx, "v3", others, nil)
	// Restarting a running node stops it first.
	if err := ctl.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	target := tn.Log.MinBlock(others...) + 2
	nettest.WaitFor(t, 3*time.Minute, "v3 catches up again", func() bool { return tn.Height("v3") >= target })

	votes, doubles := victim.report()
	if len(doubles) > 0 {
		t.Fatalf("v3 double-signed: %v", doubles)
	}
	if votes == 0 {
		t.Fatal("v3 signed no vote")
	}
	if c := nettest.ConflictingVotes(tn.Log.Snapshot()); len(c) > 0 {
		t.Fatalf("conflicting votes seen: %v", c)
	}
	tn.Stop()
	tn.Nodes = nil
}

// A stopped in-process node leaves none of its ABCI client routines:
// CometBFT v1.0.1's Node.OnStop does not stop its proxy app, whose
// killTMOnClientError routine then waits forever; Stop stops it (found by
// valnet soak, one routine per node incarnation).
func TestInProcessStopLeavesNoProxyAppRoutine(t *testing.T) {
	tn := newTestNet(t, t.TempDir(), 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tn.start(ctx, InProcess{})
	tn.ReachHeight(2)
	if err := tn.Ctl("v0").Restart(ctx); err != nil {
		t.Fatal(err)
	}
	tn.ReachHeight(tn.Height("v0") + 1)
	tn.Stop()
	tn.Nodes = nil
	nettest.WaitFor(t, 10*time.Second, "no killTMOnClientError routine left", func() bool {
		return goroutinesIn("proxy.(*multiAppConn).killTMOnClientError") == 0
	})
}

// goroutinesIn counts the goroutines with fn in their stack.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			n++
		}
	}
	return n
}
