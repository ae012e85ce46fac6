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
	signedAfter := false
	for _, e := range events {
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
	// missed.csv, rebuilt from the stream alone, says what the summary
	// says: as many node-down misses per validator, each named by the
	// fault that had its node down (v-2's kill, v-1's stop).
	faultOf := map[string]string{"v-2": "node-kill", "v-1": "node-stop"}
	downRows := map[string]int{}
	for _, m := range results.MissedPrecommits(events) {
		if m.Cause != results.CauseNodeDown {
			continue
		}
		downRows[m.Validator]++
		if f, ok := faultOf[m.Validator]; !ok || !strings.Contains(m.Detail, f+" fault active") {
			t.Errorf("missed.csv row %+v: want only v-2 (node-kill) and v-1 (node-stop) down", m)
		}
	}
	for _, v := range s.Validators {
		if downRows[v.Name] != v.MissedByCause.NodeDown {
			t.Errorf("%s: missed.csv from events.jsonl has %d node-down rows, the summary %d", v.Name, downRows[v.Name], v.MissedByCause.NodeDown)
		}
	}
}
