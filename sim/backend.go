// Package sim is valnet's sim backend: a discrete-event MODEL of CometBFT
// v1.0 consensus in virtual time. One event queue, no goroutine per node
// and no wall clock: a run of the same scenario and seed writes the same
// events.jsonl, byte for byte, thousands of times faster than real time,
// for networks no single host can run. Its rules follow CometBFT's
// internal/consensus/state.go and reactor.go (docs/sim.md cites each);
// its delays come from the same latency models, device profiles, shared
// devices and fault timeline as real runs; its processing costs come
// from a calibration fitted to real runs (valnet calibrate).
package sim

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cometbft/cometbft/crypto"

	"github.com/valnet/valnet/internal/action"
	"github.com/valnet/valnet/internal/cmtversion"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
)

// ModelName names the model in run_start and every report.
const ModelName = "valnet-sim"

// Backend is the sim as a valnet backend. It starts no node: the runner
// hands it the whole network (Simulate) and records what it emits.
type Backend struct{}

func (Backend) Name() string { return scenarios.BackendSim }

// Check says, before anything starts, whether the sim can run plan: its
// calibration must load and every signer must be one the model can time.
func Check(plan *scenarios.Plan) error {
	p, _, err := paramsFor(plan)
	if err != nil {
		return err
	}
	devices := map[string]*deviceQueue{}
	for name := range plan.Devices {
		devices[name] = &deviceQueue{name: name}
	}
	var errs []error
	for _, v := range plan.Validators {
		if _, err := newSigner(plan, p, v, plan.Run.Seed, devices); err != nil {
			errs = append(errs, err)
		}
	}
	for _, f := range plan.Faults {
		if f.Action == action.Isolate && strings.HasSuffix(f.Target, scenarios.SignerEndpointSuffix) {
			errs = append(errs, fmt.Errorf("%s: the sim does not model cutting a signer link (isolate %s); signer-outage models a lost signer", f.Pos, f.Target))
		}
	}
	return errors.Join(errs...)
}

// Notes say what the model simplifies, in run_start and reports.
var Notes = []string{
	"no real nodes, signatures or blocks: block ids are hashes of height and round",
	"in a full mesh a message goes over its direct link only (no relay through a third node)",
	"mempool gossip is instant: every proposer reaps the same transactions (its bytes do take the links' bandwidth)",
	"a restarted node replays nothing: it starts its height over and catches up one block per round trip",
	"processing costs are a calibration's figures, not this host's CPU",
}

// Simulate runs plan in virtual time with seed, sending every event to
// sink: start (run_start, filled in by the runner) first, with its time,
// the validators' signer labels and the model filled in; then node_up,
// rounds, steps, proposals, votes (up to VoteEventsMax validators),
// signatures, blocks, faults, transactions and devices, as the real
// backends record them. keys are the validators' public keys in plan
// order. It returns the stop reason; an error means the model could not
// run.
func (Backend) Simulate(ctx context.Context, plan *scenarios.Plan, seed int64, keys []crypto.PubKey, start eventlog.Event, sink eventlog.Sink) (string, error) {
	p, line, err := paramsFor(plan)
	if err != nil {
		return "", err
	}
	if len(keys) != len(plan.Validators) {
		return "", fmt.Errorf("sim: %d keys for %d validators", len(keys), len(plan.Validators))
	}
	// The model's events go on in batches (eventlog.Batcher) when the sink
	// takes them; the deferred flush hands on the last, a panic's too.
	sink, flush := eventlog.NewBatcher(sink)
	defer flush()
	w, err := newWorld(plan, p, seed, keys, plan.Run.Sim.SharedCores, sink.Emit)
	if err != nil {
		return "", err
	}
	start.Time = w.epoch
	for i := range start.Validators {
		if i < len(w.signers) {
			start.Validators[i].Signer = w.signers[i].label
		}
	}
	notes := w.notes()
	if line.Name != cmtversion.Default().Name {
		notes = append(notes, fmt.Sprintf("CometBFT %s's defaults (node.version): flush_throttle_timeout %v; the processing costs are the calibration's, fitted on v1.0 nodes",
			line.Name, line.FlushThrottle))
	}
	start.Model = &eventlog.ModelInfo{Name: ModelName, Calibration: p.Name, VoteEvents: w.voteEvents, Notes: notes}
	sink.Emit(start)
	reason, err := w.run(ctx)
	w.recordDevices()
	return reason, err
}

// notes are Notes with this run's settings.
func (w *world) notes() []string {
	out := append([]string(nil), Notes...)
	if w.cores != nil {
		out = append(out, fmt.Sprintf("every node's processing shares %d cores (run.sim.shared_cores)", w.cores.k))
	} else {
		out = append(out, "every node has its own CPU (a real chain's deployment)")
	}
	if !w.voteEvents {
		out = append(out, fmt.Sprintf("vote receipts are not recorded above %d validators", VoteEventsMax))
	}
	return out
}

// recordDevices writes each shared device's account at the end of the
// run, as the runner's devices do.
func (w *world) recordDevices() {
	for _, name := range w.deviceNames {
		d := w.devices[name]
		busy := d.busy - max(d.busyUntil-w.now, 0) // a signature still going counts up to now
		smp := &eventlog.DeviceSample{Name: name, Profile: d.profile, Signatures: d.signatures,
			BusyMS: msOf(timeDur(busy)), WallMS: msOf(timeDur(w.now))}
		if d.bg != nil {
			smp.BackgroundSignatures, smp.BackgroundChains = d.bg.served, d.bg.n
		}
		w.emit(eventlog.Event{Time: w.at(w.now), Kind: eventlog.KindDevice, Device: smp})
	}
}

func timeDur(ns int64) time.Duration { return time.Duration(ns) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
