package runner

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valnet/valnet/internal/nettest"
	"github.com/valnet/valnet/nodes"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/scenarios"
)

// fakeNode is a node whose control operations take the time they are
// given: block, when set, makes every operation wait until its context ends
// (a backend that hangs), and slow makes it take that long.
type fakeNode struct {
	name  string
	block bool
	slow  time.Duration

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
func (n *fakeNode) Addrs() nodes.Addrs               { return nodes.Addrs{} }
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
	var wait <-chan time.Time // nil: forever
	if !n.block {
		wait = time.After(n.slow)
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
// loop and the fault timeline; its events go to a file read by events.
func timelineRun(t *testing.T, maxDuration time.Duration, faults []scenarios.FaultPlan, ns ...*fakeNode) *run {
	t.Helper()
	path := filepath.Join(t.TempDir(), EventsFile)
	w, err := results.NewWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	plan := &scenarios.Plan{Run: scenarios.RunPlan{Heights: 1000, MaxDuration: maxDuration}, Faults: faults}
	r := &run{plan: plan, rec: newRecorder(w), writer: w, start: time.Now()}
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
	evs, err := results.ReadFile(filepath.Join(r.opts.OutDir, EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		if e.Kind == results.KindFault {
			out = append(out, e.Validator+" "+e.Action+" "+e.State+": "+e.Detail)
		}
	}
	return out
}

func atHeight(h int64) scenarios.FaultAt { return scenarios.FaultAt{Height: h} }

// TestStopDuringASlowNodeFault: Ctrl-C or max_duration while a node-restart
// hangs ends the run at once, and the restart is cancelled with the run.
func TestStopDuringASlowNodeFault(t *testing.T) {
	tests := []struct {
		name        string
		maxDuration time.Duration
		interrupt   bool
		want        string
	}{
		{"ctrl-c", time.Hour, true, results.StopInterrupted},
		{"max_duration", 500 * time.Millisecond, false, results.StopMaxDuration},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			node := &fakeNode{name: "v1", block: true}
			r := timelineRun(t, tc.maxDuration, []scenarios.FaultPlan{
				{Action: scenarios.FaultNodeRestart, Target: "v1", At: atHeight(1)},
			}, node)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan string, 1)
			go func() { done <- r.wait(ctx, newTimeline(r), time.Now()) }()
			nettest.WaitFor(t, 5*time.Second, "the restart to begin", func() bool {
				calls, _, _ := node.state()
				return len(calls) == 1
			})
			if tc.interrupt {
				cancel()
			}
			select {
			case reason := <-done:
				if reason != tc.want {
					t.Errorf("stop reason %q, want %q", reason, tc.want)
				}
			case <-time.After(2 * time.Second):
				t.Fatalf("the run did not stop within 2s of %s while a node-restart hung", tc.name)
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

// TestNodeFaultsRunOffTheLoopInOrderPerTarget: a slow kill of v1 holds up
// neither the poll loop nor v2's fault, v1's way back waits for its kill,
// and each records its event when it is done.
func TestNodeFaultsRunOffTheLoopInOrderPerTarget(t *testing.T) {
	v1 := &fakeNode{name: "v1", slow: 800 * time.Millisecond}
	v2 := &fakeNode{name: "v2"}
	r := timelineRun(t, time.Hour, []scenarios.FaultPlan{
		{Action: scenarios.FaultNodeKill, Target: "v1", At: atHeight(1), Duration: 100 * time.Millisecond},
		{Action: scenarios.FaultNodePause, Target: "v2", At: scenarios.FaultAt{Time: 200 * time.Millisecond}},
	}, v1, v2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan string, 1)
	go func() { done <- r.wait(ctx, newTimeline(r), time.Now()) }()
	nettest.WaitFor(t, 5*time.Second, "v2 paused while v1's kill is still going", func() bool {
		calls, _, _ := v2.state()
		v1calls, v1running, _ := v1.state()
		return len(calls) == 1 && slices.Equal(v1calls, []string{"kill"}) && v1running == 1
	})
	nettest.WaitFor(t, 5*time.Second, "v1 started again", func() bool {
		calls, running, _ := v1.state()
		return len(calls) == 2 && running == 0
	})
	cancel()
	<-done
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
