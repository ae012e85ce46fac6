//go:build integ

package runner

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
)

// TestIntegSignerLink: a signer 40 ms away (signer.link, via tcp) pays the
// round trip on every signature, which the summary shows as transport,
// not as the signer's own time; isolating its link (target far.signer)
// cuts its votes while its node runs on, and it signs again after.
func TestIntegSignerLink(t *testing.T) {
	if testing.Short() {
		t.Skip("a real network")
	}
	dir := filepath.Join(t.TempDir(), "run")
	showLogsOnFailure(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, err := Run(ctx, parse(t, `
name: signer-link
chain:
  timeouts: {propose: 1s, prevote: 500ms, precommit: 500ms, commit: 500ms}
run: {heights: 12, max_duration: 3m}
validators:
  - {name: v, count: 3}
  - name: far
    signer: {via: tcp, link: {latency: 40ms}}
faults:
  - {action: isolate, target: far.signer, at: {height: 4}, duration: 4s}
`), Options{OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Summary
	if s.StopReason != eventlog.StopHeights {
		t.Fatalf("stopped: %s (%s)", s.StopReason, results.ResultLine(s))
	}
	var far *results.ValidatorSummary
	for i := range s.Validators {
		if s.Validators[i].Name == "far" {
			far = &s.Validators[i]
		}
	}
	if far == nil || far.TransportOverheadMS == nil || far.SignerLatencyMS == nil {
		t.Fatalf("far: %+v, want a remote signer's two sides", far)
	}
	if p50 := far.TransportOverheadMS.P50; p50 < 75 || p50 > 1000 {
		t.Errorf("far's transport p50 %.1f ms, want the 80 ms round trip", p50)
	}
	if p50 := far.SignerLatencyMS.All.P50; p50 > 40 {
		t.Errorf("far's signer-side p50 %.1f ms: the link counted as the signer's time", p50)
	}
	if far.MissedPrecommits < 1 {
		t.Errorf("far missed %d precommits while its signer link was cut for 4 s", far.MissedPrecommits)
	}
	if far.MissedPrecommits >= far.PrecommitsCounted {
		t.Errorf("far missed %d of %d: it never signed again after the heal", far.MissedPrecommits, far.PrecommitsCounted)
	}
}
