package runner

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/valnet/valnet/internal/action"
	"github.com/valnet/valnet/internal/nettest"
	"github.com/valnet/valnet/nodes"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
)

// fakeNode is a node whose control operations return when the test says:
// block, when set, makes every operation wait until its context ends (a
// backend that hangs); gate, when set, makes each wait until it is closed
// (a slow backend, for as long as the test needs).
type fakeNode struct {
	name  string
	block bool
	gate  chan struct{}
	fail  map[string]error // operation -> the error it returns
	rpc   string           // its RPC address (the load tests)

	mu        sync.Mutex
	calls     []string // operations begun, in order
	running   int      // operations not yet returned
	cancelled int      // operations that ended by their context
}

var (
	_ nodes.Node       = (*fakeNode)(nil)
	_ nodes.Controller = (*fakeNode)(nil)
)

func (n *fakeNode) Name() string                     { return n.name }
func (n *fakeNode) Addrs() nodes.Addrs               { return nodes.Addrs{RPC: n.rpc} }
func (n *fakeNode) Stop(context.Context) error       { return nil }
func (n *fakeNode) Kill(ctx context.Context) error   { return n.op(ctx, "kill") }
func (n *fakeNode) Pause(ctx context.Context) error  { return n.op(ctx, "pause") }
func (n *fakeNode) Resume(ctx context.Context) error { return n.op(ctx, "resume") }
func (n *fakeNode) Restart(ctx context.Context) error {
	return n.op(ctx, "restart")
}

func (n *fakeNode) op(ctx context.Context, name string) error {
	n.mu.Lock()
	n.calls = append(n.calls, name)
	n.running++
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		n.running--
		n.mu.Unlock()
	}()
	if err := n.fail[name]; err != nil {
		return err
	}
	var wait <-chan struct{} // nil: forever
	switch {
	case n.gate != nil:
		wait = n.gate
	case !n.block:
		return nil
	}
	select {
	case <-wait:
		return nil
	case <-ctx.Done():
		n.mu.Lock()
		n.cancelled++
		n.mu.Unlock()
		return ctx.Err()
	}
}

func (n *fakeNode) state() (calls []string, running, cancelled int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.calls), n.running, n.cancelled
}

// timelineRun is a run with fake nodes and no signers, enough for the poll
// loop and the fault timeline, on a fake clock (startLoop drives it); its
// events go to a file read by events.
func timelineRun(t *testing.T, maxDuration time.Duration, faults []scenarios.FaultPlan, ns ...*fakeNode) *run {
	t.Helper()
	path := filepath.Join(t.TempDir(), EventsFile)
	w, err := eventlog.NewWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	plan := &scenarios.Plan{Run: scenarios.RunPlan{Heights: 1000, MaxDuration: maxDuration}, Faults: faults}
	clk := clockwork.NewFakeClock()
	r := &run{plan: plan, rec: newRecorder(w), writer: w, clock: clk, start: clk.Now()}
	for _, n := range ns {
		v := scenarios.ValidatorPlan{Name: n.name}
		plan.Validators = append(plan.Validators, v)
		r.members = append(r.members, &member{plan: v})
		r.signers = append(r.signers, nil)
		r.nodes = append(r.nodes, n)
	}
	r.opts.OutDir = filepath.Dir(path)
	return r
}

// faultEvents reads back the fault events of r as "action state: detail".
func faultEvents(t *testing.T, r *run) []string {
	t.Helper()
	if err := r.writer.Close(); err != nil {
		t.Fatal(err)
	}
	evs, err := eventlog.ReadFile(filepath.Join(r.opts.OutDir, EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		if e.Kind == eventlog.KindFault {
			out = append(out, e.Validator+" "+e.Action+" "+e.State+": "+e.Detail)
		}
	}
	return out
}

func atHeight(h int64) scenarios.FaultAt { return scenarios.FaultAt{Height: h} }

// TestStopDuringASlowNodeFault: Ctrl-C or max_duration while a node-restart
// hangs ends the run (the restart would never return by itself), and the
// restart is cancelled with the run.
func TestStopDuringASlowNodeFault(t *testing.T) {
	tests := []struct {
		name        string
		maxDuration time.Duration
		interrupt   bool
		want        string
	}{
		{"ctrl-c", time.Hour, true, eventlog.StopInterrupted},
		{"max_duration", 500 * time.Millisecond, false, eventlog.StopMaxDuration},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			node := &fakeNode{name: "v1", block: true}
			r := timelineRun(t, tc.maxDuration, []scenarios.FaultPlan{
				{Action: action.NodeRestart, Target: "v1", At: atHeight(1)},
			}, node)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			l := startLoop(t, ctx, r)
			l.polls(1) // consensus is at height 1: the restart begins
			nettest.WaitFor(t, 30*time.Second, "the restart to begin", func() bool {
				calls, _, _ := node.state()
				return len(calls) == 1
			})
			if tc.interrupt {
				cancel()
			} else {
				// Polls go on while the restart hangs, up to the deadline.
				if !l.polls(3) {
					t.Fatal("the loop ended before max_duration")
				}
				l.polls(1)
			}
			if reason := l.end(); reason != tc.want {
				t.Errorf("stop reason %q, want %q", reason, tc.want)
			}
			if tc.maxDuration < time.Hour {
				if at := l.clk.Since(r.start); at != tc.maxDuration {
					t.Errorf("ended %v after the start, want %v", at, tc.maxDuration)
				}
			}
			// Nothing of the fault is left running for the shutdown to race.
			if _, running, cancelled := node.state(); running != 0 || cancelled != 1 {
				t.Errorf("after the run: %d operations running, %d cancelled; want 0 and 1", running, cancelled)
			}
			evs := faultEvents(t, r)
			if len(evs) < 1 || !strings.Contains(evs[0], "node-restart start: v1 restarting from its home") {
				t.Errorf("fault events %q", evs)
			}
		})
	}
}

// TestNodeFaultsRunOffTheLoopInOrderPerTarget: a kill of v1 that does not
// return holds up neither the poll loop nor v2's fault, v1's way back
// waits for its kill, and each records its event when it is done.
func TestNodeFaultsRunOffTheLoopInOrderPerTarget(t *testing.T) {
	v1 := &fakeNode{name: "v1", gate: make(chan struct{})}
	v2 := &fakeNode{name: "v2"}
	r := timelineRun(t, time.Hour, []scenarios.FaultPlan{
		{Action: action.NodeKill, Target: "v1", At: atHeight(1), Duration: 100 * time.Millisecond},
		{Action: action.NodePause, Target: "v2", At: scenarios.FaultAt{Time: 200 * time.Millisecond}},
	}, v1, v2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := startLoop(t, ctx, r)
	// 100 ms: v1's kill begins; 200 ms: its duration is over (its way
	// back is queued behind it) and v2's pause is due.
	l.polls(2)
	nettest.WaitFor(t, 30*time.Second, "v2 paused while v1's kill is still going", func() bool {
		calls, running, _ := v2.state()
		return len(calls) == 1 && running == 0
	})
	// The loop still polls while the kill is held.
	if !l.polls(3) {
		t.Fatal("the loop ended while v1's kill was held")
	}
	if calls, running, _ := v1.state(); !slices.Equal(calls, []string{"kill"}) || running != 1 {
		t.Fatalf("v1 while its kill is held: operations %v, %d running; want the kill alone, running", calls, running)
	}
	close(v1.gate)
	nettest.WaitFor(t, 30*time.Second, "v1 started again", func() bool {
		calls, running, _ := v1.state()
		return len(calls) == 2 && running == 0
	})
	cancel()
	l.end()
	if calls, _, _ := v1.state(); !slices.Equal(calls, []string{"kill", "restart"}) {
		t.Errorf("v1 operations %v, want kill then restart", calls)
	}
	want := []string{
		"v1 node-kill start: v1 down (node-kill)",
		"v2 node-pause start: v2 paused (no progress, no answers)",
		"v1 node-kill end: started again from its home",
	}
	if got := faultEvents(t, r); !slices.Equal(got, want) {
		t.Errorf("fault events\n%q\nwant\n%q", got, want)
	}
}

// TestNodeFaultWindows: a stop, kill or pause is a window that a later
// node-start or node-resume ends (its event is that end, no window of its
// own); one with nothing to end is an instant; a call that fails ends its
// window at once.
func TestNodeFaultWindows(t *testing.T) {
	at := func(d time.Duration) scenarios.FaultAt { return scenarios.FaultAt{Time: d} }
	boom := errors.New("boom")
	tests := []struct {
		name   string
		fail   map[string]error
		faults []scenarios.FaultPlan
		want   []string
	}{
		{"kill until a node-start", nil, []scenarios.FaultPlan{
			{Action: action.NodeKill, Target: "v1", At: at(0)},
			{Action: action.NodeStart, Target: "v1", At: at(200 * time.Millisecond)},
		}, []string{
			"v1 node-kill start: v1 down (node-kill)",
			"v1 node-kill end: v1 started again from its home (node-start at 200ms)",
		}},
		{"pause until a node-resume", nil, []scenarios.FaultPlan{
			{Action: action.NodePause, Target: "v1", At: at(0)},
			{Action: action.NodeResume, Target: "v1", At: at(200 * time.Millisecond)},
		}, []string{
			"v1 node-pause start: v1 paused (no progress, no answers)",
			"v1 node-pause end: v1 resumed (node-resume at 200ms)",
		}},
		{"a node-start of a running node", nil, []scenarios.FaultPlan{
			{Action: action.NodeStart, Target: "v1", At: at(0)},
		}, []string{
			"v1 node-start instant: v1 started again from its home; it was not down",
		}},
		{"a kill that fails ends at once", map[string]error{"kill": boom}, []scenarios.FaultPlan{
			{Action: action.NodeKill, Target: "v1", At: at(0), Duration: 100 * time.Millisecond},
		}, []string{
			"v1 node-kill start: v1 down (node-kill)",
			"v1 node-kill end: not applied: node-kill failed: boom",
		}},
		{"a node-start ends a kill before its duration does", nil, []scenarios.FaultPlan{
			{Action: action.NodeKill, Target: "v1", At: at(0), Duration: 400 * time.Millisecond},
			{Action: action.NodeStart, Target: "v1", At: at(100 * time.Millisecond)},
		}, []string{
			"v1 node-kill start: v1 down (node-kill)",
			"v1 node-kill end: v1 started again from its home (node-start at 100ms)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &fakeNode{name: "v1", fail: tt.fail}
			r := timelineRun(t, time.Hour, tt.faults, node)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			l := startLoop(t, ctx, r)
			// Every fault and way back is due by 400 ms after the start:
			// six polls step them all; then the node queue drains.
			l.polls(6)
			l.nodeQueueIdle()
			cancel()
			l.end()
			if got := faultEvents(t, r); !slices.Equal(got, tt.want) {
				t.Errorf("fault events\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// mustTimeline is newTimeline for a test's plan, which the fault core
// must accept.
func mustTimeline(t *testing.T, r *run) *timeline {
	t.Helper()
	tl, err := newTimeline(r)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}
