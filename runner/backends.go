package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cometbft/cometbft/crypto"

	vdocker "github.com/valnet/valnet/docker"
	"github.com/valnet/valnet/nodes"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/sim"
)

// Backend is what a run runs on, one of two kinds: a nodes.Backend, which
// starts the nodes one by one (inprocess, process, docker), or a
// Simulator, which runs the whole network itself in virtual time (the
// sim). The runner asks which ability a backend has, never its name.
type Backend interface {
	Name() string
}

// Simulator is a backend that runs the whole network itself, in virtual
// time (sim.Backend): the runner gives it the plan, the validators' keys
// and the run_start event, and records what it emits through the same
// recorder as the nodes of a real backend, so the run directory and
// every report come out of the same code. It returns the stop reason.
type Simulator interface {
	Backend
	Simulate(ctx context.Context, plan *scenarios.Plan, seed int64, keys []crypto.PubKey, start eventlog.Event, sink eventlog.Sink) (stopReason string, err error)
}

var (
	_ Simulator = sim.Backend{}
	_ Backend   = nodes.InProcess{}
)

// openBackend opens the backend a scenario's run.backend (or --backend)
// names for one run. This table is the only place the runner knows a
// backend by name; what differs between backends sits behind the
// abilities of nodes/abilities.go and Simulator.
var backendOpeners = map[string]func(ctx context.Context, runID string, opts Options) (Backend, error){
	"inprocess": func(context.Context, string, Options) (Backend, error) {
		return nodes.InProcess{}, nil
	},
	"process": func(_ context.Context, _ string, opts Options) (Backend, error) {
		return nodes.Process{Command: opts.NodeCommand}, nil
	},
	"docker": func(ctx context.Context, runID string, _ Options) (Backend, error) {
		return vdocker.Open(ctx, runID)
	},
	scenarios.BackendSim: func(context.Context, string, Options) (Backend, error) {
		return sim.Backend{}, nil
	},
}

// backendChecks say, without starting anything, whether a backend can run
// here (Preflight).
var backendChecks = map[string]func(ctx context.Context, plan *scenarios.Plan) error{
	"process":            func(context.Context, *scenarios.Plan) error { return nodes.CheckProcessSupported() },
	"docker":             func(ctx context.Context, _ *scenarios.Plan) error { return vdocker.CheckEngine(ctx) },
	scenarios.BackendSim: func(_ context.Context, plan *scenarios.Plan) error { return sim.Check(plan) },
}

// BackendNames lists the backends the runner can open, sorted.
func BackendNames() []string {
	names := make([]string, 0, len(backendOpeners))
	for n := range backendOpeners {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func openBackend(ctx context.Context, name, runID string, opts Options) (Backend, error) {
	open, ok := backendOpeners[name]
	if !ok {
		return nil, fmt.Errorf("unknown backend %q (allowed: %s)", name, strings.Join(BackendNames(), ", "))
	}
	return open(ctx, runID, opts)
}
