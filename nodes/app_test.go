package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	abcicli "github.com/cometbft/cometbft/abci/client"
	"github.com/cometbft/cometbft/abci/example/kvstore"
	abciserver "github.com/cometbft/cometbft/abci/server"
	abci "github.com/cometbft/cometbft/abci/types"

	"github.com/valnet/valnet/internal/testbin"
)

// TestAppProcess starts CometBFT's abci-cli kvstore as a validator's app
// on each transport: it accepts on the address valnet picked, is in the pid
// registry as a recorded child (so a later run's CleanOrphans would kill it
// if this runner died), and after a kill, a restart on the same address and
// a stop, nothing is left: no process, no registry entry, no socket dir.
func TestAppProcess(t *testing.T) {
	if !processSupported {
		t.Skip(errNoProcess)
	}
	abci := testbin.ABCICLI(t)
	for _, transport := range []string{"socket", "grpc"} {
		t.Run(transport, func(t *testing.T) {
			home := t.TempDir()
			a, err := newApp("v", home, AppSpec{Command: []string{abci, "kvstore", "--address", "{addr}", "--abci", transport, "--persist", "{home}"}, Transport: transport})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var pids []int
			for i := range 2 {
				if err := a.start(ctx); err != nil {
					t.Fatal(err)
				}
				pid := a.PID()
				pids = append(pids, pid)
				data, err := os.ReadFile(entryPath(pid))
				if err != nil {
					t.Fatalf("start %d: not in the pid registry: %v", i, err)
				}
				var e pidEntry
				if err := json.Unmarshal(data, &e); err != nil || !isRecordedChild(e) {
					t.Errorf("start %d: registry entry %s does not match the live app (err %v)", i, data, err)
				}
				if i == 0 {
					if err := a.kill(); err != nil {
						t.Fatal(err)
					}
					if ProcessAlive(pid, 0) {
						t.Errorf("killed app %d still alive", pid)
					}
				}
			}
			if pids[0] == pids[1] {
				t.Errorf("restart kept pid %d", pids[0])
			}
			if err := a.stop(ctx); err != nil {
				t.Errorf("stop: %v", err)
			}
			a.release()
			for _, pid := range pids {
				if ProcessAlive(pid, 0) {
					t.Errorf("app %d alive after stop", pid)
				}
				if _, err := os.Stat(entryPath(pid)); err == nil {
					t.Errorf("registry entry of %d left", pid)
				}
			}
			if transport == "socket" {
				dir := strings.TrimSuffix(strings.TrimPrefix(a.Addr(), "unix://"), "/app.sock")
				if _, err := os.Stat(dir); err == nil {
					t.Errorf("socket dir %s left", dir)
				}
			}
		})
	}
}

func TestAppNeverListens(t *testing.T) {
	if !processSupported {
		t.Skip(errNoProcess)
	}
	a, err := newApp("v", t.TempDir(), AppSpec{Command: []string{"sh", "-c", "echo waiting-{addr}; exec sleep 60"}, StartTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer a.release()
	err = a.start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "did not listen on unix://") || !strings.Contains(err.Error(), "within 500ms") || !strings.Contains(err.Error(), "waiting-unix://") {
		t.Fatalf("error %v: want did not listen within 500ms, with the log tail", err)
	}
	if a.PID() != 0 {
		t.Error("an app that never listened is still running")
	}
}

// TestQuietClientReturnsOnALostApp: once the app's connection is lost,
// a call through the in-process node's ABCI client returns errAppLost
// instead of waiting forever, as CometBFT v1.0.1's socket client does for
// a request it takes after it stopped (this held a node's consensus
// routine, and its Stop, for good when its app died mid-commit).
func TestQuietClientReturnsOnALostApp(t *testing.T) {
	addr := "unix://" + filepath.Join(t.TempDir(), "app.sock")
	srv := abciserver.NewSocketServer(addr, kvstore.NewInMemoryApplication())
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	cl := abcicli.NewSocketClient(addr, true)
	if err := cl.Start(); err != nil {
		t.Fatal(err)
	}
	var lost atomic.Int32
	q := quietClient{Client: cl, lost: func(error) { lost.Add(1) }}
	ctx := context.Background()
	if _, err := q.Info(ctx, &abci.InfoRequest{}); err != nil {
		t.Fatalf("Info with the app up: %v", err)
	}

	if err := srv.Stop(); err != nil { // the app dies: its connections close
		t.Fatal(err)
	}
	select {
	case <-cl.Quit():
	case <-time.After(30 * time.Second):
		t.Fatal("the client did not quit when its app went away")
	}
	raw := make(chan error, 1)
	go func() { raw <- cl.Flush(ctx) }()
	select {
	case err := <-raw:
		t.Logf("CometBFT's own client returned after it quit (%v): the hang this guards against is gone", err)
	case <-time.After(200 * time.Millisecond):
		t.Log("CometBFT's own client still waits forever for a request taken after it quit")
	}

	calls := map[string]func() error{
		"Flush":  func() error { return q.Flush(ctx) },
		"Commit": func() error { _, err := q.Commit(ctx, &abci.CommitRequest{}); return err },
		"FinalizeBlock": func() error {
			_, err := q.FinalizeBlock(ctx, &abci.FinalizeBlockRequest{Height: 1})
			return err
		},
	}
	for name, call := range calls {
		done := make(chan error, 1)
		go func() { done <- call() }()
		select {
		case err := <-done:
			if !errors.Is(err, errAppLost) {
				t.Errorf("%s after the app was lost: %v, want errAppLost", name, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s after the app was lost still waits", name)
		}
	}
	if q.Error() != nil || lost.Load() == 0 {
		t.Errorf("Error() = %v with %d losses reported: the loss goes to lost, not to CometBFT's self-kill", q.Error(), lost.Load())
	}
}
