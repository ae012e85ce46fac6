package runner

import (
	"context"
	"time"

	"github.com/valnet/valnet/internal/faultcore"
	"github.com/valnet/valnet/results/eventlog"
)

// pollEvery is how often the runner looks at observed progress, the fault
// core's step cadence (the sim steps its faults on the same grid).
const pollEvery = faultcore.StepEvery

// wait polls observed progress until the target is reached, the hard
// deadline passes or ctx ends, and returns the stop reason. The target is
// the block after run.heights: that block's LastCommit carries the commit
// signatures of the target height, so every height up to the target has
// its missed and nil precommits accounted for. Every wait is on r.clock:
// max_duration counts from r.start, the fault timeline from netStart.
func (r *run) wait(ctx context.Context, faults *timeline, netStart time.Time) string {
	clk := r.clock
	status := &statusLine{w: r.opts.Status, terminal: r.opts.Terminal, target: r.plan.Run.Heights, plainEvery: 5 * time.Second}
	defer status.done()
	deadline := clk.NewTimer(clk.Until(r.start.Add(r.plan.Run.MaxDuration)))
	defer deadline.Stop()
	// A timer armed again after each poll rather than a ticker: one poll
	// at a time on the same 100 ms grid, and a fake clock's BlockUntil
	// tells a test the poll is done and the loop waits for the next.
	poll := clk.NewTimer(pollEvery)
	defer poll.Stop()
	faults.begin(ctx, netStart)
	defer faults.close()
	for {
		select {
		case <-ctx.Done():
			return eventlog.StopInterrupted
		case <-deadline.Chan():
			return eventlog.StopMaxDuration
		case now := <-poll.Chan():
			p := r.rec.tracker.Snapshot()
			faults.step(now, p.Height)
			status.update(p, now)
			if p.Height > r.plan.Run.Heights {
				return eventlog.StopHeights
			}
			poll.Reset(pollEvery - clk.Since(now))
		}
	}
}
