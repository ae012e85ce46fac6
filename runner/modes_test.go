package runner

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valnet/valnet/results"
)

// modesYAML: a key file's key and a local key, each behind a unix socket
// and a tcp hop, and a plain validator.
const modesYAML = `
name: e2e-modes
chain:
  timeouts: {propose: 300ms, prevote: 100ms, precommit: 100ms, commit: 100ms}
run: {backend: %s, heights: 5, max_duration: 2m}
validators:
  - name: kf
    signer: {type: keyfile, passphrase_env: VALNET_TEST_PASSPHRASE, bcrypt_cost: 4, via: tcp}
  - name: u
    signer: {type: local, via: unix}
  - name: plain
`

// secretFiles are the files of a run only their owner may read: keys,
// the double-sign guard's high-water mark and its lock, the signer log.
var secretFiles = map[string]bool{
	"priv_validator_key.json": true, "priv_validator_key.armor": true, "node_key.json": true,
	"priv_validator_state.json": true, "priv_validator_state.json.lock": true, "signer.log": true,
}

// socketWatch samples the unix sockets of this runner's temp dirs
// (valnet-<kind>-<pid>-*) while a run runs: each socket's mode when last
// seen, and its directory's.
type socketWatch struct {
	mu    sync.Mutex
	modes map[string][2]fs.FileMode // socket -> {socket mode, dir mode}
	stop  chan struct{}
	done  chan struct{}
}

func watchSockets() *socketWatch {
	w := &socketWatch{modes: map[string][2]fs.FileMode{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			for _, base := range []string{os.TempDir(), "/tmp"} {
				socks, _ := filepath.Glob(filepath.Join(base, fmt.Sprintf("valnet-*-%d-*", os.Getpid()), "*"))
				for _, p := range socks {
					st, err := os.Lstat(p)
					dir, derr := os.Stat(filepath.Dir(p))
					if err != nil || derr != nil || st.Mode()&fs.ModeSocket == 0 {
						continue
					}
					w.mu.Lock()
					w.modes[p] = [2]fs.FileMode{st.Mode().Perm(), dir.Mode().Perm()}
					w.mu.Unlock()
				}
			}
			select {
			case <-w.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *socketWatch) end() map[string][2]fs.FileMode {
	close(w.stop)
	<-w.done
	return w.modes
}

// TestRunFilesAndSocketsAreOwnerOnly: keys and state files are 0600, and
// every unix socket of the run (the signer hop's, the node's event socket,
// the socket a process node listens on for its signer) is 0600 in a 0700
// directory, on the in-process and the process backend.
func TestRunFilesAndSocketsAreOwnerOnly(t *testing.T) {
	t.Setenv("VALNET_TEST_PASSPHRASE", "correct horse")
	for _, backend := range []string{"inprocess", "process"} {
		t.Run(backend, func(t *testing.T) {
			opts := Options{OutDir: filepath.Join(t.TempDir(), "run")}
			if backend == "process" {
				opts.NodeCommand = []string{valnetBinary(t), "node"}
			}
			showLogsOnFailure(t, opts.OutDir)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			w := watchSockets()
			out, err := Run(ctx, parse(t, fmt.Sprintf(modesYAML, backend)), opts)
			socks := w.end()
			if err != nil {
				t.Fatal(err)
			}
			if s := out.Summary; s.Heights.Committed < 5 {
				t.Fatalf("%s", results.ResultLine(s))
			}
			wantSocks := 1 // u's signer hop
			if backend == "process" {
				wantSocks = 3 + 2 // every node's event socket, u's and plain's signer socket
			}
			if len(socks) < wantSocks {
				t.Errorf("saw %d sockets during the run, want at least %d: %v", len(socks), wantSocks, socks)
			}
			for p, m := range socks {
				if m[0] != 0o600 || m[1] != 0o700 {
					t.Errorf("socket %s mode %v in a dir of mode %v, want 0600 in 0700", p, m[0], m[1])
				}
			}
			files := 0
			err = filepath.WalkDir(opts.OutDir, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || !secretFiles[d.Name()] {
					return err
				}
				st, err := os.Stat(p)
				if err != nil {
					return err
				}
				files++
				if st.Mode().Perm() != 0o600 {
					t.Errorf("%s mode %v, want 0600", strings.TrimPrefix(p, opts.OutDir+"/"), st.Mode().Perm())
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if files < 3*4 {
				t.Errorf("checked %d key and state files, want at least 12", files)
			}
			t.Logf("%s: %d key/state files 0600, %d sockets 0600 in 0700 dirs", backend, files, len(socks))
		})
	}
}
