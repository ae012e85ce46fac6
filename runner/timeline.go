package runner

import (
	"context"
	"errors"
	"time"

	"github.com/valnet/valnet/internal/faultcore"
	"github.com/valnet/valnet/internal/links"
	"github.com/valnet/valnet/network"
	"github.com/valnet/valnet/nodes"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers"
)

// timeline is the runner's adapter of the fault core (internal/faultcore):
// the core decides what each fault does and when; this carries it out on
// the run's signers, link fabric and nodes. It is stepped from the
// runner's poll loop, one goroutine; node control runs off the loop
// (nodeOps), in order per target, under the run's context.
type timeline struct {
	r       *run
	core    *faultcore.Core
	nodes   *nodeOps // from begin
	signers map[string]*validatorSigner
	byNode  map[string]nodes.Node
}

var _ faultcore.Effects = (*timeline)(nil)

func newTimeline(r *run) (*timeline, error) {
	t := &timeline{r: r, signers: map[string]*validatorSigner{}, byNode: map[string]nodes.Node{}}
	for i, m := range r.members {
		t.signers[m.plan.Name] = r.signers[i]
		if i < len(r.nodes) {
			t.byNode[m.plan.Name] = r.nodes[i]
		}
	}
	core, err := faultcore.New(r.plan.Faults, r.names(), r.seed, t)
	if err != nil {
		return nil, err
	}
	t.core = core
	return t, nil
}

// begin starts the clock of faults at netStart, when the nodes were up.
// Node control runs under ctx, the run's: close cancels what is left.
func (t *timeline) begin(ctx context.Context, netStart time.Time) {
	t.nodes = newNodeOps(ctx)
	t.core.Begin(netStart)
}

// step starts and ends every fault that is due. committed is the last
// committed height: consensus is at the one after it.
func (t *timeline) step(now time.Time, committed int64) { t.core.Step(now, committed+1) }

// close cancels node control still going and waits for it to return, so
// nothing of a fault races the shutdown.
func (t *timeline) close() {
	if t.nodes != nil {
		t.nodes.close()
	}
}

func (t *timeline) Emit(_ int, f scenarios.FaultPlan, state, detail string) {
	t.r.rec.Emit(eventlog.Event{Time: time.Now(), Kind: eventlog.KindFault, Validator: f.Target,
		Action: f.Action, State: state, Detail: detail, Height: f.At.Height})
}

func (t *timeline) SignerFaults(target string) *signers.Faults { return t.signers[target].built.Faults }

// SignerOutage: a signer valnet does not run is cut at the node's end of
// the link; valnet's own stops serving.
func (t *timeline) SignerOutage(target string, cut bool, _ time.Duration) bool {
	vs := t.signers[target]
	if ext := vs.external; ext != nil {
		ext.Cut(cut)
		return true
	}
	if cut {
		_ = vs.server.Stop()
	} else {
		_ = vs.server.Start()
	}
	return false
}

func (t *timeline) SignerRestart(target string, up bool, _ time.Duration) error {
	vs := t.signers[target]
	if up {
		return vs.server.Start()
	}
	_ = vs.server.Stop()
	return vs.built.Restart(nil)
}

var errNoFabric = errors.New("no network fabric")

func (t *timeline) Block(pairs []links.Pair, blocked bool) error {
	if t.r.fabric == nil {
		return errNoFabric
	}
	for _, p := range pairs {
		t.r.fabric.SetBlocked(p[0], p[1], blocked)
	}
	return nil
}

func (t *timeline) Isolate(target string, isolated bool) error {
	if t.r.fabric == nil {
		return errNoFabric
	}
	t.r.fabric.Isolate(target, isolated)
	return nil
}

func (t *timeline) Link(from, to string) network.Link       { return t.r.linkNow(from, to) }
func (t *timeline) SetLink(from, to string, l network.Link) { t.r.setLink(from, to, l) }

func (t *timeline) Controls(target string) error {
	if _, ok := t.byNode[target].(nodes.Controller); !ok {
		return errors.New("this backend cannot control nodes")
	}
	return nil
}

// NodeDo queues job on the target's node queue: a control call can take
// long (a process backend waits for the node to be up).
func (t *timeline) NodeDo(target string, job func(faultcore.NodeControl)) {
	n := t.byNode[target]
	t.nodes.do(target, func(ctx context.Context) { job(nodeControl{ctx: ctx, n: n}) })
}

func (t *timeline) Cosigner(target string) (faultcore.Cosigners, int) {
	v, k, ok := scenarios.ParseCosignerEndpoint(target)
	if !ok {
		return nil, 0
	}
	vs := t.signers[v]
	if vs == nil || vs.cluster == nil {
		return nil, 0
	}
	return vs.cluster, k
}

// nodeControl is one node within a node job: each call returns once the
// change has happened.
type nodeControl struct {
	ctx context.Context
	n   nodes.Node
}

func (c nodeControl) Down(how faultcore.NodeDown) error {
	ctl := c.n.(nodes.Controller)
	switch how {
	case faultcore.Pause:
		return ctl.Pause(c.ctx)
	case faultcore.Halt:
		if h, ok := c.n.(nodes.Halter); ok {
			return h.Halt(c.ctx) // a clean stop where the backend can
		}
	}
	return ctl.Kill(c.ctx)
}

func (c nodeControl) Up(resume bool, done func(error)) {
	ctl := c.n.(nodes.Controller)
	if resume {
		done(ctl.Resume(c.ctx))
		return
	}
	done(ctl.Restart(c.ctx))
}
