package runner

import (
	"context"
	"sync"
	"time"
)

// nodeOpTimeout bounds one node-control call of a fault.
const nodeOpTimeout = 60 * time.Second

// nodeOps runs the node-control calls of faults off the runner's poll
// loop, so a slow stop or restart never holds up Ctrl-C, max_duration or
// the other faults. Calls on one target run one after another, in the order
// given (a fault's way back after the fault); calls on different targets
// run at once. Every call gets the run's context.
type nodeOps struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	last   map[string]chan struct{} // per target: closed when its last call is done
}

func newNodeOps(ctx context.Context) *nodeOps {
	ctx, cancel := context.WithCancel(ctx)
	return &nodeOps{ctx: ctx, cancel: cancel, last: map[string]chan struct{}{}}
}

// do queues op for target and returns at once. It is called from one
// goroutine (the poll loop).
func (o *nodeOps) do(target string, op func(ctx context.Context)) {
	prev := o.last[target]
	done := make(chan struct{})
	o.last[target] = done
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		defer close(done)
		if prev != nil {
			<-prev // returns soon once the run's context ends
		}
		if o.ctx.Err() != nil {
			return // the run is over: what is left of the timeline does not happen
		}
		ctx, cancel := context.WithTimeout(o.ctx, nodeOpTimeout)
		defer cancel()
		op(ctx)
	}()
}

// close cancels every call still going or queued and waits for them to
// return.
func (o *nodeOps) close() {
	o.cancel()
	o.wg.Wait()
}
