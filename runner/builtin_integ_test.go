//go:build integ

package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/internal/nettest"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/scenarios"
)

// simCannot are the built-ins the sim MODEL refuses before anything
// starts, with what its refusal must name: a new refusal fails the test.
var simCannot = map[string]string{
	"hsm-vs-local": "PKCS#11", // a real token signs; the sim has no token to time
}

// TestIntegBuiltinScenarios runs every built-in scenario at full size and
// requires its own expectations to hold and no double signing. Each also
// runs on the sim MODEL (--backend sim), whose every expectation must
// give the same verdict as the real run's (issue 13: the sim agrees with
// real runs where both can run). VALNET_INTEG_BUILTINS selects some of
// them (make integ runs CI's sample; make builtins runs them all).
func TestIntegBuiltinScenarios(t *testing.T) {
	t.Setenv("VALNET_PASSPHRASE", "integ-passphrase") // gnokms-gnokey's key file
	var names []string
	for _, b := range scenarios.Builtins() {
		names = append(names, b.Name)
	}
	for _, name := range nettest.Selected(t, "VALNET_INTEG_BUILTINS", names) {
		t.Run(name, func(t *testing.T) {
			plan, err := scenarios.Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			// The process backend runs `valnet node`; the test binary is
			// not valnet.
			opts := Options{NodeCommand: []string{valnetBinary(t), "node"}}
			var out *Outcome
			if plan.Run.Backend == scenarios.BackendSim {
				dir := filepath.Join(t.TempDir(), "run")
				ctx, cancel := context.WithTimeout(context.Background(), plan.Run.MaxDuration+time.Minute)
				defer cancel()
				opts.OutDir = dir
				var err error
				if out, err = Run(ctx, plan, opts); err != nil {
					t.Fatal(err)
				}
			} else {
				// A real run is judged on a host that kept up: an
				// overloaded run (something else had the host) runs once
				// more, and overloaded twice fails with the figures.
				out = runJudged(t, plan, opts)
			}
			s := out.Summary
			t.Logf("%s: %s; heights %d, round changes %d, block interval p50 %.0f ms; %s",
				name, results.ResultLine(s), s.Heights.Committed, s.Rounds.HeightsWithRoundChange, s.BlockIntervalMS.P50, hostLine(s.Host))
			if !s.OK {
				t.Errorf("%s failed: %s %+v", name, results.ResultLine(s), s.Failed())
			}
			if s.DoubleSigns != 0 {
				t.Errorf("%s: %d double signs", name, s.DoubleSigns)
			}
			if s.Model == nil {
				sameVerdictsOnSim(t, name, s)
			}
			// Calibration of the host measure: every built-in fits this
			// 2-core machine (runJudged has already failed a built-in
			// overloaded twice; a first overloaded run is in the log with
			// its figures). A MODEL run (the sim) has no host to measure:
			// its nodes run in virtual time.
			if s.Model != nil {
				if s.Host != nil {
					t.Errorf("%s: a model run with a host measure %+v", name, s.Host)
				}
			} else if s.Host == nil || s.Host.Overloaded {
				t.Errorf("%s: host %+v, want measured and not overloaded", name, s.Host)
			}
		})
	}
}

// sameVerdictsOnSim runs built-in name on the sim backend and compares
// each expectation's verdict with the real run's summary.
func sameVerdictsOnSim(t *testing.T, name string, real *results.Summary) {
	t.Helper()
	plan, err := scenarios.ResolveWith(name, scenarios.Overrides{Backend: scenarios.BackendSim})
	if err != nil {
		t.Fatalf("%s --backend sim: %v", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := Run(ctx, plan, Options{OutDir: filepath.Join(t.TempDir(), "sim")})
	if want, cannot := simCannot[name]; cannot {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s --backend sim: err %v, want the sim to refuse naming %q", name, err, want)
		}
		t.Logf("%s on sim: refused as it should: %v", name, err)
		return
	}
	if err != nil {
		t.Fatalf("%s --backend sim: %v", name, err)
	}
	sim := out.Summary
	t.Logf("%s on sim (MODEL): %s; heights %d, round changes %d, block interval p50 %.0f ms",
		name, results.ResultLine(sim), sim.Heights.Committed, sim.Rounds.HeightsWithRoundChange, sim.BlockIntervalMS.P50)
	if len(sim.Expectations) != len(real.Expectations) {
		t.Fatalf("%s: %d expectations on sim, %d real", name, len(sim.Expectations), len(real.Expectations))
	}
	for i, r := range real.Expectations {
		m := sim.Expectations[i]
		if m.OK != r.OK {
			t.Errorf("%s: expectation %d (%s) real ok=%v value %g, sim ok=%v value %g %s",
				name, i, r.Metric, r.OK, r.Value, m.OK, m.Value, m.Error)
		}
	}
	if sim.OK != real.OK {
		t.Errorf("%s: verdict real %v, sim %v", name, real.OK, sim.OK)
	}
}

// TestIntegHostOverloaded: 50 validators in a full mesh saturate 2 cores
// (the same 50 on sparse-50's topology do not), and the summary says so:
// the other side of the calibration above.
func TestIntegHostOverloaded(t *testing.T) {
	if runtime.NumCPU() > 4 {
		t.Skipf("%d cores: 50 validators may not saturate them", runtime.NumCPU())
	}
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := Run(ctx, parse(t, `
name: mesh-50
run: {heights: 3, max_duration: 3m}
validators:
  - {name: v, count: 50}
`), Options{OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if h := out.Summary.Host; h == nil || !h.Overloaded {
		t.Fatalf("50 validators in a mesh on %d cores: host %+v, want overloaded", runtime.NumCPU(), h)
	}
	t.Logf("%s", hostLine(out.Summary.Host))
}

// hostLine is the host monitor's figures for a test log (the calibration's
// record: docs/results.md's host table).
func hostLine(h *results.HostSummary) string {
	if h == nil {
		return "host: not measured"
	}
	return fmt.Sprintf("host: %d of %d seconds saturated, %d stalled, busy p95 %.0f %%, sched lag p99 %.0f ms, tick lag max %.0f ms, overloaded %v %s",
		h.SaturatedSeconds, h.Samples, h.StalledSeconds, 100*h.CPUBusyP95, h.SchedLagP99MS, h.TickLagMaxMS, h.Overloaded, h.OverloadedWhy)
}
