//go:build integ

package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/internal/testbin"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
)

func TestIntegOwnAppKVStore(t *testing.T) {
	abci := testbin.ABCICLI(t)
	for _, tc := range []struct{ backend, transport string }{
		{"inprocess", "socket"},
		{"process", "socket"},
		{"inprocess", "grpc"},
	} {
		t.Run(tc.backend+"-"+tc.transport, func(t *testing.T) {
			opts := Options{}
			if tc.backend == "process" {
				opts.NodeCommand = []string{valnetBinary(t), "node"}
			}
			dir := filepath.Join(t.TempDir(), "run")
			opts.OutDir = dir
			showLogsOnFailure(t, dir)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			wctx, stopWatch := context.WithCancel(ctx)
			w := watchApps(wctx, t, dir)
			out, err := Run(ctx, parse(t, fmt.Sprintf(appYAML, tc.backend, abci, tc.transport, tc.transport)), opts)
			stopWatch()
			<-w.done
			if err != nil {
				t.Fatal(err)
			}
			s := out.Summary
			if !s.OK || s.Heights.Committed < 25 {
				t.Fatalf("%s: %+v", results.ResultLine(s), s.Failed())
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.maxLive != 4 {
				t.Errorf("at most %d app processes alive at once, want 4 (one per validator): %v", w.maxLive, w.pids)
			}
			for _, v := range []string{"v-1", "v-3", "v-4"} {
				if len(w.pids[v]) != 1 {
					t.Errorf("%s: app pids %v, want one process for the whole run", v, w.pids[v])
				}
			}
			if len(w.pids["v-2"]) != 2 {
				t.Errorf("v-2 was restarted: app pids %v, want two (the app restarted with the node)", w.pids["v-2"])
			}
			if left := processesUnder(t, dir); len(left) > 0 {
				t.Errorf("processes left after the run: %v", left)
			}
			if left, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("valnet-app-%d-*", os.Getpid()))); len(left) > 0 {
				t.Errorf("app socket directories left: %v", left)
			}
			// The restarted node connected to its restarted app: CometBFT's
			// ABCI handshake (Info, then the replay of blocks the app
			// lacks) completed once per incarnation. (Whether v-2 also
			// signs again before the run's last height depends on how fast
			// block sync hands over on this host, so it is not asserted.)
			log, _ := os.ReadFile(filepath.Join(dir, "nodes", "v-2", "app.log"))
			starts := strings.Split(string(log), "--- valnet ")
			if len(starts) != 3 {
				t.Fatalf("v-2 app.log records %d starts, want 2", len(starts)-1)
			}
			nodeLog, _ := os.ReadFile(filepath.Join(dir, "nodes", "v-2", "node.log"))
			if n := strings.Count(string(nodeLog), "Completed ABCI Handshake"); n != 2 {
				t.Errorf("v-2's node.log has %d completed ABCI handshakes, want 2 (start, restart)", n)
			}
		})
	}
}

// TestIntegOwnAppCrash kills v-3's app in the middle of a run. CometBFT ends a
// node whose app connection dies: the process backend's node exits on its
// own (or hangs, if the app died inside a call: then the app's exit is
// what valnet reports), the inprocess backend's node is stopped by valnet
// (CometBFT would SIGTERM valnet itself). Either way a node_error says so, the other three
// validators go on committing, and nothing is left after the run.
func TestIntegOwnAppCrash(t *testing.T) {
	abci := testbin.ABCICLI(t)
	for _, tc := range []struct {
		backend string
		want    []string // one of
	}{
		{"inprocess", []string{"ABCI connection to the app terminated"}},
		// The node exits, or hangs in the call its app died in (stop then
		// kills it): the app's exit or the node's, whichever came first.
		{"process", []string{"app process exited on its own", "node process exited on its own"}},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			opts := Options{}
			if tc.backend == "process" {
				opts.NodeCommand = []string{valnetBinary(t), "node"}
			}
			dir := filepath.Join(t.TempDir(), "run")
			opts.OutDir = dir
			showLogsOnFailure(t, dir)
			yaml := strings.Replace(fmt.Sprintf(appYAML, tc.backend, abci, "socket", "socket"),
				"faults:\n  - {action: node-restart, target: v-2, at: {height: 3}}\n", "", 1)
			yaml = strings.Replace(strings.Replace(yaml, "heights: 25", "heights: 12", 1), "min: 25", "min: 12", 1)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			// Once height 3 is in (the live status line says so), kill
			// v-3's app.
			atHeight3 := make(chan struct{})
			opts.Status, opts.Terminal = &heightWatch{at: 3, reached: func() { close(atHeight3) }}, true
			killed := make(chan string, 1)
			go func() {
				defer close(killed)
				select {
				case <-atHeight3:
				case <-ctx.Done():
					return
				}
				untilCtx(ctx, 50*time.Millisecond, func() bool {
					for _, p := range processesUnder(t, filepath.Join(dir, "nodes", "v-3", "app-home")) {
						pid, _, _ := strings.Cut(p, ": ")
						if out, err := exec.Command("kill", "-9", pid).CombinedOutput(); err != nil {
							killed <- fmt.Sprintf("kill %s: %v %s", pid, err, out)
						} else {
							killed <- pid
						}
						return true
					}
					return false
				})
			}()
			out, err := Run(ctx, parse(t, yaml), opts)
			if err != nil {
				t.Fatal(err)
			}
			pid := <-killed
			if pid == "" {
				t.Fatal("v-3's app was never found to kill")
			}
			if s := out.Summary; s.Heights.Committed < 12 {
				t.Errorf("%s: the other three validators should go on", results.ResultLine(s))
			}
			events, err := eventlog.ReadFile(filepath.Join(dir, EventsFile))
			if err != nil {
				t.Fatal(err)
			}
			var errs []string
			for _, e := range events {
				if e.Kind == eventlog.KindNodeError {
					errs = append(errs, e.Node+": "+e.Error)
				}
			}
			if len(errs) != 1 || !slices.ContainsFunc(tc.want, func(w string) bool { return strings.HasPrefix(errs[0], "v-3: "+w) }) {
				t.Errorf("node errors %q, want one for v-3: %s (app %s killed)", errs, tc.want, pid)
			}
			if left := processesUnder(t, dir); len(left) > 0 {
				t.Errorf("processes left after the run: %v", left)
			}
		})
	}
}
