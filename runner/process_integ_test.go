//go:build integ

package runner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
)

func TestIntegProcessBackendWithNodeAndNetworkFaults(t *testing.T) {
	bin := valnetBinary(t)
	dir := filepath.Join(t.TempDir(), "run")
	showLogsOnFailure(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, err := Run(ctx, parse(t, processYAML), Options{OutDir: dir, NodeCommand: []string{bin, "node"}})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Summary
	if !s.OK || s.DoubleSigns != 0 || s.Backend != "process" {
		t.Fatalf("%s (backend %s): %+v", results.ResultLine(s), s.Backend, s.Failed())
	}
	byName := map[string]results.ValidatorSummary{}
	for _, v := range s.Validators {
		byName[v.Name] = v
	}
	if v := byName["v-2"]; v.MissedPrecommits == 0 || v.MissedByCause.NodeDown == 0 {
		t.Errorf("killed v-2: missed %d, by cause %+v: want node-down misses", v.MissedPrecommits, v.MissedByCause)
	}
	if v := byName["kms"]; v.SignLatencyMS.Precommit.Count == 0 || !strings.Contains(v.Signer, "via tcp") {
		t.Errorf("kms: %q precommit signatures %d", v.Signer, v.SignLatencyMS.Precommit.Count)
	}
	var ended int
	for _, f := range s.Faults {
		if f.EndMS > 0 {
			ended++
		}
	}
	if len(s.Faults) != 3 || ended != 3 {
		t.Errorf("faults %+v", s.Faults)
	}
	// The killed validator came back: it signed again after its restart.
	events, err := eventlog.ReadFile(filepath.Join(dir, EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	var back time.Time
	signedAfter, markedDown := false, false
	for _, e := range events {
		if e.Kind == eventlog.KindMissed && e.Validator == "v-2" && e.Cause == results.CauseNodeDown {
			markedDown = true
		}
		if e.Kind == eventlog.KindFault && e.Action == "node-kill" && e.State == eventlog.FaultEnd {
			back = e.Time
		}
		if !back.IsZero() && e.Kind == eventlog.KindSign && e.Validator == "v-2" && e.Error == "" && e.Time.After(back) {
			signedAfter = true
		}
	}
	if !signedAfter {
		t.Error("v-2 never signed again after its restart")
	}
	if !markedDown {
		t.Error("no missed event marks v-2's misses node-down in events.jsonl")
	}
}
