package runner

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cometbft/cometbft/crypto"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
)

// e2eYAML: four validators under short timeouts, one signer delayed well
// beyond the prevote/precommit timeouts.
const e2eYAML = `
name: e2e-slow
chain:
  timeouts: {propose: 300ms, propose_delta: 100ms, prevote: 100ms, prevote_delta: 50ms,
             precommit: 100ms, precommit_delta: 50ms, commit: 100ms}
run:
  heights: 10
  max_duration: 3m
validators:
  - name: v
    count: 3
  - name: slow
    signer:
      latency: 250ms
expect:
  - {metric: heights_committed, min: 10}
`

func parse(t *testing.T, yaml string) *scenarios.Plan {
	t.Helper()
	plan, err := scenarios.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// showLogsOnFailure prints the tail of every node log if the test fails;
// node logs stay in files otherwise.
func showLogsOnFailure(t *testing.T, dir string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		logs, _ := filepath.Glob(filepath.Join(dir, NodesDir, "*", "node.log"))
		for _, l := range logs {
			data, _ := os.ReadFile(l)
			if len(data) > 4000 {
				data = data[len(data)-4000:]
			}
			t.Logf("--- %s (tail)\n%s", l, data)
		}
	})
}

func TestRunSlowSignerMissesPrecommits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	showLogsOnFailure(t, dir)
	plan := parse(t, e2eYAML)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := Run(ctx, plan, Options{OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Summary
	if s.StopReason != eventlog.StopHeights || !s.OK {
		t.Fatalf("stop %q ok %v: %+v", s.StopReason, s.OK, s.Expectations)
	}
	if s.Heights.Last <= 10 || s.Heights.Committed < 10 {
		t.Fatalf("heights %+v, want the target 10 and the block after it", s.Heights)
	}
	// What load cannot change: the injected delay is never shortened, and
	// every missed precommit is counted once, with a cause. Which
	// validators missed how many depends on how fast the host ran the
	// others: TestIntegSlowSignerTiming checks that on a host that kept up.
	var slow *results.ValidatorSummary
	for i, v := range s.Validators {
		if v.Name == "slow" {
			slow = &s.Validators[i]
		}
		if v.MissedPrecommits > v.PrecommitsCounted || causesTotal(v.MissedByCause) != v.MissedPrecommits {
			t.Errorf("%s: missed %d of %d precommits, by cause %+v: do not add up", v.Name, v.MissedPrecommits, v.PrecommitsCounted, v.MissedByCause)
		}
	}
	if slow == nil {
		t.Fatal("no validator slow in the summary")
	}
	// slow always precommits, but it may never prevote: the other three
	// hold +2/3 of the power, so slow is often a height behind, and a
	// node that receives +2/3 precommits for its height goes straight to
	// enterPrecommit (CometBFT v1.0.1 internal/consensus/state.go
	// 2481–2485). Three runs here: slow prevoted at heights {1}, {1, 2}
	// and {1, 2, 3, 4, 8}, and precommitted at every height. On a loaded
	// host slow once started behind and signed no prevote at all. When
	// it prevotes, the prevote's latency must be the injected one too.
	for phase, st := range map[string]results.LatencyStats{
		"prevote": slow.SignLatencyMS.Prevote, "precommit": slow.SignLatencyMS.Precommit,
	} {
		if st.Count == 0 && phase == "prevote" {
			t.Logf("slow signed no prevote: it was behind at every height")
			continue
		}
		if st.Count == 0 || st.P50 < 250 {
			t.Errorf("slow %s latency %+v: want p50 >= the injected 250 ms", phase, st)
		}
	}
	if inj := slow.InjectedLatencyMS; inj.Count == 0 || inj.P50 < 250 {
		t.Errorf("slow's injected latency %+v, want p50 >= 250 ms", inj)
	}
	if s.DoubleSigns != 0 {
		t.Errorf("double signs: %d", s.DoubleSigns)
	}

	// Every file of the contract is there, and network.json names every node.
	for _, f := range []string{EventsFile, SummaryFile, HeightsFile, NetworkFile, ScenarioFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	var netInfo NetworkInfo
	data, err := os.ReadFile(filepath.Join(dir, NetworkFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &netInfo); err != nil {
		t.Fatal(err)
	}
	if len(netInfo.Validators) != 4 {
		t.Fatalf("network.json: %+v", netInfo)
	}
	// Nothing is left listening once the run is over.
	for _, v := range netInfo.Validators {
		for _, addr := range []string{strings.TrimPrefix(v.RPC, "http://"), v.P2P[strings.Index(v.P2P, "@")+1:]} {
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				t.Errorf("%s: %s still accepts connections after the run", v.Name, addr)
			}
		}
		// A standard CometBFT home is left for inspection.
		for _, f := range []string{"config/config.toml", "config/genesis.json", "config/node_key.json",
			"config/priv_validator_key.json", "data/priv_validator_state.json", "node.log"} {
			if _, err := os.Stat(filepath.Join(v.Home, f)); err != nil {
				t.Error(err)
			}
		}
	}

	// The summary is rebuilt from events.jsonl alone, identically.
	rebuilt, err := Report(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rebuilt, s) {
		t.Error("summary rebuilt from events.jsonl differs from the run's")
	}

	// The same directory is never reused for another run.
	if _, err := Run(ctx, plan, Options{OutDir: dir}); err == nil || !strings.Contains(err.Error(), "already holds a run") {
		t.Errorf("second run into %s: err = %v", dir, err)
	}
}

func TestRunInterruptedStopsCleanly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	showLogsOnFailure(t, dir)
	plan := parse(t, strings.Replace(e2eYAML, "heights: 10", "heights: 1000", 1))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupt once the network has made progress: the live status line,
	// written at every poll on a terminal, says when height 2 is in.
	progress := &heightWatch{at: 2, reached: cancel}
	out, err := Run(ctx, plan, Options{OutDir: dir, Status: progress, Terminal: true})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Summary
	if s.StopReason != eventlog.StopInterrupted || s.OK {
		t.Fatalf("stop %q ok %v, want interrupted and not ok", s.StopReason, s.OK)
	}
	if s.Heights.Committed < 2 {
		t.Errorf("results so far lost: %+v", s.Heights)
	}
	if _, err := os.Stat(filepath.Join(dir, SummaryFile)); err != nil {
		t.Error(err)
	}
}

// causesTotal is the sum of a validator's missed precommits over every
// cause.
func causesTotal(m results.MissedByCause) int {
	total := 0
	v := reflect.ValueOf(m)
	for i := range v.NumField() {
		total += int(v.Field(i).Int())
	}
	return total
}

// heightWatch is a run's status writer that calls reached once the live
// line shows height at or above at.
type heightWatch struct {
	at      int64
	reached func()
	once    sync.Once
}

var statusHeight = regexp.MustCompile(`height (\d+)/`)

func (w *heightWatch) Write(p []byte) (int, error) {
	for _, m := range statusHeight.FindAllSubmatch(p, -1) {
		if h, _ := strconv.ParseInt(string(m[1]), 10, 64); h >= w.at {
			w.once.Do(w.reached)
		}
	}
	return len(p), nil
}

func TestRunMaxDurationEndsTheRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	showLogsOnFailure(t, dir)
	yaml := strings.Replace(e2eYAML, "heights: 10", "heights: 100000", 1)
	yaml = strings.Replace(yaml, "max_duration: 3m", "max_duration: 4s", 1)
	out, err := Run(context.Background(), parse(t, yaml), Options{OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if s := out.Summary; s.StopReason != eventlog.StopMaxDuration || s.OK {
		t.Fatalf("stop %q ok %v, want max_duration and not ok", s.StopReason, s.OK)
	}
}

func TestKeysAreDeterministic(t *testing.T) {
	key := func(seed int64, name string) crypto.PrivKey {
		k, err := validatorKey(seed, name, "")
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	a, b, c := key(1, "v1"), key(1, "v1"), key(2, "v1")
	if a.PubKey().Address().String() != b.PubKey().Address().String() {
		t.Fatal("same seed and name gave different keys")
	}
	if a.PubKey().Address().String() == c.PubKey().Address().String() || a.PubKey().Address().String() == key(1, "v2").PubKey().Address().String() {
		t.Fatal("different seed or name gave the same key")
	}
	if nodeKey(1, "v1").ID() != nodeKey(1, "v1").ID() {
		t.Fatal("node keys differ")
	}
}

func TestKeepLeavesTheNetworkUpUntilCancelled(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	showLogsOnFailure(t, dir)
	yaml := strings.Replace(e2eYAML, "heights: 10", "heights: 2", 1)
	plan := parse(t, strings.Replace(yaml, "min: 10", "min: 2", 1))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		kept    NetworkInfo
		summary *results.Summary
	)
	out, err := Run(ctx, plan, Options{OutDir: dir, Keep: true, OnKeep: func(o *Outcome, n NetworkInfo) {
		kept, summary = n, o.Summary
		// The run is summarised, and the network still answers RPC and
		// keeps committing.
		rpc := strings.TrimPrefix(n.Validators[0].RPC, "http://")
		if c, err := net.DialTimeout("tcp", rpc, 5*time.Second); err != nil {
			t.Errorf("kept network's RPC %s: %v", rpc, err)
		} else {
			c.Close()
		}
		cancel()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if summary == nil || !summary.OK || out.Summary != summary {
		t.Fatalf("OnKeep got summary %+v", summary)
	}
	if len(kept.Validators) != 4 {
		t.Fatalf("OnKeep got %+v", kept)
	}
	// After cancel, everything is stopped.
	for _, v := range kept.Validators {
		if c, err := net.DialTimeout("tcp", strings.TrimPrefix(v.RPC, "http://"), time.Second); err == nil {
			c.Close()
			t.Errorf("%s still listening after the kept network was stopped", v.Name)
		}
	}
}
