package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	vdocker "github.com/valnet/valnet/docker"
	"github.com/valnet/valnet/nodes"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/sim"
)

// openBackend opens the backend a scenario's run.backend (or --backend)
// names for one run. This table is the only place the runner knows a
// backend by name; what differs between backends sits behind the
// abilities of nodes/abilities.go.
var backendOpeners = map[string]func(ctx context.Context, runID string, opts Options) (nodes.Backend, error){
	"inprocess": func(context.Context, string, Options) (nodes.Backend, error) {
		return nodes.InProcess{}, nil
	},
	"process": func(_ context.Context, _ string, opts Options) (nodes.Backend, error) {
		return nodes.Process{Command: opts.NodeCommand}, nil
	},
	"docker": func(ctx context.Context, runID string, _ Options) (nodes.Backend, error) {
		return vdocker.Open(ctx, runID)
	},
	scenarios.BackendSim: func(context.Context, string, Options) (nodes.Backend, error) {
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

func openBackend(ctx context.Context, name, runID string, opts Options) (nodes.Backend, error) {
	open, ok := backendOpeners[name]
	if !ok {
		return nil, fmt.Errorf("unknown backend %q (allowed: %s)", name, strings.Join(BackendNames(), ", "))
	}
	return open(ctx, runID, opts)
}
