package sim_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/runner"
	"github.com/valnet/valnet/scenarios"
)

// TestProposersAsRealNodes: the sim names the same proposer for every
// height and round as real CometBFT nodes with the same validators and
// keys (same seed), because it asks CometBFT's own ValidatorSet.
func TestProposersAsRealNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real nodes")
	}
	const yaml = `name: proposers
run: {heights: 6, max_duration: 2m, seed: 11}
validators:
  - {name: a, power: 10}
  - {name: b, power: 20}
  - {name: c, power: 30}
  - {name: d, power: 15}
`
	proposers := func(backend string) map[[2]int64]string {
		plan, err := scenarios.Parse("proposers.yaml", []byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		plan.Run.Backend = backend
		dir := filepath.Join(t.TempDir(), backend)
		out, err := runner.Run(context.Background(), plan, runner.Options{OutDir: dir})
		if err != nil {
			t.Fatalf("%s: %v", backend, err)
		}
		if out.Summary.StopReason != eventlog.StopHeights {
			t.Fatalf("%s stopped: %s", backend, out.Summary.StopReason)
		}
		events, err := eventlog.ReadFile(filepath.Join(dir, runner.EventsFile))
		if err != nil {
			t.Fatal(err)
		}
		m := map[[2]int64]string{}
		for _, e := range events {
			if e.Kind == eventlog.KindNewRound {
				m[[2]int64{e.Height, int64(e.Round)}] = e.Proposer
			}
		}
		return m
	}
	real, model := proposers("inprocess"), proposers(scenarios.BackendSim)
	compared := 0
	for k, want := range real {
		got, ok := model[k]
		if !ok {
			continue // a round only one of them needed
		}
		compared++
		if got != want {
			t.Errorf("height %d round %d: sim proposer %s, CometBFT's %s", k[0], k[1], got, want)
		}
	}
	if compared < 6 {
		t.Fatalf("only %d (height, round) pairs in common", compared)
	}
}
