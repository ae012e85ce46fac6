package nodes

import (
	"context"
	"errors"
	"fmt"
)

// ErrPauseInProcess is what Pause and Resume of an in-process node return:
// a goroutine cannot be frozen the way SIGSTOP freezes a process.
var ErrPauseInProcess = errors.New("nodes: node-pause needs the process backend (in-process nodes cannot be frozen)")

// Kill stops the node. In-process there is no SIGKILL: CometBFT's own
// Stop runs (consensus finishes its step, the WAL and the stores are
// flushed and closed), so unlike a killed process nothing written is
// lost; the node is down and silent all the same. Killing a killed node
// does nothing.
func (n *inProcessNode) Kill(context.Context) error {
	return n.life.end(n.name, "kill", func(r *inProcessRun) error {
		err := r.stop()
		if n.app != nil {
			err = errors.Join(err, n.app.kill())
		}
		return err
	})
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
	return n.life.restart(n.name,
		func(r *inProcessRun) error {
			if err := n.endRun(ctx, r); err != nil {
				return fmt.Errorf("node %s: stop: %w", n.name, err)
			}
			return nil
		},
		func() (*inProcessRun, error) {
			// A start that fails on a taken port would leave the home's
			// databases open (CometBFT opens them before it listens):
			// check first.
			c := n.spec.Config
			if err := portsFree(c.P2P.ListenAddress, c.RPC.ListenAddress); err != nil {
				return nil, fmt.Errorf("node %s: %w", n.name, err)
			}
			return n.launch(ctx)
		})
}
