package runner

import (
	"context"
	"time"
)

// until checks cond every `every` until it holds (true) or timeout has
// passed without it (false). It takes no t, so a test's own goroutines
// may wait with it too.
func until(timeout, every time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return untilCtx(ctx, every, cond)
}

// untilCtx is until with ctx for the deadline: false once ctx ends first.
func untilCtx(ctx context.Context, every time.Duration, cond func() bool) bool {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return cond()
		case <-tick.C:
		}
	}
	return true
}
