package nodes

import (
	"context"
	"errors"
	"fmt"
)

// ErrPauseInProcess is what Pause and Resume of an in-process node return:
// a goroutine cannot be frozen the way SIGSTOP freezes a process.
var ErrPauseInProcess = errors.New("nodes: node-pause needs the process backend (in-process nodes cannot be frozen)")

// errStopped is returned by a Controller method called after Stop.
func errStopped(name string) error { return fmt.Errorf("node %s: already stopped", name) }

// Kill stops the node. In-process there is no SIGKILL: CometBFT's own
// Stop runs (consensus finishes its step, the WAL and the stores are
// flushed and closed), so unlike a killed process nothing written is
// lost; the node is down and silent all the same. Killing a killed node
// does nothing.
func (n *inProcessNode) Kill(context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return errStopped(n.name)
	}
	if n.cur == nil {
		return nil
	}
	err := n.cur.stop()
	n.cur = nil
	if err != nil {
		return fmt.Errorf("node %s: kill: %w", n.name, err)
	}
	return nil
}

// Halt is a clean stop; in-process it is what Kill does already.
func (n *inProcessNode) Halt(ctx context.Context) error { return n.Kill(ctx) }

var _ Halter = (*inProcessNode)(nil)

// Pause is not possible in-process; see ErrPauseInProcess.
func (n *inProcessNode) Pause(context.Context) error { return ErrPauseInProcess }

// Resume is not possible in-process; see ErrPauseInProcess.
func (n *inProcessNode) Resume(context.Context) error { return ErrPauseInProcess }

// Restart builds a new CometBFT node from the same home and Spec (the same
// signer object, whose double-sign guard kept its state) and starts it;
// a running node is stopped first. Its handshake replays the block store
// into a fresh in-memory app, then it catches up from its peers. Events
// flow again from the new node.
func (n *inProcessNode) Restart(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return errStopped(n.name)
	}
	if n.cur != nil {
		err := n.cur.stop()
		n.cur = nil
		if err != nil {
			return fmt.Errorf("node %s: restart: stop: %w", n.name, err)
		}
	}
	// A start that fails on a taken port would leave the home's databases
	// open (CometBFT opens them before it listens): check first.
	c := n.spec.Config
	if err := portsFree(c.P2P.ListenAddress, c.RPC.ListenAddress); err != nil {
		return fmt.Errorf("node %s: restart: %w", n.name, err)
	}
	r, err := n.launch(ctx)
	if err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	n.cur = r
	return nil
}
