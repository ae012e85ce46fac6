package nodes

import (
	"context"
	"errors"
	"testing"
	"time"
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

	waitFor(t, 3*time.Minute, "every node at height 4", func() bool { return tn.log.minBlock(all...) >= 4 })
	ctl := tn.ctl("v3")
	if err := ctl.Pause(ctx); !errors.Is(err, ErrPauseInProcess) {
		t.Fatalf("Pause in-process: got %v, want ErrPauseInProcess", err)
	}
	if err := ctl.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	killedAt := tn.height("v3")
	waitFor(t, 3*time.Minute, "3 of 4 go on without v3", func() bool { return tn.log.minBlock(others...) >= killedAt+3 })
	if h := tn.height("v3"); h != killedAt {
		t.Fatalf("killed v3 went from height %d to %d", killedAt, h)
	}

	if err := ctl.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	target := tn.log.minBlock(others...) + 2
	waitFor(t, 3*time.Minute, "v3 catches up", func() bool { return tn.height("v3") >= target && tn.log.block("v3") >= target })
	// Restarting a running node stops it first.
	if err := ctl.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	target = tn.log.minBlock(others...) + 2
	waitFor(t, 3*time.Minute, "v3 catches up again", func() bool { return tn.height("v3") >= target })

	votes, doubles := victim.report()
	if len(doubles) > 0 {
		t.Fatalf("v3 double-signed: %v", doubles)
	}
	if votes == 0 {
		t.Fatal("v3 signed no vote")
	}
	if c := conflictingVotes(tn.log.snapshot()); len(c) > 0 {
		t.Fatalf("conflicting votes seen: %v", c)
	}
	tn.stop()
	tn.nodes = nil
}
