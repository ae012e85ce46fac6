//go:build integ

package runner

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
)

// TestIntegThresholdSigner: a 2-of-3 threshold signer (the protocol MODEL)
// signs every vote through its cosigners' rounds over the fabric; with
// cosigner 3 down it still signs (1 and 2 make the threshold); with
// cosigner 2 isolated as well, the leader's calls to it time out, no
// quorum forms and the validator misses votes; after both come back it
// signs again. Its blocks carry its signatures (CometBFT verifies each),
// and every cosign event says who answered.
func TestIntegThresholdSigner(t *testing.T) {
	if testing.Short() {
		t.Skip("a real network")
	}
	dir := filepath.Join(t.TempDir(), "run")
	showLogsOnFailure(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, err := Run(ctx, parse(t, `
name: threshold
chain:
  timeouts: {propose: 1s, prevote: 500ms, precommit: 500ms, commit: 500ms}
run: {heights: 16, max_duration: 3m}
validators:
  - {name: v, count: 3}
  - name: th
    signer: {type: threshold, cosigners: 3, threshold: 2, timeout: 300ms, links: {latency: 5ms}}
faults:
  - {action: cosigner-down, target: th.cosigner-3, at: {height: 3}}
  - {action: isolate, target: th.cosigner-2, at: {height: 7}, duration: 4s}
`), Options{OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Summary
	if s.StopReason != eventlog.StopHeights {
		t.Fatalf("stopped: %s (%s)", s.StopReason, results.ResultLine(s))
	}
	var th *results.ValidatorSummary
	for i := range s.Validators {
		if s.Validators[i].Name == "th" {
			th = &s.Validators[i]
		}
	}
	if th == nil || !strings.Contains(th.Signer, "MODEL") {
		t.Fatalf("th: %+v, want a signer labelled a MODEL", th)
	}
	if th.MissedPrecommits < 1 || th.MissedPrecommits >= th.PrecommitsCounted-3 {
		t.Errorf("th missed %d of %d precommits: want the isolation's heights, and signing again after", th.MissedPrecommits, th.PrecommitsCounted)
	}
	sum := s.Threshold["th"]
	if sum == nil || sum.Cosigners != 3 || sum.Threshold != 2 || sum.NoQuorum < 1 || sum.QuorumMS == nil {
		t.Fatalf("threshold summary: %+v", sum)
	}
	if p50 := sum.QuorumMS.P50; p50 < 20 || p50 > 300 {
		t.Errorf("quorum p50 %.1f ms, want two round trips of 10 ms and more", p50)
	}
	events, err := eventlog.ReadFile(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var down, timedOut, signedAfter bool
	var heal time.Time
	for _, e := range events {
		if e.Kind == eventlog.KindFault && e.Validator == "th.cosigner-2" && e.State == eventlog.FaultEnd {
			heal = e.Time
		}
	}
	for _, e := range events {
		if e.Kind != eventlog.KindCosign || e.Cosign == nil {
			continue
		}
		c := e.Cosign
		if e.Error == "" && slices.Contains(c.Answered, 3) && e.Height > 4 {
			t.Errorf("h%d %s: cosigner 3 answered while down", e.Height, e.Phase)
		}
		for _, f := range c.Failed {
			switch {
			case f.Cosigner == 3:
				down = true
			case f.Cosigner == 2 && strings.Contains(f.Reason, "no answer within the timeout"):
				timedOut = true
			}
		}
		if !heal.IsZero() && e.Time.After(heal.Add(time.Second)) && e.Error == "" && slices.Equal(c.Answered, []int{1, 2}) {
			signedAfter = true
		}
	}
	if !down || !timedOut || !signedAfter {
		t.Errorf("cosign events: cosigner 3 failing while down %v, cosigner 2 timing out while isolated %v, 1 and 2 signing after the heal %v", down, timedOut, signedAfter)
	}
}
