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
		`valnet_missed_precommits_total{validator="`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
	// Every committed height has precommits from 3 of the 4 validators,
	// so at least 3 have a precommit latency. Which 3 is the host's: on
	// a loaded host slow once started after the others had committed,
	// stayed in blocksync for the whole 3-height run and signed nothing.
	signed := 0
	for _, v := range []string{"v-1", "v-2", "v-3", "slow"} {
		if strings.Contains(body, `valnet_sign_latency_seconds_bucket{phase="precommit",side="node",validator="`+v+`"`) {
			signed++
		}
	}
	if signed < 3 {
		t.Errorf("precommit sign latency for %d validators, want at least 3:\n%s", signed, body)
	}
	// Served no more after the run.
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Error("metrics still served after the run")
	}
}
