//go:build integ

package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/valnet/valnet/scenarios"
)

// Timing checks of real networks (a latency's upper bound, a loopback
// hop's cost, who missed more) say something about valnet only on a host
// that kept up with the run. runJudged asks the run's own host monitor
// (summary.host) before any such check is made.

// runJudged runs plan and returns a run whose host was not overloaded: an
// overloaded run is run once more, into its own directory, and an
// overloaded second run fails the test with the host's figures. It never
// passes or skips a timing check on an overloaded host.
func runJudged(t *testing.T, plan *scenarios.Plan, opts Options) *Outcome {
	t.Helper()
	return judged(t, func(attempt int) *Outcome {
		o := opts
		o.OutDir = filepath.Join(t.TempDir(), fmt.Sprintf("run-%d", attempt))
		showLogsOnFailure(t, o.OutDir)
		ctx, cancel := context.WithTimeout(context.Background(), plan.Run.MaxDuration+2*time.Minute)
		defer cancel()
		out, err := Run(ctx, plan, o)
		if err != nil {
			t.Fatalf("run %d: %v", attempt, err)
		}
		return out
	})
}
