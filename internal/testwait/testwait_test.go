package testwait

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps a Fatalf and, as testing does,
// ends the goroutine that called it.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestUntil(t *testing.T) {
	start := time.Now()
	n := 0
	Until(t, time.Second, "the third look", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Errorf("looked %d times, want 3", n)
	}
	if el := time.Since(start); el < 2*Every {
		t.Errorf("three looks took %v, want at least two waits of %v", el, Every)
	}

	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Until(r, 30*time.Millisecond, "never", func() bool { return false })
	}()
	<-done
	if !strings.Contains(r.failed, "timed out after 30ms waiting for never") {
		t.Errorf("a condition that never holds did not fail: %q", r.failed)
	}
}
