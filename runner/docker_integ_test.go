//go:build integ

package runner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/results"
)

// The docker backend end to end is a make integ test: its first step
// builds the node image, ~4 minutes from a cold build cache on 2 cores,
// which alone would spend most of make test's budget.

// dockerYAML: four validators as containers, one with a delayed signer,
// one paused for a while.
const dockerYAML = `
name: e2e-docker
chain:
  timeouts: {propose: 300ms, propose_delta: 100ms, prevote: 100ms, prevote_delta: 50ms,
             precommit: 100ms, precommit_delta: 50ms, commit: 100ms}
run: {backend: docker, heights: 10, max_duration: 4m}
validators:
  - name: v
    count: 3
  - name: slow
    signer: {latency: 250ms}
faults:
  - {action: node-pause, target: v-2, at: {height: 4}, duration: 2s}
expect:
  - {metric: heights_committed, min: 10}
  - {metric: double_signs, max: 0}
`

func TestIntegDockerBackendMatchesInProcess(t *testing.T) {
	needDocker(t)
	results1 := map[string]*results.Summary{}
	for _, backend := range []string{"docker", "inprocess"} {
		yaml := dockerYAML
		if backend == "inprocess" {
			// In-process nodes cannot be frozen: same scenario, no pause.
			yaml = strings.Replace(yaml, "backend: docker", "backend: inprocess", 1)
			yaml = yaml[:strings.Index(yaml, "faults:")] + yaml[strings.Index(yaml, "expect:"):]
		}
		dir := filepath.Join(t.TempDir(), "run-"+backend)
		showLogsOnFailure(t, dir)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		out, err := Run(ctx, parse(t, yaml), Options{OutDir: dir})
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", backend, err)
		}
		s := out.Summary
		if !s.OK || s.Backend != backend {
			t.Fatalf("%s: %s %+v", backend, results.ResultLine(s), s.Failed())
		}
		results1[backend] = s
		if backend == "docker" {
			if left := dockerObjects(t, dir); left != "" {
				t.Errorf("docker objects of the run remain:\n%s", left)
			}
		}
	}
	d, p := results1["docker"], results1["inprocess"]
	// Same shape: the same validators, signers and kinds of numbers.
	if len(d.Validators) != len(p.Validators) {
		t.Fatalf("validators: docker %d, inprocess %d", len(d.Validators), len(p.Validators))
	}
	for i := range d.Validators {
		dv, pv := d.Validators[i], p.Validators[i]
		if dv.Name != pv.Name || dv.Power != pv.Power {
			t.Errorf("validator %d: docker %s/%d, inprocess %s/%d", i, dv.Name, dv.Power, pv.Name, pv.Power)
		}
		if dv.SignLatencyMS.Precommit.Count == 0 {
			t.Errorf("docker: no precommit signatures recorded for %s", dv.Name)
		}
	}
	for _, s := range []*results.Summary{d, p} {
		var slow, most int
		for _, v := range s.Validators {
			if v.Name == "slow" {
				slow = v.MissedPrecommits
			} else {
				most = max(most, v.MissedPrecommits)
			}
		}
		if slow <= most && s.Backend == "inprocess" {
			t.Errorf("%s: slow missed %d, others up to %d", s.Backend, slow, most)
		}
	}
	if len(d.Faults) != 1 || d.Faults[0].EndMS == 0 {
		t.Errorf("docker: pause fault %+v", d.Faults)
	}
}
