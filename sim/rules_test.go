package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/internal/faultcore"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
)

// exactCalibration costs nothing and gossips at once, so a timeline can
// be worked out by hand from the consensus rules and timeouts alone.
const exactCalibration = `name: exact
source: tests
sign_local: 0s
remote_hop: 0s
keyfile_decrypt: 0s
vote_cost: 0s
part_cost: 0s
proposal_cost: 0s
propose_cost: 0s
commit_cost: 0s
gossip_sleep: 1ns
flush_throttle: 0s
send_rate: 1e15
restart_delay: 0s
catchup_cost: 0s
tx_rpc: 0s
`

// simRun runs scenario text on the sim with calibration (written to a
// file) and returns every event.
func simRun(t *testing.T, yaml, calibration string) ([]eventlog.Event, string) {
	t.Helper()
	dir := t.TempDir()
	cal := filepath.Join(dir, "cal.yaml")
	if err := os.WriteFile(cal, []byte(calibration), 0o644); err != nil {
		t.Fatal(err)
	}
	yaml = strings.ReplaceAll(yaml, "CALIBRATION", cal)
	plan, err := scenarios.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]crypto.PubKey, len(plan.Validators))
	infos := make([]eventlog.ValidatorInfo, len(plan.Validators))
	for i, v := range plan.Validators {
		keys[i] = ed25519.GenPrivKeyFromSecret([]byte(v.Name)).PubKey()
		infos[i] = eventlog.ValidatorInfo{Name: v.Name, Power: v.Power}
	}
	var events []eventlog.Event
	sink := eventlog.SinkFunc(func(e eventlog.Event) { events = append(events, e) })
	reason, err := Backend{}.Simulate(context.Background(), plan, plan.Run.Seed, keys,
		eventlog.Event{Kind: eventlog.KindRunStart, Scenario: plan.Name, Validators: infos}, sink)
	if err != nil {
		t.Fatal(err)
	}
	return events, reason
}

// proposerOf is CometBFT's proposer at (h, r) for these validators: the
// genesis set (NewValidatorSet), incremented once per height
// (updateState) and r times within the height (enterNewRound).
func proposerOf(names []string, h int64, r int32) string {
	vals := make([]*types.Validator, len(names))
	byAddr := map[string]string{}
	for i, n := range names {
		pk := ed25519.GenPrivKeyFromSecret([]byte(n)).PubKey()
		vals[i] = types.NewValidator(pk, 10)
		byAddr[string(pk.Address())] = n
	}
	vs := types.NewValidatorSet(vals)
	for k := int64(1); k < h; k++ {
		vs = vs.CopyIncrementProposerPriority(1)
	}
	if r > 0 {
		vs = vs.Copy()
		vs.IncrementProposerPriority(r)
	}
	return byAddr[string(vs.GetProposer().Address)]
}

func blocks(events []eventlog.Event) map[int64]eventlog.Event {
	out := map[int64]eventlog.Event{}
	for _, e := range events {
		if e.Kind == eventlog.KindBlock {
			out[e.Height] = e
		}
	}
	return out
}

// TestSlowSignerTimeline: 4 validators, 0 latency, slow signs every
// message in 1.5 s, default timeouts (propose 3s +0.5s/round, prevote and
// precommit 1s +0.5s/round, commit 1s). Worked out from state.go:
//
//   - The three fast validators are 3 × 10 of 40 power: more than 2/3.
//     When one of them proposes at round 0's start T, every fast node
//     completes the proposal at T, prevotes at T, has 3 prevotes (a
//     polka) at T, precommits at T and commits at T. The next height
//     starts at T + timeout_commit = T + 1s.
//   - When slow proposes (after height 1, where it is still in step and
//     its proposal comes 1.5 s into round 0), it is busy signing an older
//     height: the fast
//     nodes' timeout_propose fires at T + 3s (prevote nil), +2/3 nil
//     prevotes and then +2/3 nil precommits come at once, so
//     timeout_precommit runs: round 1 starts at T + 3s + 1s. If round 1's
//     proposer is fast, the height commits at T + 4s (round 1).
//   - slow never keeps up: each of its precommits is signed 1.5 s after it
//     gets to the height, after the next proposer has made its block, so
//     every block's LastCommit lacks v-4.
func TestSlowSignerTimeline(t *testing.T) {
	events, reason := simRun(t, `name: slow
run: {backend: sim, heights: 12, max_duration: 5m, sim: {calibration: CALIBRATION}}
validators:
  - {name: v, count: 3}
  - {name: slow, signer: {type: local, latency: 1.5s}}
`, exactCalibration)
	if reason != eventlog.StopHeights {
		t.Fatalf("stop reason %s", reason)
	}
	names := []string{"v-1", "v-2", "v-3", "slow"}
	bs := blocks(events)
	start := time.Second // round 0 of height 1: timeout_commit after start
	for h := int64(1); h <= 12; h++ {
		want, round := start, int32(0)
		if h == 1 && proposerOf(names, 1, 0) == "slow" {
			// At height 1 slow starts with everyone: its proposal is
			// signed by 2.5 s, before timeout_propose, and the fast
			// nodes commit at once.
			want += 1500 * time.Millisecond
		}
		for h > 1 && proposerOf(names, h, round) == "slow" {
			// timeout_propose(r) then timeout_precommit(r)
			want += 3*time.Second + time.Duration(round)*500*time.Millisecond + time.Second + time.Duration(round)*500*time.Millisecond
			round++
		}
		b, ok := bs[h]
		if !ok {
			t.Fatalf("height %d not committed", h)
		}
		got := b.Time.Sub(Epoch)
		if d := got - want; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("height %d (proposer %s, commit round %d): committed at %v, want %v", h, proposerOf(names, h, 0), round, got, want)
		}
		if b.Proposer != proposerOf(names, h, round) {
			t.Errorf("height %d: proposer %s, want %s", h, b.Proposer, proposerOf(names, h, round))
		}
		if h > 1 {
			if !contains(b.LastCommitAbsent, "slow") {
				t.Errorf("height %d: LastCommit has slow's precommit for %d, which is signed too late", h, h-1)
			}
			if len(b.LastCommitAbsent) != 1 {
				t.Errorf("height %d: absent %v, want only slow", h, b.LastCommitAbsent)
			}
		}
		start = want + time.Second
	}
	// Every signature of slow takes 1.5 s, all of it injected.
	for _, e := range events {
		if e.Kind == eventlog.KindSign && e.Validator == "slow" && e.Error == "" && (e.LatencyMS != 1500 || e.InjectedMS != 1500) {
			t.Fatalf("slow's %s at %d/%d: latency %v ms, injected %v ms; want 1500", e.Phase, e.Height, e.Round, e.LatencyMS, e.InjectedMS)
		}
	}
}

// TestPartitionWaitsInPrevote: a 2/2 partition gives no side +2/3 of any
// prevotes, so no prevote timeout starts (state.go addVote enters
// PrevoteWait only on HasTwoThirdsAny): the nodes wait in the prevote
// step of round 0 and do not advance rounds until the partition heals.
func TestPartitionWaitsInPrevote(t *testing.T) {
	events, _ := simRun(t, `name: part
run: {backend: sim, heights: 6, max_duration: 5m, sim: {calibration: CALIBRATION}}
validators:
  - {name: v, count: 4}
faults:
  - {action: partition, at: {height: 3}, duration: 15s, groups: [[v-1, v-2], [v-3, v-4]]}
`, exactCalibration)
	var cut, healed time.Time
	for _, e := range events {
		if e.Kind == eventlog.KindFault && e.Action == "partition" {
			if e.State == eventlog.FaultStart {
				cut = e.Time
			} else {
				healed = e.Time
			}
		}
	}
	if cut.IsZero() || healed.Sub(cut) != 15*time.Second {
		t.Fatalf("partition from %v to %v, want 15s", cut, healed)
	}
	for _, e := range events {
		if e.Kind == eventlog.KindNewRound && e.Height == 3 && e.Round > 0 && e.Time.Before(healed) {
			t.Errorf("%s entered round %d of height 3 at %v, during the partition", e.Node, e.Round, e.Time.Sub(Epoch))
		}
		if e.Kind == eventlog.KindStep && e.Height == 3 && e.Step == "prevote_wait" && e.Time.Before(healed) {
			t.Errorf("%s started the prevote timeout at %v without +2/3 prevotes", e.Node, e.Time.Sub(Epoch))
		}
	}
	b3, ok := blocks(events)[3]
	if !ok || b3.Time.Before(healed) {
		t.Fatalf("height 3 committed at %v, before the heal at %v", b3.Time, healed)
	}
	if b4 := blocks(events)[4]; b4.LastCommitRound == 0 {
		t.Errorf("height 3 committed in round 0; after the heal its round 0 had a split prevote, so it needs round 1")
	}
}

// TestFaultsStepOnTheRunnersGrid: the sim starts faults where the runner
// does, on its poll grid (faultcore.StepEvery from the start): a fault at
// a time on the first step at or after it, a fault at a height on the
// first step after that height's first commit.
func TestFaultsStepOnTheRunnersGrid(t *testing.T) {
	events, _ := simRun(t, `name: grid
run: {backend: sim, heights: 6, max_duration: 5m, sim: {calibration: CALIBRATION}}
validators:
  - {name: v, count: 4}
faults:
  - {action: signer-delay, target: v-1, at: {time: 1650ms}, duration: 1s, latency: 1ms}
  - {action: signer-delay, target: v-2, at: {height: 3}, duration: 1s, latency: 1ms}
`, exactCalibration)
	starts := map[string]time.Time{}
	for _, e := range events {
		if e.Kind == eventlog.KindFault && e.State == eventlog.FaultStart {
			starts[e.Validator] = e.Time
		}
	}
	if got, want := starts["v-1"].Sub(Epoch), 1700*time.Millisecond; got != want {
		t.Errorf("the fault at 1650ms started at %v, want the next step, %v", got, want)
	}
	committed := blocks(events)[2].Time.Sub(Epoch)
	got := starts["v-2"].Sub(Epoch)
	if got%faultcore.StepEvery != 0 || got < committed || got >= committed+faultcore.StepEvery {
		t.Errorf("the fault at height 3 started at %v; height 2 was committed at %v: want the first step after it", got, committed)
	}
}

// TestCutHoldsWhatIsInFlight: a partition holds the messages already on
// their way over a cut link, as the real fabric does (network/pipe.go
// keeps a chunk in its propagation delay until the heal). With 400 ms
// links and an exact calibration, v-3 proposes height 1 at 1 s, the others
// prevote at 1.4 s and their prevotes arrive at 1.8 s; the cut at 1.6 s
// falls while they fly. v-1's prevote reaches v-2 (same side) at 1.8 s,
// and no vote crosses the cut before the heal.
func TestCutHoldsWhatIsInFlight(t *testing.T) {
	events, _ := simRun(t, `name: cut
run: {backend: sim, heights: 3, max_duration: 5m, sim: {calibration: CALIBRATION}}
network: {latency: 400ms}
validators:
  - {name: v, count: 4}
faults:
  - {action: partition, at: {time: 1600ms}, duration: 10s, groups: [[v-1, v-2], [v-3, v-4]]}
`, exactCalibration)
	side := map[string]int{"v-1": 1, "v-2": 1, "v-3": 2, "v-4": 2}
	cut, healed := Epoch.Add(1600*time.Millisecond), Epoch.Add(11600*time.Millisecond)
	sameSide := false
	for _, e := range events {
		if e.Kind != eventlog.KindVote || e.Node == e.Validator || e.Time.Before(cut) || !e.Time.Before(healed) {
			continue
		}
		if side[e.Node] != side[e.Validator] {
			t.Errorf("%s received %s's %s (height %d) at %v, across the cut (%v to %v)", e.Node, e.Validator, e.Phase, e.Height, e.Time.Sub(Epoch), cut.Sub(Epoch), healed.Sub(Epoch))
		}
		if e.Node == "v-2" && e.Validator == "v-1" && e.Phase == "prevote" && e.Height == 1 {
			sameSide = true
		}
	}
	if !sameSide {
		t.Errorf("v-2 never received v-1's prevote of height 1 during the partition: a cut holds only what crosses it")
	}
	if b := blocks(events)[1]; b.Time.Before(healed) {
		t.Errorf("height 1 committed at %v, before the heal at %v: a side of 2 of 4 has no +2/3", b.Time.Sub(Epoch), healed.Sub(Epoch))
	}
}

// TestSameSeedSameEvents: one seed, one stream, byte for byte; another
// seed draws other delays.
func TestSameSeedSameEvents(t *testing.T) {
	const yaml = `name: det
run: {backend: sim, heights: 15, seed: SEED}
network: {latency: {dist: lognormal, p50: 40ms, p99: 120ms}}
validators:
  - {name: v, count: 5}
  - {name: hsm, signer: {type: simulated, profile: yubihsm2}}
faults:
  - {action: signer-delay, target: v-2, at: {height: 4}, duration: 5s, latency: {dist: uniform, min: 100ms, max: 900ms}}
`
	encode := func(seed string) []byte {
		events, _ := simRun(t, strings.Replace(yaml, "SEED", seed, 1), mustDefaultText(t))
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		for _, e := range events {
			if err := enc.Encode(e); err != nil {
				t.Fatal(err)
			}
		}
		return b.Bytes()
	}
	a, b, c := encode("3"), encode("3"), encode("4")
	if !bytes.Equal(a, b) {
		t.Error("two runs with seed 3 wrote different events")
	}
	if bytes.Equal(a, c) {
		t.Error("seeds 3 and 4 wrote the same events")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestFarBehindSigner: a signer so slow (10 s a signature, ~8 heights of
// the others) that each signature leaves its node behind beyond the
// heights the model keeps blocks for; it then fetches whole blocks (as
// blocksync would) and the run goes on. (A signer slower than one height
// but not by many catches up from its peers' commits without signing,
// as a real lagging node does, and never falls that far.)
func TestFarBehindSigner(t *testing.T) {
	old := keepHeights
	keepHeights = 4
	defer func() { keepHeights = old }()
	events, reason := simRun(t, `name: behind
run: {backend: sim, heights: 150, max_duration: 1h, sim: {calibration: CALIBRATION}}
validators:
  - {name: v, count: 10}
  - {name: slow, signer: {type: local, latency: 10s}}
`, mustDefaultText(t))
	if reason != eventlog.StopHeights {
		t.Fatalf("stopped: %s", reason)
	}
	var committed, lag int64
	for _, e := range events {
		switch {
		case e.Kind == eventlog.KindBlock:
			committed = max(committed, e.Height)
		case e.Kind == eventlog.KindSign && e.Validator == "slow":
			lag = max(lag, committed-e.Height)
		}
	}
	if lag <= keepHeights {
		t.Fatalf("slow was at most %d heights behind: not beyond the %d kept, so the test shows nothing", lag, keepHeights)
	}
}

// TestLaggingNodeFetchesCommittedBlock: a node that sees +2/3 precommits
// for a block whose proposal it never got (it was signing while the
// others moved on) sets up the block's part set and gets the parts from
// its peers (enterCommit's EventValidBlock), as a real node does, and
// is at the next height in time to propose. A 1 s signer among 10
// validators at default timeouts: no round ever changes (real runs of
// the crosscheck's slow-1s case: 0 in 20 heights), where the model used
// to leave the slow node in its commit step for good.
func TestLaggingNodeFetchesCommittedBlock(t *testing.T) {
	for _, seed := range []string{"1", "2", "3"} {
		events, reason := simRun(t, `name: lagging
run: {backend: sim, heights: 40, max_duration: 1h, seed: `+seed+`, sim: {calibration: CALIBRATION}}
validators:
  - {name: v, count: 9}
  - {name: slow, signer: {type: local, latency: 1s}}
`, mustDefaultText(t))
		if reason != eventlog.StopHeights {
			t.Fatalf("seed %s: stopped: %s", seed, reason)
		}
		reached := map[string]int64{}
		for _, e := range events {
			if e.Kind == eventlog.KindNewRound && e.Round > 0 {
				t.Errorf("seed %s: %s entered round %d at height %d", seed, e.Node, e.Round, e.Height)
			}
			if e.Kind == eventlog.KindNewRound {
				reached[e.Node] = max(reached[e.Node], e.Height)
			}
		}
		if reached["slow"] < 40 {
			t.Errorf("seed %s: slow's node reached height %d of 40", seed, reached["slow"])
		}
	}
}
