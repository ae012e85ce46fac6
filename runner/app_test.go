package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// appYAML: four validators, each node with its own CometBFT abci-cli
// kvstore process; v-2 is restarted at height 3 (its app with it).
const appYAML = `
name: own-app
chain:
  timeouts: {propose: 300ms, propose_delta: 100ms, prevote: 100ms, prevote_delta: 50ms,
             precommit: 100ms, precommit_delta: 50ms, commit: 100ms}
run: {backend: %s, heights: 25, max_duration: 2m}
app:
  command: [%s, kvstore, --address, '{addr}', --abci, %s, --persist, '{home}', --log_level, info]
  transport: %s
validators:
  - name: v
    count: 4
faults:
  - {action: node-restart, target: v-2, at: {height: 3}}
expect:
  - {metric: heights_committed, min: 25}
  - {metric: double_signs, max: 0}
`

// appWatch polls /proc for the app processes of a run directory: every
// pid seen per validator, and the most that were alive at once.
type appWatch struct {
	mu      sync.Mutex
	pids    map[string]map[string]bool // validator -> pids
	maxLive int
	done    chan struct{}
}

var appHomeRE = regexp.MustCompile(`nodes/([a-z0-9-]+)/app-home`)

func watchApps(ctx context.Context, t *testing.T, dir string) *appWatch {
	w := &appWatch{pids: map[string]map[string]bool{}, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		// A sample every 50 ms until ctx ends: each app lives for seconds.
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			live := map[string]bool{}
			for _, p := range processesUnder(t, dir) {
				pid, cmd, _ := strings.Cut(p, ": ")
				m := appHomeRE.FindStringSubmatch(cmd)
				if !strings.Contains(cmd, "kvstore") || m == nil {
					continue
				}
				w.mu.Lock()
				if w.pids[m[1]] == nil {
					w.pids[m[1]] = map[string]bool{}
				}
				w.pids[m[1]][pid] = true
				w.mu.Unlock()
				live[m[1]] = true
			}
			w.mu.Lock()
			w.maxLive = max(w.maxLive, len(live))
			w.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	}()
	return w
}

// TestOwnAppFailsToStart: an app that exits at once, or never listens,
// stops the run before any block with the end of its log, and leaves no
// process behind.
func TestOwnAppFailsToStart(t *testing.T) {
	for _, tc := range []struct{ name, command, want string }{
		{"exits at once", `[sh, -c, 'echo boom-{addr} >&2; exit 3']`, "exited before it listened on unix://"},
		{"exits at once, grpc", `[sh, -c, 'echo boom-{addr} >&2; exit 3']`, "exited before it listened on 127.0.0.1:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			transport := "socket"
			if strings.HasSuffix(tc.name, "grpc") {
				transport = "grpc"
			}
			dir := filepath.Join(t.TempDir(), "run")
			yaml := fmt.Sprintf("name: bad-app\nrun: {heights: 3, max_duration: 1m}\napp: {command: %s, transport: %s}\nvalidators:\n  - {name: v, count: 2}\n", tc.command, transport)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := Run(ctx, parse(t, yaml), Options{OutDir: dir})
			if err == nil {
				t.Fatal("the run started with an app that exits at once")
			}
			for _, w := range []string{tc.want, "exit status 3", "app.log ends:", "boom-"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if left := processesUnder(t, dir); len(left) > 0 {
				t.Errorf("processes left: %v", left)
			}
			if left, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("valnet-app-%d-*", os.Getpid()))); len(left) > 0 {
				t.Errorf("app socket directories left: %v", left)
			}
		})
	}
}
