package runner

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLiveMetricsServeTheRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	showLogsOnFailure(t, dir)
	yaml := strings.Replace(e2eYAML, "heights: 10", "heights: 3", 1)
	plan := parse(t, strings.Replace(yaml, "min: 10", "min: 3", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var addr, body string
	_, err := Run(ctx, plan, Options{OutDir: dir, Metrics: "127.0.0.1:0", Keep: true,
		OnMetrics: func(a string) { addr = a },
		OnKeep: func(*Outcome, NetworkInfo) {
			defer cancel()
			resp, err := http.Get("http://" + addr + "/metrics")
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			body = string(b)
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\nvalnet_height ",
		`valnet_sign_latency_seconds_bucket{phase="precommit",side="node",validator="slow"`,
		`valnet_missed_precommits_total{validator="slow"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
	// Served no more after the run.
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Error("metrics still served after the run")
	}
}
