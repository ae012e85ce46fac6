// Package runner turns a scenario plan into a running network and a run
// directory: plan keys, homes and ports; start signers and nodes; record
// events; wait on observed progress with a deadline; stop everything;
// derive the summary from events.jsonl.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/types"
	"github.com/jonboulle/clockwork"

	"github.com/valnet/valnet/network"
	"github.com/valnet/valnet/nodes"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
)

// Options tune a run; the zero value runs quietly into the default dir.
type Options struct {
	OutDir   string    // default: DefaultOutDir
	Seed     *int64    // overrides the scenario's run.seed
	Keep     bool      // leave the network up after the run until ctx ends
	Status   io.Writer // live progress; nil: none
	Terminal bool      // Status is a terminal: one line rewritten in place
	Backend  Backend   // default: the scenario's run.backend (a nodes.Backend or a Simulator)
	// NodeCommand runs `valnet node` for the process backend; default:
	// this executable's node subcommand (tests set a built valnet).
	NodeCommand []string
	// Metrics, when set, serves live Prometheus metrics on this address
	// (e.g. 127.0.0.1:9100) while the run goes.
	Metrics string
	// OnMetrics is called with the address metrics are served on.
	OnMetrics func(addr string)
	// OnKeep is called when Keep is set and the run is done and summarised,
	// before waiting for ctx to end (the CLI prints the addresses).
	OnKeep func(*Outcome, NetworkInfo)
	// Force, once done, makes the stop after ctx ended quick (a second
	// Ctrl-C): nodes are killed rather than stopped cleanly and the
	// runner waits for no node that cannot be killed. nil: never.
	Force context.Context
}

// Outcome is what a finished run produced.
type Outcome struct {
	OutDir  string
	Summary *results.Summary
	// Interrupted is the stage (results.Stage*) Ctrl-C arrived in, if it
	// did; it may be later than the summary's interrupted_stage (a
	// Ctrl-C while the report was written).
	Interrupted string
}

// NetworkInfo is network.json: how to reach the running validators.
type NetworkInfo struct {
	Scenario   string             `json:"scenario"`
	ChainID    string             `json:"chain_id"`
	Validators []NetworkValidator `json:"validators"`
	// Nodes are the nodes that are not validators (full nodes, seeds,
	// sentries).
	Nodes []NetworkNode `json:"nodes,omitempty"`
	// Cleanup removes what the run left in Docker, should valnet be killed
	// before it could (docker backend only).
	Cleanup string `json:"cleanup,omitempty"`
}

// NetworkValidator is one entry of network.json.
type NetworkValidator struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	RPC     string `json:"rpc"`
	P2P     string `json:"p2p"`
	Home    string `json:"home"`
}

// NetworkNode is a node of network.json that is not a validator.
type NetworkNode struct {
	NetworkValidator
	Role     string `json:"role"`
	SentryOf string `json:"sentry_of,omitempty"`
}

// startAttempts bounds retries of a network start whose ports were taken
// between picking and binding them.
const startAttempts = 3

// Run runs plan to the end and returns its outcome. An error means the run
// could not be done; its run directory then still holds what was recorded.
// A run that was done returns the summary, whose OK says whether every
// expectation held.
func Run(ctx context.Context, plan *scenarios.Plan, opts Options) (*Outcome, error) {
	seed := plan.Run.Seed
	if opts.Seed != nil {
		seed = *opts.Seed
	}
	if ps := Preflight(ctx, plan); len(ps) > 0 {
		return nil, ps // before a run directory exists
	}
	if opts.OutDir == "" {
		opts.OutDir = DefaultOutDir(plan.Name, time.Now())
	}
	if err := prepareOutDir(opts.OutDir); err != nil {
		return nil, err
	}
	if err := copyScenario(plan, filepath.Join(opts.OutDir, ScenarioFile)); err != nil {
		return nil, err
	}
	w, err := eventlog.NewWriter(filepath.Join(opts.OutDir, EventsFile))
	if err != nil {
		return nil, err
	}
	clock := clockwork.NewRealClock()
	r := &run{plan: plan, seed: seed, opts: opts, rec: newRecorder(w), writer: w, clock: clock, start: clock.Now()}
	r.stage.set(ctx, eventlog.StageSetup)
	defer context.AfterFunc(ctx, r.stage.interrupt)()
	// abort ends a run that could not be done before its network started.
	// Interrupted, it is still recorded (run_start with what the plan
	// says, run_end interrupted) and summarised: Ctrl-C at any moment
	// leaves a readable summary.
	abort := func(err error) (*Outcome, error) {
		r.stage.note(ctx)
		if r.stage.interruptedAt() == "" {
			r.rec.seal()
			w.Close()
			return &Outcome{OutDir: opts.OutDir}, err
		}
		if r.backend == nil {
			r.backendName = plan.Run.Backend
		}
		return r.conclude(ctx, err)
	}
	backend := opts.Backend
	if backend == nil {
		if backend, err = openBackend(ctx, plan.Run.Backend, filepath.Base(opts.OutDir), opts); err != nil {
			return abort(err)
		}
	}
	if rel, ok := backend.(nodes.Releaser); ok {
		// Runs last, after the nodes are stopped (also with --keep and on
		// Ctrl-C): whatever the backend holds for the run goes.
		defer rel.Release()
	}
	r.backend = backend
	if c, ok := backend.(nodes.LeftoverCleaner); ok {
		// A runner killed earlier may have left nodes behind.
		if _, err := c.CleanLeftovers(ctx); err != nil {
			return abort(fmt.Errorf("cleaning up nodes of an earlier run: %w", err))
		}
	}
	r.remoteSigning, _ = backend.(nodes.RemoteSigning)
	r.addresser, _ = backend.(nodes.Addresser)
	if opts.Metrics != "" {
		m, err := startMetrics(opts.Metrics)
		if err != nil {
			return abort(err)
		}
		defer m.Close()
		r.rec.metrics = m
		if opts.OnMetrics != nil {
			opts.OnMetrics(m.Addr())
		}
	}
	var runErr error
	if s, ok := backend.(Simulator); ok {
		r.runStarted = true // the model records its own run_start
		runErr = r.simulate(ctx, s)
	} else {
		runErr = r.execute(ctx)
	}
	return r.conclude(ctx, runErr)
}

// conclude stops what runs (unless --keep holds the network up), records
// run_end and writes the summary.
func (r *run) conclude(ctx context.Context, runErr error) (*Outcome, error) {
	r.stage.note(ctx)
	if runErr != nil && r.stage.interruptedAt() != "" {
		// Ctrl-C cut the run short before its network ran (a node start
		// or a signer open gave up on the cancelled context): recorded as
		// an interruption, with the error that it caused.
		r.reason, r.endErr, runErr = eventlog.StopInterrupted, runErr.Error(), nil
	}
	if !r.runStarted && r.stage.interruptedAt() != "" {
		// Interrupted before run_start: what the plan says (signers not
		// opened yet), so that the run still has a summary.
		r.runStarted = true
		r.writer.Emit(planRunStart(r))
	}
	keep := r.opts.Keep && runErr == nil && r.reason != eventlog.StopInterrupted
	if !keep {
		r.stage.set(ctx, eventlog.StageStop)
		holdForTest(eventlog.StageStop, r.opts.Status, r.force())
		for _, err := range r.shutdown() {
			// Sealed recorder: write straight to the stream, before run_end.
			r.writer.Emit(eventlog.Event{Time: time.Now(), Kind: eventlog.KindNodeError, Error: err.Error()})
		}
	}
	out, finishErr := r.finish(ctx, runErr)
	if keep {
		// The run is recorded and summarised; the network stays up for
		// debugging until ctx ends (Ctrl-C).
		if r.opts.OnKeep != nil {
			r.opts.OnKeep(out, r.network)
		}
		<-ctx.Done()
		if errs := r.shutdown(); len(errs) > 0 && finishErr == nil {
			finishErr = errors.Join(errs...)
		}
	}
	if runErr != nil {
		return out, runErr
	}
	return out, finishErr
}

type run struct {
	plan   *scenarios.Plan
	seed   int64
	opts   Options
	rec    *recorder
	writer *eventlog.Writer
	live   *liveSummary // a model's run: its summary, made while it runs

	members []*member
	signers []*validatorSigner
	sockDir string          // unix sockets of remote signers; removed at the end
	fabric  *network.Fabric // user-space links; nil when no link is shaped
	links   map[[2]string]network.Link
	nodes   []nodes.Node // the validators' (in r.members' order), then the others'
	others  []*member    // the nodes that are not validators (peernodes.go)
	network NetworkInfo
	// clock times the poll loop (max_duration, the fault timeline) and
	// the load's pacing: the real one, a fake in the loop's tests.
	clock  clockwork.Clock
	start  time.Time
	reason string
	endErr string // run_end's error of an interrupted run
	stage  stageTracker
	// runStarted: run_start is recorded; backendName names the backend
	// when none could be opened (an interrupted docker engine connect).
	runStarted  bool
	backendName string
	// end is when the run ended in a simulator's virtual time; zero for
	// real backends, whose run_end is the wall clock.
	end time.Time

	load *loadGen // the transaction load; nil without one

	backend  Backend
	stopHost func()      // ends the host monitor; nil before it starts
	devices  *runDevices // shared signing devices; nil before openSigners
	// remoteSigning: nodes run in their own processes (or containers), so
	// every signer runs here and reaches its node over the remote-signer
	// protocol (the node listens on priv_validator_laddr); nil in-process.
	remoteSigning nodes.RemoteSigning
	// addresser: the backend assigns the nodes' addresses; nil: loopback
	// ports picked here.
	addresser nodes.Addresser
}

func (r *run) execute(ctx context.Context) error {
	fl, ps := resolveFlavors(ctx, r.plan) // read in preflight; the binaries' answers are kept
	if len(ps) > 0 {
		return ps
	}
	members, err := layoutNetwork(r.plan, r.seed, r.opts.OutDir, fl)
	if err != nil {
		return err
	}
	r.members = members
	if r.others, err = layoutPeerNodes(r.plan, r.seed, r.opts.OutDir, fl); err != nil {
		return err
	}
	if p, ok := r.backend.(nodes.Preparer); ok {
		if err := p.Prepare(ctx, nodes.Layout{Names: r.nodeNames(), NeedsFabric: r.plan.NeedsFabric()}); err != nil {
			return err
		}
	}
	// The fabric before the signers: a signer link (signer.link) goes
	// through it.
	if r.plan.NeedsFabric() {
		// Proxy ports come from the same picker as the nodes' ports, so a
		// proxy never takes a port a node is about to bind.
		opts := network.Options{PickPort: nodes.FreePort}
		if r.addresser != nil {
			// The nodes reach the proxies where the backend says.
			opts.ListenHost = r.addresser.FabricHost()
		}
		r.fabric = network.NewFabric(opts)
		if err := r.shapeLinks(); err != nil {
			return err
		}
	}
	// Signers first: a wrong passphrase or a missing profile must stop the
	// run before any node starts, and the genesis needs their keys.
	infos, pubs, err := r.openSigners(ctx)
	if err != nil {
		return err
	}
	gen, err := makeGenesis(r.plan, members, pubs)
	if err != nil {
		return err
	}
	names := map[string]string{}
	for i, m := range members {
		names[m.address] = m.plan.Name
		infos[i].Address = m.address
	}
	r.stopHost = startHostMonitor(ctx, r.rec.Emit)
	r.runStarted = true
	r.rec.Emit(r.runStart(infos))
	r.startDevices(ctx) // with the network: background load and utilisation count from here
	r.stage.set(ctx, eventlog.StageStart)
	if err := r.startNodes(ctx, gen, names); err != nil {
		return err
	}
	if r.network, err = r.writeNetwork(); err != nil {
		return err
	}
	netStart := r.clock.Now()
	faults, err := newTimeline(r)
	if err != nil {
		return err
	}
	if lp := r.plan.Load; lp != nil {
		targets := make([]loadTarget, len(r.members)) // the validators' nodes
		for i, n := range r.nodes[:len(r.members)] {
			targets[i] = loadTarget{name: n.Name(), node: n}
		}
		live := func() bool { return r.rec.tracker.Snapshot().Height >= 1 }
		r.load = startLoad(ctx, r.clock, *lp, r.seed, targets, r.rec.nodeDown, r.rec.Emit, live)
	}
	r.stage.set(ctx, eventlog.StageRun)
	r.reason = r.wait(ctx, faults, netStart)
	r.load.stop()
	return nil
}

// loadInfo is the plan's load as run_start records it.
func loadInfo(lp *scenarios.LoadPlan) *eventlog.LoadInfo {
	if lp == nil {
		return nil
	}
	return &eventlog.LoadInfo{Rate: lp.Rate, SizeBytes: lp.Size, To: lp.To,
		StartMS: lp.Start.Milliseconds(), DurationMS: lp.Duration.Milliseconds()}
}

// openSigners opens every validator's signer chain and returns the labels
// and public keys.
func (r *run) openSigners(ctx context.Context) ([]eventlog.ValidatorInfo, []crypto.PubKey, error) {
	var sockDir string
	for _, m := range r.members {
		if (m.plan.Signer.Via == scenarios.ViaUnix || r.remoteSigning != nil && m.plan.Signer.Via != scenarios.ViaTCP) && sockDir == "" {
			// Unix socket paths are limited to ~108 bytes: keep them short,
			// outside the (possibly deep) run directory.
			dir, err := nodes.MkRunTempDir("sock")
			if err != nil {
				return nil, nil, err
			}
			sockDir, r.sockDir = dir, dir
		}
	}
	if err := r.openDevices(); err != nil {
		return nil, nil, err
	}
	infos := make([]eventlog.ValidatorInfo, 0, len(r.members))
	pubs := make([]crypto.PubKey, 0, len(r.members))
	for _, m := range r.members {
		vs, err := r.openSigner(ctx, m, sockDir)
		if err != nil {
			return nil, nil, err
		}
		r.signers = append(r.signers, vs)
		label := vs.built.Label
		switch via := m.plan.Signer.Via; {
		case via == scenarios.ViaTCP || via == scenarios.ViaUnix:
			label += " via " + via
		case r.remoteSigning != nil:
			label += " via unix (node in its own process)"
		}
		infos = append(infos, eventlog.ValidatorInfo{Name: m.plan.Name, Power: m.plan.Power, Signer: label, Device: m.plan.Signer.Device,
			Node: m.flavor.Label()})
		pubs = append(pubs, vs.built.PubKey)
	}
	return infos, pubs, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (r *run) startNodes(ctx context.Context, gen *types.GenesisDoc, names map[string]string) error {
	var lastErr error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		if err := r.assignPorts(); err != nil {
			return err
		}
		lastErr = r.startAll(ctx, gen, names)
		if lastErr == nil {
			return nil
		}
		_ = r.stopNodes()
		if !isAddrInUse(lastErr) || ctx.Err() != nil {
			break
		}
	}
	return lastErr
}

func (r *run) startAll(ctx context.Context, gen *types.GenesisDoc, names map[string]string) error {
	// The nodes that are not validators start first, as in production: a
	// guarded validator dials its sentries alone, and everyone dials the
	// seeds; started after the validators, they would leave a guarded
	// validator without a peer while the others commit. r.nodes ends in
	// allMembers' order (the validators', then the others').
	all := r.allMembers()
	order := make([]int, 0, len(all))
	for i := len(r.members); i < len(all); i++ {
		order = append(order, i)
	}
	for i := range r.members {
		order = append(order, i)
	}
	started := make([]nodes.Node, len(all))
	for _, i := range order {
		m := all[i]
		spec := nodes.Spec{Name: m.plan.Name, Config: m.config, Genesis: gen, NodeKey: m.nodeKey,
			Names: names, Sink: r.rec, Binary: m.binary(r.plan), Flavor: m.flavor}
		if !m.flavor.Own() {
			spec.NodeConfig = configSettings(m.plan.Node) // valnet's own node has them in Config
		}
		if a := r.plan.App; a != nil {
			spec.App = &nodes.AppSpec{Command: a.Command, Transport: a.Transport}
		}
		if m.peer != nil {
			pv := peerNodeSigner(m)
			spec.Signer = pv
			if err := nodes.WriteHome(spec); err != nil {
				return err
			}
			pv.Save() // into its home, where a process or a container reads it
		} else {
			if pv := r.signers[i].node; pv != nil {
				spec.Signer = pv
			}
			if err := nodes.WriteHome(spec); err != nil {
				return err
			}
		}
		nb, ok := r.backend.(nodes.Backend)
		if !ok {
			return fmt.Errorf("backend %s starts no nodes", r.backend.Name())
		}
		n, err := nb.Start(ctx, spec)
		if err != nil {
			return err
		}
		r.nodes = append(r.nodes, n) // start order: shutdown stops whatever started
		started[i] = n
		a := n.Addrs()
		r.rec.Emit(eventlog.Event{Time: time.Now(), Kind: eventlog.KindNodeUp, Node: n.Name(), RPC: a.RPC, P2P: a.P2P})
	}
	r.nodes = started
	return nil
}

func isAddrInUse(err error) bool {
	return err != nil && strings.Contains(err.Error(), "address already in use")
}

func (r *run) writeNetwork() (NetworkInfo, error) {
	info := NetworkInfo{Scenario: r.plan.Name, ChainID: r.plan.ChainID}
	if k, ok := r.backend.(nodes.KeepInfo); ok {
		info.Cleanup = k.KeepCommand()
	}
	all := r.allMembers()
	for i, n := range r.nodes {
		a := n.Addrs()
		nv := NetworkValidator{Name: n.Name(), Address: all[i].address, RPC: a.RPC, P2P: a.P2P, Home: all[i].config.RootDir}
		if p := all[i].peer; p != nil {
			info.Nodes = append(info.Nodes, NetworkNode{NetworkValidator: nv, Role: p.Role, SentryOf: p.SentryOf})
			continue
		}
		info.Validators = append(info.Validators, nv)
	}
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return info, err
	}
	return info, os.WriteFile(filepath.Join(r.opts.OutDir, NetworkFile), append(data, '\n'), 0o644)
}

// shutdown stops recording, releases any signature still waiting in a
// latency model (so no node is held up), and stops every node.
func (r *run) shutdown() []error {
	if r.stopHost != nil {
		r.stopHost()
		r.stopHost = nil
	}
	r.load.stop()   // its last tx events go in before the seal
	r.stopDevices() // records their last account, then frees queued signatures
	r.rec.seal()
	for _, s := range r.signers {
		s.release()
	}
	errs := r.stopNodes()
	r.closeSigners()
	if r.fabric != nil {
		if err := r.fabric.Close(); err != nil {
			errs = append(errs, fmt.Errorf("network fabric: %w", err))
		}
		r.fabric = nil
	}
	return errs
}

// closeSigners stops every signer (both ends of remote hops) and removes
// the socket directory.
func (r *run) closeSigners() {
	for _, s := range r.signers {
		s.close()
	}
	r.stopDevices()
	r.signers = nil
	if r.sockDir != "" {
		_ = os.RemoveAll(r.sockDir)
		r.sockDir = ""
	}
}

// stopNodes stops every started node at once.
func (r *run) stopNodes() []error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, n := range r.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A forced stop (second Ctrl-C) ends the graceful stop at
			// once: nodes in processes and containers are killed.
			ctx, cancel := context.WithTimeout(r.force(), 30*time.Second)
			defer cancel()
			if err := n.Stop(ctx); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("stop %s: %w", n.Name(), err))
				mu.Unlock()
			}
		}()
	}
	waitStopped(&wg, r.force())
	r.nodes = nil
	for _, m := range r.members {
		releasePorts(m)
	}
	return errs
}

// finish closes the event stream and derives the summary files from it.
// It runs whatever happened before, so a failed run keeps its results.
func (r *run) finish(ctx context.Context, runErr error) (*Outcome, error) {
	r.recordDevices() // with --keep the devices still run: their account so far
	r.rec.seal()
	t := time.Now()
	if !r.end.IsZero() {
		t = r.end
	}
	r.stage.note(ctx)
	end := eventlog.Event{Time: t, Kind: eventlog.KindRunEnd, StopReason: r.reason, Error: r.endErr,
		InterruptedStage: r.stage.interruptedAt(), WallMS: max(time.Since(r.start).Milliseconds(), 1)}
	if runErr != nil {
		end.StopReason, end.Error = eventlog.StopError, runErr.Error()
	}
	r.rec.Emit(end)
	closeErr := r.writer.Close()
	z := r.live.result(filepath.Join(r.opts.OutDir, EventsFile)) // ends a live summary either way
	if closeErr != nil {
		return nil, fmt.Errorf("events: %w", closeErr)
	}
	r.stage.set(ctx, eventlog.StageReport)
	holdForTest(eventlog.StageReport, r.opts.Status, r.force())
	out := &Outcome{OutDir: r.opts.OutDir}
	s, err := reportFrom(r.opts.OutDir, z)
	out.Summary = s
	r.stage.note(ctx)
	out.Interrupted = r.stage.interruptedAt()
	return out, err
}

func expectations(p *scenarios.Plan) []eventlog.Expectation {
	out := make([]eventlog.Expectation, 0, len(p.Expect))
	for _, e := range p.Expect {
		out = append(out, eventlog.Expectation{Metric: e.Metric, Validator: e.Validator, Phase: e.Phase, Min: e.Min, Max: e.Max, Default: e.Default})
	}
	return out
}

// copyScenario keeps the scenario text beside its results, so a run dir
// says exactly what was run.
func copyScenario(p *scenarios.Plan, dst string) error {
	if err := os.WriteFile(dst, p.Text, 0o644); err != nil {
		return fmt.Errorf("copy scenario: %w", err)
	}
	return nil
}
