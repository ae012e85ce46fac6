package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/valnet/valnet/results/eventlog"
)

// stageTracker knows the stage a run is in (results.Stage*) and the one
// Ctrl-C arrived in.
type stageTracker struct {
	mu          sync.Mutex
	cur         string
	interrupted string
}

// set moves to stage. A ctx that has ended meanwhile was interrupted in
// the stage being left: recorded first (the context's own AfterFunc may
// not have run yet).
func (s *stageTracker) set(ctx context.Context, stage string) {
	s.note(ctx)
	s.mu.Lock()
	s.cur = stage
	s.mu.Unlock()
}

// interrupt records the current stage as the interrupted one (the first
// call counts); the run's context calls it when it ends.
func (s *stageTracker) interrupt() {
	s.mu.Lock()
	if s.interrupted == "" {
		s.interrupted = s.cur
	}
	s.mu.Unlock()
}

// note records an interrupt in the current stage if ctx has ended (its
// AfterFunc, which does the same, may not have run yet).
func (s *stageTracker) note(ctx context.Context) {
	if ctx.Err() != nil {
		s.interrupt()
	}
}

// interruptedAt is the stage Ctrl-C arrived in; "": none.
func (s *stageTracker) interruptedAt() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.interrupted
}

// planRunStart is the run_start of a run interrupted before its own: the
// plan's scenario, validators and expectations, no signer labels (no
// signer was opened).
func planRunStart(r *run) eventlog.Event {
	name := r.backendName
	if r.backend != nil {
		name = r.backend.Name()
	}
	infos := make([]eventlog.ValidatorInfo, len(r.plan.Validators))
	for i, v := range r.plan.Validators {
		infos[i] = eventlog.ValidatorInfo{Name: v.Name, Power: v.Power, Device: v.Signer.Device}
	}
	e := r.runStart(infos)
	e.Backend = name
	return e
}

// runStart is the run's run_start event, the one place it is built (a
// real run's, a simulated one's, an interrupted one's): the scenario, the
// backend, the validators (infos), the expectations, the halt threshold
// and the load.
func (r *run) runStart(infos []eventlog.ValidatorInfo) eventlog.Event {
	halt, explicit := r.plan.HaltAfter()
	e := eventlog.Event{Time: r.start, Kind: eventlog.KindRunStart, Scenario: r.plan.Name,
		ChainID: r.plan.ChainID, Seed: r.seed, Heights: r.plan.Run.Heights, Validators: infos, Nodes: peerNodeInfos(r.plan),
		Expect: expectations(r.plan), HaltAfterMS: halt.Milliseconds(), HaltAfterExplicit: explicit, Load: loadInfo(r.plan.Load)}
	if r.backend != nil {
		e.Backend = r.backend.Name()
	}
	return e
}

// force is the context that, once done, makes stops quick.
func (r *run) force() context.Context {
	if r.opts.Force != nil {
		return r.opts.Force
	}
	return context.Background()
}

// forcedGrace is how long a forced stop still waits for nodes to go
// (killed processes and containers go within it; an in-process node
// that does not is left to the runner's exit).
const forcedGrace = 3 * time.Second

// waitStopped waits for every stop in wg, or once force is done for at
// most forcedGrace more.
func waitStopped(wg *sync.WaitGroup, force context.Context) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-force.Done():
	}
	select {
	case <-done:
	case <-time.After(forcedGrace):
	}
}

// HoldEnv is a test hook: VALNET_TEST_HOLD=STAGE (stop or report) holds
// the run for holdFor at the start of that stage, or until a forced stop
// (second Ctrl-C), printing a line on the status writer (stderr), so that
// a test can interrupt it there deterministically (report), or stand in
// for a slow stop (stop). Nothing else reads it; unset, it costs one
// Getenv per stage.
const HoldEnv = "VALNET_TEST_HOLD"

const holdFor = 5 * time.Second

func holdForTest(stage string, status io.Writer, force context.Context) {
	if os.Getenv(HoldEnv) != stage {
		return
	}
	if status != nil {
		fmt.Fprintf(status, "valnet: %s=%s: holding %v\n", HoldEnv, stage, holdFor)
	}
	select {
	case <-time.After(holdFor):
	case <-force.Done():
	}
}
