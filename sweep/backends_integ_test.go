//go:build integ

package sweep

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/valnet/valnet/internal/testbin"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// TestIntegSweepAndThresholdOnARealBackend runs the real valnet sweep and
// valnet threshold commands on the process backend (the inprocess one is
// in cmd/valnet's tests): they take a backend like valnet run and drive
// the same runner, so each run directory is a real run on that backend.
// Docker is not repeated here: the commands hand the backend to
// runner.Run untouched, and the runner's integ tests run docker (many
// runs back to back in TestInterruptInteg, one against in-process in
// TestIntegDockerBackendMatchesInProcess).
func TestIntegSweepAndThresholdOnARealBackend(t *testing.T) {
	bin := testbin.Valnet(t)
	for _, backend := range []string{"process"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			valnet := func(args ...string) {
				t.Helper()
				cmd := exec.Command(bin, args...)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("valnet %v: %v\n%s", args, err, out)
				}
			}
			sw := filepath.Join(dir, "sweep")
			valnet("sweep", "quickstart", "--set", "validators[slow].signer.latency=0,300ms", "--set", "run.heights=4",
				"--backend", backend, "--out", sw)
			f := readJSON(t, sw)
			if f.Backend != backend || len(f.Points) != 2 {
				t.Fatalf("sweep.json: backend %q, %d points", f.Backend, len(f.Points))
			}
			for i, p := range f.Points {
				if len(p.Runs) != 1 || p.Runs[0].StopReason != "heights" || p.Runs[0].Metrics["heights_committed"] < 4 {
					t.Errorf("point %d: %+v", i, p.Runs)
				}
			}

			th := filepath.Join(dir, "threshold")
			valnet("threshold", "quickstart", "--vary", "validators[slow].signer.latency", "--range", "0..400ms",
				"--resolution", "200ms", "--target", "heights_committed >= 1", "--backend", backend, "--quiet", "--out", th)
			r, err := ReadThreshold(th)
			if err != nil {
				t.Fatal(err)
			}
			if r.Backend != backend || r.Verdict != "holds-everywhere" || len(r.Probes) != 2 {
				t.Errorf("threshold.json: backend %q verdict %q, %d probes", r.Backend, r.Verdict, len(r.Probes))
			}
		})
	}
}
