package nodes

import (
	"fmt"
	"sync"
)

// Lifecycle serialises a node's Stop and Controller methods: Stop runs
// once (later calls return its error), and control after it is refused.
// The node of every backend holds one.
type Lifecycle struct {
	mu      sync.Mutex
	stopped bool
	stopErr error
}

// errStopped is returned by a Controller method called after Stop.
func errStopped(name string) error { return fmt.Errorf("node %s: already stopped", name) }

// Control runs f for node name, unless the node is stopped.
func (l *Lifecycle) Control(name string, f func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return errStopped(name)
	}
	return f()
}

// Stop runs stop the first time it is called; every call returns its
// error.
func (l *Lifecycle) Stop(stop func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.stopped = true
		l.stopErr = stop()
	}
	return l.stopErr
}

// Discard runs discard unless the node is stopped, and marks it stopped:
// the cleanup of a node nobody stopped (a start that failed half-way, a
// run closed under it). Its error is not Stop's: a later Stop returns nil.
func (l *Lifecycle) Discard(discard func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return nil
	}
	l.stopped = true
	return discard()
}

// incarnations is the lifecycle of a node that runs as one incarnation at
// a time (a process, an in-process CometBFT node): Kill and Halt end the
// current one, Restart starts the next, Stop ends the node.
type incarnations[T any] struct {
	Lifecycle
	cur *T // nil once killed, halted or stopped
}

// end ends the current incarnation, if one runs, with end (a kill, a clean
// stop: what, in errors); it is gone afterwards, even if end failed.
func (in *incarnations[T]) end(name, what string, end func(*T) error) error {
	return in.Control(name, func() error {
		if in.cur == nil {
			return nil
		}
		err := end(in.cur)
		in.cur = nil
		if err != nil {
			return fmt.Errorf("node %s: %s: %w", name, what, err)
		}
		return nil
	})
}

// restart ends the current incarnation, if one runs, and starts the next.
func (in *incarnations[T]) restart(name string, end func(*T) error, start func() (*T, error)) error {
	return in.Control(name, func() error {
		if in.cur != nil {
			err := end(in.cur)
			in.cur = nil
			if err != nil {
				return fmt.Errorf("restart: %w", err)
			}
		}
		next, err := start()
		if err != nil {
			return fmt.Errorf("restart: %w", err)
		}
		in.cur = next
		return nil
	})
}

// with runs f on the current incarnation (nil when none runs).
func (in *incarnations[T]) with(name string, f func(*T) error) error {
	return in.Control(name, func() error { return f(in.cur) })
}

// stop ends the node for good: the current incarnation, if one runs, with
// end, then release (what the node holds across incarnations).
func (in *incarnations[T]) stop(end func(*T) error, release func() error) error {
	return in.Stop(func() error {
		var err error
		if in.cur != nil {
			err = end(in.cur)
			in.cur = nil
		}
		if rerr := release(); err == nil {
			err = rerr
		}
		return err
	})
}
