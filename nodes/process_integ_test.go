//go:build integ

package nodes

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/valnet/valnet/internal/nettest"
	"github.com/valnet/valnet/internal/testbin"
	"github.com/valnet/valnet/results/eventlog"
)

// A stock CometBFT binary as one validator of four (the other three are
// `valnet node`): its votes and blocks reach the Sink through its RPC
// websocket, also after it is killed and restarted. It signs with the
// FilePV of its home here; in a run, the runner gives a user binary a
// remote signer.
func TestProcessUserBinary(t *testing.T) {
	bin := valnetBinary(t)
	cometbft := testbin.CometBFT(t, "v1.0.1")

	tn := newTestNet(t, t.TempDir(), 4)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Cleanup(func() { tn.Stop() })
	for i, s := range tn.specs {
		backend := Process{Command: []string{bin, "node"}}
		if i == 0 {
			backend = Process{Binary: cometbft}
		}
		n, err := backend.Start(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		tn.Nodes = append(tn.Nodes, n)
	}
	all := []string{"v0", "v1", "v2", "v3"}
	nettest.WaitFor(t, 3*time.Minute, "every node at height 5", func() bool { return tn.Log.MinBlock(all...) >= 5 })
	kinds := map[eventlog.Kind]int{}
	for _, e := range tn.Log.Snapshot() {
		if e.Node != "v0" {
			continue
		}
		kinds[e.Kind]++
		if e.Kind == eventlog.KindVote && !slices.Contains(all, e.Validator) {
			t.Fatalf("vote event names validator %q, not one of %v", e.Validator, all)
		}
	}
	for _, k := range []eventlog.Kind{eventlog.KindVote, eventlog.KindNewRound, eventlog.KindStep, eventlog.KindProposal, eventlog.KindBlock} {
		if kinds[k] == 0 {
			t.Errorf("no %s event from the cometbft node (got %v)", k, kinds)
		}
	}
	// The cometbft validator signs: it is not absent from recent commits.
	if !nettest.SignedIn(tn.Log.Snapshot(), "v0", 2) {
		t.Error("v0 (cometbft) is absent from every commit")
	}

	// Killed and restarted, the user binary streams events again.
	if err := tn.Ctl("v0").Kill(ctx); err != nil {
		t.Fatal(err)
	}
	others := []string{"v1", "v2", "v3"}
	killedAt := tn.Log.MinBlock(others...)
	nettest.WaitFor(t, 3*time.Minute, "v1-v3 go on", func() bool { return tn.Log.MinBlock(others...) >= killedAt+2 })
	if err := tn.Ctl("v0").Restart(ctx); err != nil {
		t.Fatal(err)
	}
	target := tn.Log.MinBlock(others...) + 3
	nettest.WaitFor(t, 3*time.Minute, "the restarted cometbft node reports blocks again", func() bool {
		return tn.Log.Block("v0") >= target && tn.Height("v0") >= target
	})
	if c := nettest.ConflictingVotes(tn.Log.Snapshot()); len(c) > 0 {
		t.Fatalf("conflicting votes: %v", c)
	}
	for _, e := range tn.Log.Snapshot() {
		if e.Kind == eventlog.KindNodeError {
			t.Errorf("node error: %+v", e)
		}
	}
}

// testdata/cometbft-v0.38.26 (the unit tests' v0.38 defaults) is what the
// stock binary's init writes, key for key.
func TestIntegFlavorTestdata(t *testing.T) {
	bin := testbin.CometBFT(t, "v0.38.26")
	f, err := ReadFlavor(context.Background(), bin)
	if err != nil {
		t.Fatal(err)
	}
	want := v038Flavor(t)
	if got, w := f.ConfigKeys(), want.ConfigKeys(); !slices.Equal(got, w) {
		t.Errorf("the binary's config keys differ from %s's:\n got %v\nwant %v", v038Testdata, got, w)
	}
	if f.Line.Name != "v0.38" || f.Reported != "0.38.26" {
		t.Errorf("flavor %v", f)
	}
}
