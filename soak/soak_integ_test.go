//go:build integ

package soak

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/internal/nettest"
	"github.com/valnet/valnet/scenarios"
)

// TestIntegSoakInprocess soaks the baseline scenario on 7 in-process
// validators under the seed's random faults (3 minutes; make integ: 2;
// VALNET_SOAK_DURATION changes it, `make soak` runs 30 minutes through the
// CLI): every invariant must hold and every family the backend allows must
// have been injected. Its fault-free tail is 45 s, not the CLI's 90 s or
// more, so that a short soak still has a minute of faults: the resumption
// (2.5-3 s seen) must come within 25 s; the leak slopes, which want the
// long tail, are make soak's.
func TestIntegSoakInprocess(t *testing.T) {
	dur := 3 * time.Minute
	if s := os.Getenv("VALNET_SOAK_DURATION"); s != "" {
		var err error
		if dur, err = time.ParseDuration(s); err != nil {
			t.Fatalf("VALNET_SOAK_DURATION=%s: %v", s, err)
		}
	}
	src, err := scenarios.ReadSource("baseline")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Prepare(Config{Source: src, Backend: "inprocess", Seed: 1, Duration: dur, Validators: DefaultValidators,
		Quiet: 45 * time.Second, ResumeWithin: 25 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	nettest.ShowLogsOnFailure(t, filepath.Join(dir, RunDir, "nodes"), "node.log")
	ctx, cancel := context.WithTimeout(context.Background(), dur+5*time.Minute)
	defer cancel()
	rep, err := p.Run(ctx, Options{OutDir: dir, Command: "TestIntegSoakInprocess"})
	if rep != nil {
		var b strings.Builder
		_ = rep.WriteText(&b)
		t.Log("\n" + b.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || len(rep.Violations) > 0 || rep.StopReason != "max_duration" {
		t.Fatalf("soak failed (stop %s): %v", rep.StopReason, rep.Violations)
	}
	if rep.DoubleSigns != 0 || len(rep.Forks) != 0 || rep.HashesCompared < rep.Heights {
		t.Fatalf("double signs %d, forks %d, %d hashes compared for %d heights", rep.DoubleSigns, len(rep.Forks), rep.HashesCompared, rep.Heights)
	}
	if rep.Resume.Final == nil || rep.Resume.Final.AllNodesS == nil {
		t.Fatalf("the resumption after the last fault was not seen: %+v", rep.Resume.Final)
	}
	fams, _ := genConfig(p.Config, p.Plan).Available()
	for _, f := range fams {
		if c := rep.Faults[f]; c.Injected == 0 {
			t.Errorf("family %s: scheduled %d, injected none (%v)", f, c.Scheduled, c.NotApplied)
		}
	}
	for _, f := range []string{JSONFile, TextFile, ScheduleFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}
