package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/valnet/valnet/internal/action"
	"github.com/valnet/valnet/internal/syncbuf"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
)

// loopWait bounds every wait of a test for the poll loop on a fake clock:
// a failsafe against a hung loop, never a measure of anything.
const loopWait = 30 * time.Second

// loop drives r.wait on r's fake clock, one poll at a time.
type loop struct {
	t      *testing.T
	clk    *clockwork.FakeClock
	tl     *timeline
	done   chan struct{}
	reason string
}

// startLoop runs r.wait under ctx, the network started now on r's clock
// (a timelineRun's fake one).
func startLoop(t *testing.T, ctx context.Context, r *run) *loop {
	t.Helper()
	l := &loop{t: t, clk: r.clock.(*clockwork.FakeClock), tl: mustTimeline(t, r), done: make(chan struct{})}
	netStart := l.clk.Now()
	go func() {
		defer close(l.done)
		l.reason = r.wait(ctx, l.tl, netStart)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			return // it may be waiting for what a failed test never did
		}
		select {
		case <-l.done:
		case <-time.After(loopWait):
			t.Error("the poll loop was still running at the end of the test")
		}
	})
	return l
}

// parked waits until the loop waits for its next poll (its deadline and
// its poll timer are both armed: the poll before is done); false once the
// loop has returned.
func (l *loop) parked() bool {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), loopWait)
	defer cancel()
	go func() {
		select {
		case <-l.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := l.clk.BlockUntilContext(ctx, 2); err != nil {
		select {
		case <-l.done:
			return false
		default:
			l.t.Fatalf("the poll loop neither waited for a poll nor returned within %v", loopWait)
		}
	}
	return true
}

// polls lets n polls happen, each once the loop waits for it, and returns
// once the last is done; false if the loop returned first.
func (l *loop) polls(n int) bool {
	l.t.Helper()
	for range n {
		if !l.parked() {
			return false
		}
		l.clk.Advance(pollEvery)
	}
	return l.parked()
}

// end waits for the loop to return and gives its stop reason.
func (l *loop) end() string {
	l.t.Helper()
	select {
	case <-l.done:
		return l.reason
	case <-time.After(loopWait):
		l.t.Fatalf("the poll loop did not return within %v", loopWait)
		return ""
	}
}

// nodeQueueIdle waits, with the loop parked, until every node call the
// faults queued so far has returned.
func (l *loop) nodeQueueIdle() {
	l.t.Helper()
	if !l.parked() {
		l.t.Fatal("the poll loop returned")
	}
	for target, last := range l.tl.nodes.last {
		select {
		case <-last:
		case <-time.After(loopWait):
			l.t.Fatalf("%s: node calls still going after %v", target, loopWait)
		}
	}
}

func (l *loop) running() bool {
	select {
	case <-l.done:
		return false
	default:
		return true
	}
}

// TestWaitMaxDurationFromTheStart: max_duration counts from the run's
// start (setup included), not from the network's: the loop returns at
// that instant, not a poll before.
func TestWaitMaxDurationFromTheStart(t *testing.T) {
	r := timelineRun(t, time.Second, nil)
	clk := r.clock.(*clockwork.FakeClock)
	r.start = clk.Now().Add(-300 * time.Millisecond) // the setup took 300 ms
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := startLoop(t, ctx, r)
	if !l.polls(6) || !l.running() {
		t.Fatalf("the loop ended %v after the start, before max_duration 1s", clk.Since(r.start))
	}
	l.polls(1)
	if reason := l.end(); reason != eventlog.StopMaxDuration {
		t.Errorf("stop reason %q, want %s", reason, eventlog.StopMaxDuration)
	}
	if d := clk.Since(r.start); d != time.Second {
		t.Errorf("ended %v after the start, want 1s", d)
	}
}

// TestWaitStopsAtTheBlockAfterTheTarget: the target height's own block is
// not the end (its precommits are in the next block); the first poll that
// sees the block after it is.
func TestWaitStopsAtTheBlockAfterTheTarget(t *testing.T) {
	r := timelineRun(t, time.Hour, nil)
	r.plan.Run.Heights = 2
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := startLoop(t, ctx, r)
	block := func(h int64) {
		r.rec.Emit(eventlog.Event{Time: time.Now(), Kind: eventlog.KindBlock, Node: "v1", Height: h})
	}
	block(1)
	block(2)
	if !l.polls(3) || !l.running() {
		t.Fatal("the loop ended at the target height's own block")
	}
	block(3)
	if l.polls(1) {
		t.Fatal("the poll after the block after the target did not end the loop")
	}
	if reason := l.end(); reason != eventlog.StopHeights {
		t.Errorf("stop reason %q, want %s", reason, eventlog.StopHeights)
	}
}

// TestWaitInterrupted: Ctrl-C ends the loop with no poll to wait for.
func TestWaitInterrupted(t *testing.T) {
	r := timelineRun(t, time.Hour, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := startLoop(t, ctx, r)
	l.parked()
	cancel()
	if reason := l.end(); reason != eventlog.StopInterrupted {
		t.Errorf("stop reason %q, want %s", reason, eventlog.StopInterrupted)
	}
}

// TestWaitStepsFaultsFromTheNetworkStart: a fault at a time starts at the
// first poll at or after that time counted from the network's start (not
// the run's), and not at the poll before.
func TestWaitStepsFaultsFromTheNetworkStart(t *testing.T) {
	node := &fakeNode{name: "v1"}
	r := timelineRun(t, time.Hour, []scenarios.FaultPlan{
		{Action: action.NodePause, Target: "v1", At: scenarios.FaultAt{Time: 250 * time.Millisecond}},
	}, node)
	clk := r.clock.(*clockwork.FakeClock)
	r.start = clk.Now().Add(-time.Second) // counted from here, it would be due at once
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := startLoop(t, ctx, r)
	l.polls(2) // 200 ms after the network's start
	if q := l.tl.nodes.last["v1"]; q != nil {
		t.Fatal("the pause at 250ms was queued by the poll at 200ms")
	}
	l.polls(1)
	if q := l.tl.nodes.last["v1"]; q == nil {
		t.Fatal("the pause at 250ms was not queued by the poll at 300ms")
	}
	l.nodeQueueIdle()
	cancel()
	l.end()
	if calls, _, _ := node.state(); len(calls) != 1 || calls[0] != "pause" {
		t.Errorf("node calls %v, want one pause", calls)
	}
}

// TestWaitPlainStatusEvery5s: off a terminal the status is one line at
// the first poll, then one every 5 s of the loop's clock.
func TestWaitPlainStatusEvery5s(t *testing.T) {
	r := timelineRun(t, time.Hour, nil)
	var out syncbuf.Buffer
	r.opts.Status = &out
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := startLoop(t, ctx, r)
	lines := func() int { return strings.Count(out.String(), "\n") }
	l.polls(1)
	if n := lines(); n != 1 {
		t.Fatalf("%d status lines after the first poll, want 1: %q", n, out.String())
	}
	l.polls(49) // 5 s: the second line is due 5 s after the first, at 5.1 s
	if n := lines(); n != 1 {
		t.Fatalf("%d status lines 4.9 s after the first, want 1: %q", n, out.String())
	}
	l.polls(1)
	if n := lines(); n != 2 || !strings.HasPrefix(out.String(), "height 0/1000  round 0") {
		t.Fatalf("%d status lines 5 s after the first, want 2: %q", n, out.String())
	}
	cancel()
	l.end()
}
