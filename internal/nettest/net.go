package nettest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/valnet/valnet/results/eventlog"
)

// The abilities of a node the harness uses (nodes.Node, nodes.Controller,
// nodes.HeightReporter have them).
type (
	Node interface {
		Name() string
		Stop(ctx context.Context) error
	}
	Controller interface {
		Kill(ctx context.Context) error
		Pause(ctx context.Context) error
		Resume(ctx context.Context) error
		Restart(ctx context.Context) error
	}
	HeightReporter interface {
		Height(ctx context.Context) int64
	}
)

// Net is the running nodes of a test network and the events they report.
type Net struct {
	T     testing.TB
	Log   *EventLog
	Nodes []Node
}

func NewNet(t testing.TB) *Net { return &Net{T: t, Log: NewEventLog()} }

// Start starts n nodes, in order, with start (a backend's Start of the
// i-th validator); Cleanup stops them.
func (n *Net) Start(ctx context.Context, count int, start func(ctx context.Context, i int) (Node, error)) {
	n.T.Helper()
	n.T.Cleanup(n.Stop)
	for i := range count {
		node, err := start(ctx, i)
		if err != nil {
			n.T.Fatal(err)
		}
		n.Nodes = append(n.Nodes, node)
	}
}

// Stop stops every node at once and reports errors.
func (n *Net) Stop() {
	var wg sync.WaitGroup
	for _, node := range n.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := node.Stop(ctx); err != nil {
				n.T.Errorf("stop %s: %v", node.Name(), err)
			}
		}()
	}
	wg.Wait()
}

func (n *Net) Node(name string) Node {
	for _, node := range n.Nodes {
		if node.Name() == name {
			return node
		}
	}
	n.T.Fatalf("no node %s", name)
	return nil
}

func (n *Net) Ctl(name string) Controller {
	c, ok := n.Node(name).(Controller)
	if !ok {
		n.T.Fatalf("node %s has no Controller", name)
	}
	return c
}

// Height is what node name's HeightReporter says.
func (n *Net) Height(name string) int64 {
	h, ok := n.Node(name).(HeightReporter)
	if !ok {
		n.T.Fatalf("node %s has no HeightReporter", name)
	}
	return h.Height(n.T.Context())
}

// ReachHeight waits until every node has reported block h in events, and
// checks that each reported votes too and answers RPC at h or above.
func (n *Net) ReachHeight(h int64) {
	n.T.Helper()
	var names []string
	for _, node := range n.Nodes {
		names = append(names, node.Name())
	}
	WaitFor(n.T, 3*time.Minute, fmt.Sprintf("every node at height %d (block events)", h), func() bool { return n.Log.MinBlock(names...) >= h })
	// A node that started last may have reached h by block sync, before
	// it joined consensus and voted: its votes come a little later.
	WaitFor(n.T, time.Minute, "vote events from every node", func() bool {
		for _, name := range names {
			if n.Log.Count(eventlog.KindVote, name) == 0 {
				return false
			}
		}
		return true
	})
	for _, name := range names {
		if got := n.Height(name); got < h {
			n.T.Errorf("%s's RPC height %d < %d", name, got, h)
		}
	}
}

// PauseResume pauses node name and checks that it stops while live go on
// (one block may have been in flight when it froze), then resumes it and
// waits until it catches up.
func (n *Net) PauseResume(ctx context.Context, name string, live ...string) {
	n.T.Helper()
	if err := n.Ctl(name).Pause(ctx); err != nil {
		n.T.Fatal(err)
	}
	pausedAt := n.Log.Block(name)
	WaitFor(n.T, 3*time.Minute, "the others go on without "+name, func() bool { return n.Log.MinBlock(live...) >= pausedAt+4 })
	if b, h := n.Log.Block(name), n.Height(name); b > pausedAt+1 || h > pausedAt+1 {
		n.T.Fatalf("paused %s went on: paused at %d, now block events at %d, RPC height %d", name, pausedAt, b, h)
	}
	if err := n.Ctl(name).Resume(ctx); err != nil {
		n.T.Fatal(err)
	}
	resumedAt := n.Log.MinBlock(live...)
	WaitFor(n.T, 3*time.Minute, name+" catches up", func() bool {
		return n.Height(name) >= resumedAt+1 && n.Log.Block(name) >= resumedAt+1
	})
}

// KillRestart kills node name and checks that others go on without it
// while it stays where it was; whileDown (if any) runs then. It restarts
// the node and waits until it catches up and signs again.
func (n *Net) KillRestart(ctx context.Context, name string, others []string, whileDown func()) {
	n.T.Helper()
	if err := n.Ctl(name).Kill(ctx); err != nil {
		n.T.Fatal(err)
	}
	killedAt := n.Height(name)
	if whileDown != nil {
		whileDown()
	}
	WaitFor(n.T, 3*time.Minute, "the others go on without "+name, func() bool { return n.Log.MinBlock(others...) >= killedAt+3 })
	if h := n.Height(name); h != killedAt {
		n.T.Fatalf("killed %s moved from height %d to %d", name, killedAt, h)
	}
	if err := n.Ctl(name).Restart(ctx); err != nil {
		n.T.Fatal(err)
	}
	restartedAt := n.Log.MinBlock(others...)
	WaitFor(n.T, 3*time.Minute, name+" catches up", func() bool {
		return n.Height(name) >= restartedAt+2 && n.Log.Block(name) >= restartedAt+2
	})
	WaitFor(n.T, 3*time.Minute, name+" signs again", func() bool { return SignedIn(n.Log.Snapshot(), name, restartedAt) })
}
