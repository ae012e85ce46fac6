// Package nettest is the harness of the tests that run real validator
// networks with a node backend (nodes' in-process and process backends,
// the docker backend): validators laid out as the runner lays them out, a
// Sink that keeps what the nodes report, polling with a deadline, the
// fault checks every backend must pass, and the nodes' logs shown when a
// test fails.
//
// It imports nothing of valnet but results (nodes' own tests use it), so
// it names the abilities of a node with interfaces of its own that
// nodes.Node, nodes.Controller and nodes.HeightReporter satisfy.
package nettest

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// WaitFor polls cond every 50 ms until it holds, and fails t once timeout
// has passed without it.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ShowLogsOnFailure logs the tail of every root/<node>/<file> (node.log,
// node.stderr, ...) if the test fails; they stay in files otherwise. A
// Cleanup registered before a backend's own runs after it, once the
// backend has saved what it keeps (a container's output).
func ShowLogsOnFailure(t testing.TB, root string, files ...string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, file := range files {
			paths, _ := filepath.Glob(filepath.Join(root, "*", file))
			for _, p := range paths {
				data, _ := os.ReadFile(p)
				if len(data) > 3000 {
					data = data[len(data)-3000:]
				}
				t.Logf("--- %s (tail)\n%s", p, data)
			}
		}
	})
}
