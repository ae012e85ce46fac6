// Package testwait is the one way valnet's tests wait for something: poll
// a condition with a deadline, never a fixed sleep.
package testwait

import (
	"testing"
	"time"
)

// Every is how often Until looks.
const Every = 10 * time.Millisecond

// Until polls cond until it holds, or fails t once timeout has passed,
// saying what it waited for.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(Every)
	}
}
