package nodes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valnet/valnet/results/eventlog"
)

// Process runs every validator as its own OS process, from the home the
// runner wrote: `valnet node` (this binary) by default, or a user's own
// CometBFT-compatible binary. Nodes can then be killed, frozen and
// restarted as an operator would (Controller).
//
// A process cannot use Spec.Signer (a Go object in the runner): each
// validator either has priv_validator_laddr in its config.toml, for a
// remote signer the runner serves (signers.ServeRemote dialing that
// address), or a FilePV (priv_validator_key.json and
// priv_validator_state.json) in its home.
type Process struct {
	// Command runs `valnet node`; default: this executable's "node"
	// subcommand. Tests set a freshly built valnet binary.
	Command []string
	// Binary is a user's CometBFT-compatible binary, run as
	// `<Binary> start --home DIR --proxy_app=kvstore`; its events come
	// from its RPC websocket. Empty: Command.
	Binary string
	// StartTimeout bounds how long a node may take to answer RPC /status
	// after it is spawned; default 60 s.
	StartTimeout time.Duration
}

var _ Backend = Process{}

func (Process) Name() string { return "process" }

// Files of a process node's home.
const (
	// StderrFile receives the child's stderr (and stdout for `valnet
	// node`, which logs to node.log); a user binary's stdout, where
	// CometBFT logs, goes to node.log.
	StderrFile = "node.stderr"
)

// errNoProcess is what the process backend says where it cannot run.
var errNoProcess = errors.New("nodes: the process backend needs Linux (Pdeathsig, /proc)")

// stopGrace is how long a node may take to stop after SIGTERM before it
// is killed.
const stopGrace = 10 * time.Second

// Start spawns the node of spec from its home (already written, with its
// FilePV or priv_validator_laddr) and returns once its RPC answers.
func (p Process) Start(ctx context.Context, spec Spec) (Node, error) {
	if !processSupported {
		return nil, errNoProcess
	}
	c := spec.Config
	if c.PrivValidatorListenAddr == "" {
		if _, err := os.Stat(c.PrivValidatorKeyFile()); err != nil {
			return nil, fmt.Errorf("node %s: a process node signs through priv_validator_laddr (a remote signer) or a FilePV in its home, and it has neither: %w", spec.Name, err)
		}
	}
	valSet, err := Validators(spec.Genesis)
	if err != nil {
		return nil, fmt.Errorf("node %s: genesis validators: %w", spec.Name, err)
	}
	var ap *app
	if spec.App != nil {
		if ap, err = newApp(spec.Name, c.RootDir, *spec.App); err != nil {
			return nil, err
		}
	}
	argv, err := p.argv(spec, ap)
	if err != nil {
		if ap != nil {
			ap.release()
		}
		return nil, err
	}
	n := &processNode{
		name: spec.Name, spec: spec, argv: argv, user: p.binary(spec) != "",
		startTimeout: p.StartTimeout,
		tr:           &translator{node: spec.Name, names: spec.Names, valSet: valSet},
		rpc:          "http://" + strings.TrimPrefix(c.RPC.ListenAddress, "tcp://"),
		http:         &http.Client{Timeout: time.Second},
		app:          ap,
	}
	if n.startTimeout <= 0 {
		n.startTimeout = 60 * time.Second
	}
	n.addrs = Addrs{RPC: n.rpc, P2P: NodeID(spec.NodeKey) + "@" + strings.TrimPrefix(c.P2P.ListenAddress, "tcp://")}
	if !n.user && spec.Sink != nil {
		if err := n.listenEvents(); err != nil {
			return nil, fmt.Errorf("node %s: %w", spec.Name, err)
		}
		n.argv = append(n.argv, "--events", "unix://"+n.sockPath)
	}
	cur, err := n.spawn(ctx)
	if err != nil {
		n.closeEvents()
		n.releaseApp()
		return nil, err
	}
	n.life.cur = cur
	return n, nil
}

func (p Process) argv(spec Spec, ap *app) ([]string, error) {
	// Absolute: the child runs in its home, and the orphan check matches
	// the home in its command line.
	home, err := filepath.Abs(spec.Config.RootDir)
	if err != nil {
		return nil, err
	}
	if bin := p.binary(spec); bin != "" {
		if ap != nil {
			return []string{bin, "start", "--home", home, "--proxy_app=" + ap.Addr(), "--abci=" + ap.spec.Transport}, nil
		}
		return []string{bin, "start", "--home", home, "--proxy_app=kvstore"}, nil
	}
	cmd := p.Command
	if len(cmd) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("process backend: own executable: %w", err)
		}
		cmd = []string{exe, "node"}
	}
	argv := append(append([]string{}, cmd...), "--home", home, "--name", spec.Name)
	if ap != nil {
		argv = append(argv, "--proxy-app", ap.Addr(), "--abci", ap.spec.Transport)
	}
	return argv, nil
}

// binary is the validator's own binary (Spec.Binary), else p.Binary.
func (p Process) binary(spec Spec) string {
	if spec.Binary != "" {
		return spec.Binary
	}
	return p.Binary
}

type processNode struct {
	name         string
	spec         Spec
	argv         []string
	user         bool // a user binary: events over RPC
	startTimeout time.Duration
	tr           *translator
	addrs        Addrs
	rpc          string
	http         *http.Client
	height       LastHeight

	// The event socket of `valnet node`, open across restarts.
	sockDir  string
	sockPath string
	events   *EventListener

	// The running child (nil once killed, halted or stopped), and what
	// serialises Stop and the Controller methods.
	life incarnations[child]
	// app is the node's own application process (Spec.App), nil for the
	// built-in kvstore; started before each child, ended after it.
	app *app
}

var (
	_ Node           = (*processNode)(nil)
	_ HeightReporter = (*processNode)(nil)
	_ Controller     = (*processNode)(nil)
)

// child is one spawned incarnation of a node.
type child struct {
	cmd  *exec.Cmd
	pid  int
	done chan struct{} // closed once reaped
	err  error         // exit status, set before done closes
	// ending: valnet is stopping or killing it; an exit without it is
	// the node's own (CometBFT ends itself when its app's connection dies).
	ending atomic.Bool
	// reported: its own exit, or its app's, has its node_error
	reported atomic.Bool
	// A user binary's RPC event stream.
	cancelEvents context.CancelFunc
	events       sync.WaitGroup
}

func (n *processNode) Name() string { return n.name }
func (n *processNode) Addrs() Addrs { return n.addrs }

// Height is the node's last block height from its RPC /status; while the
// node cannot answer (killed, paused) it is the last height it reported.
func (n *processNode) Height(ctx context.Context) int64 {
	return n.height.Update(n.status(ctx))
}

// spawn starts a new incarnation and waits until its RPC answers as this
// node (its node ID), the child exits, or the start timeout passes.
func (n *processNode) spawn(ctx context.Context) (*child, error) {
	c := n.spec.Config
	home, err := filepath.Abs(c.RootDir)
	if err != nil {
		return nil, err
	}
	if err := portsFree(c.P2P.ListenAddress, c.RPC.ListenAddress); err != nil {
		return nil, fmt.Errorf("node %s: %w", n.name, err)
	}
	removeStaleSocket(c.PrivValidatorListenAddr)
	if n.app != nil {
		if err := n.app.start(ctx); err != nil {
			return nil, err
		}
	}
	errFile, err := os.OpenFile(filepath.Join(home, StderrFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		n.killApp()
		return nil, fmt.Errorf("node %s: %w", n.name, err)
	}
	defer errFile.Close() // the child has its own copy
	fmt.Fprintf(errFile, "--- valnet %s: %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(n.argv, " "))
	out := errFile
	if n.user {
		// A stock CometBFT logs to stdout: node.log, like every node.
		logFile, err := os.OpenFile(LogFile(c), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			n.killApp()
			return nil, fmt.Errorf("node %s: %w", n.name, err)
		}
		defer logFile.Close()
		out = logFile
	}
	cmd := exec.Command(n.argv[0], n.argv[1:]...)
	cmd.Dir = home
	cmd.Env = childEnv()
	cmd.Stdout, cmd.Stderr = out, errFile
	cmd.SysProcAttr = childAttr()
	if err := startChild(cmd); err != nil {
		n.killApp()
		return nil, fmt.Errorf("node %s: spawn %s: %w", n.name, n.argv[0], err)
	}
	ch := &child{cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{})}
	regErr := registerChild(ch.pid, home)
	up := make(chan struct{}) // closed once the node answered: a later exit is news
	go func() {
		ch.err = cmd.Wait()
		unregisterChild(ch.pid)
		close(ch.done)
		select {
		case <-up:
			n.exitedOnItsOwn(ch)
		default:
		}
	}()
	fail := func(err error) (*child, error) {
		ch.ending.Store(true)
		_ = signalGroup(ch.pid, sigKill)
		<-ch.done
		n.killApp()
		return nil, fmt.Errorf("node %s: %w", n.name, err)
	}
	if regErr != nil {
		return fail(regErr)
	}
	if err := n.waitUp(ctx, ch); err != nil {
		return fail(err)
	}
	close(up)
	if n.app != nil && n.app.cur != nil {
		// An app that dies mid-call can leave CometBFT hung rather than
		// exited (its consensus waits on the dead call; stop waits on
		// consensus): the app's exit is news by itself.
		p := n.app.cur
		go func() {
			select {
			case <-p.done:
				n.appExitedOnItsOwn(ch, p)
			case <-ch.done:
			}
		}()
	}
	if n.user && n.spec.Sink != nil {
		evCtx, cancel := context.WithCancel(context.Background())
		ch.cancelEvents = cancel
		ch.events.Add(1)
		go func() {
			defer ch.events.Done()
			streamRPCEvents(evCtx, n.rpc, n.tr, n.spec.Sink)
		}()
	}
	return ch, nil
}

// exitedOnItsOwn records a node_error for a node process that exited
// while valnet neither stopped nor killed it: with an app of its own,
// CometBFT ends itself when the app's connection dies. The node stays down
// until a node-start or node-restart fault.
func (n *processNode) exitedOnItsOwn(ch *child) {
	msg := fmt.Sprintf("node process exited on its own (%v); see node.log", ch.err)
	if ch.err == nil {
		msg = "node process exited on its own (exit status 0); see node.log"
	}
	if n.app != nil {
		msg += " and " + AppLogFile + ": CometBFT ends a node whose app connection dies"
	}
	n.ownExit(ch, msg)
}

// appExitedOnItsOwn records a node_error for an app that exited while
// its node ran and valnet was not stopping either.
func (n *processNode) appExitedOnItsOwn(ch *child, p *appProc) {
	n.ownExit(ch, fmt.Sprintf("app process exited on its own (%v) while its node ran; see %s and node.log: "+
		"CometBFT ends a node whose app connection dies, or hangs if the app died inside a call", p.err, AppLogFile))
}

// ownExit emits msg as the node_error of ch's incarnation, unless valnet
// is ending it: its own exit and its app's are one incident, and the
// first valnet sees is the one reported.
func (n *processNode) ownExit(ch *child, msg string) {
	if ch.ending.Load() || n.spec.Sink == nil || !ch.reported.CompareAndSwap(false, true) {
		return
	}
	n.spec.Sink.Emit(eventlog.Event{Time: time.Now(), Kind: eventlog.KindNodeError, Node: n.name, Error: msg})
}

// childEnv is the runner's environment without CMTHOME and TMHOME, which
// a stock cometbft would prefer over --home.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CMTHOME=") && !strings.HasPrefix(kv, "TMHOME=") {
			env = append(env, kv)
		}
	}
	return env
}

// portsFree checks that the node's listen addresses can be bound, so that
// a restart on ports another process took fails with a clear message.
func portsFree(addrs ...string) error {
	for _, a := range addrs {
		hostport := strings.TrimPrefix(a, "tcp://")
		l, err := net.Listen("tcp", hostport)
		if err != nil {
			return fmt.Errorf("port %s is taken (%w); a node restarts on its own ports", hostport, err)
		}
		l.Close()
	}
	return nil
}

// removeStaleSocket removes the stale unix socket of a signer listener
// (laddr unix://PATH); see RemoveStaleSocket.
func removeStaleSocket(laddr string) {
	if path, ok := strings.CutPrefix(laddr, "unix://"); ok {
		RemoveStaleSocket(path)
	}
}

func (n *processNode) status(ctx context.Context) (*StatusResult, error) {
	return RPCStatus(ctx, n.http, n.rpc)
}

// waitUp polls /status until the node answers with its own node ID (not
// some other process that took the port), the child exits or the start
// timeout passes.
func (n *processNode) waitUp(ctx context.Context, ch *child) error {
	ctx, cancel := context.WithTimeout(ctx, n.startTimeout)
	defer cancel()
	st, err := WaitStatus(ctx, n.status, NodeID(n.spec.NodeKey), func() error {
		select {
		case <-ch.done:
			return fmt.Errorf("exited during start (%v): %s", ch.err, n.stderrTail())
		default:
			return nil
		}
	})
	n.height.Update(st, err)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("RPC %s did not answer /status within %v (see %s and node.log in %s)",
			n.rpc, n.startTimeout, StderrFile, n.spec.Config.RootDir)
	}
	return err
}

// stderrTail is the end of node.stderr, for error messages.
func (n *processNode) stderrTail() string {
	return fileTail(filepath.Join(n.spec.Config.RootDir, StderrFile))
}

// fileTail is the end of a log valnet appends a "--- valnet" line to at
// each start: what the last start wrote, at most 2000 bytes.
func fileTail(path string) string {
	data, _ := os.ReadFile(path)
	if i := strings.LastIndex(string(data), "\n--- valnet "); i >= 0 {
		data = data[i+1:]
	}
	if len(data) > 2000 {
		data = data[len(data)-2000:]
	}
	return strings.TrimSpace(string(data))
}

// terminate stops an incarnation: SIGTERM (and SIGCONT, so a paused node
// can act on it), up to stopGrace or ctx for a clean exit, then SIGKILL.
func (n *processNode) terminate(ctx context.Context, ch *child) error {
	ch.ending.Store(true)
	ch.stopEvents()
	if stopGroup(ctx, ch.pid, ch.done, stopGrace) {
		return fmt.Errorf("node %s: did not stop within %v of SIGTERM; killed", n.name, stopGrace)
	}
	if ch.err != nil {
		return fmt.Errorf("node %s: exited with %v: %s", n.name, ch.err, n.stderrTail())
	}
	return nil
}

// stopGroup stops the process group of pid: SIGTERM (and SIGCONT, so a
// paused process can act on it), up to grace or ctx for a clean exit, then
// SIGKILL; it returns once done is closed (the leader reaped), true when
// it had to kill. Node incarnations and their apps stop this way.
func stopGroup(ctx context.Context, pid int, done <-chan struct{}, grace time.Duration) (killed bool) {
	_ = signalGroup(pid, sigTerm)
	_ = signalGroup(pid, sigCont)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return false
	case <-t.C:
	case <-ctx.Done():
	}
	_ = signalGroup(pid, sigKill)
	<-done
	return true
}

// kill SIGKILLs an incarnation and waits until it is reaped.
func (ch *child) kill(ctx context.Context) error {
	ch.ending.Store(true)
	ch.stopEvents()
	if err := signalGroup(ch.pid, sigKill); err != nil {
		return err
	}
	select {
	case <-ch.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (ch *child) stopEvents() {
	if ch.cancelEvents != nil {
		ch.cancelEvents()
		ch.events.Wait()
	}
}

// Stop stops the node cleanly (SIGTERM, then SIGKILL after 10 s), closes
// its event socket and removes the socket's directory.
func (n *processNode) Stop(ctx context.Context) error {
	return n.life.stop(
		func(ch *child) error { return n.terminateAll(ctx, ch) },
		func() error { n.closeEvents(); n.releaseApp(); return nil })
}

// terminateAll stops the node cleanly, then its app (SIGTERM), as a clean
// stop of the machine would.
func (n *processNode) terminateAll(ctx context.Context, ch *child) error {
	err := n.terminate(ctx, ch)
	if n.app != nil {
		err = errors.Join(err, n.app.stop(ctx))
	}
	return err
}

// killApp SIGKILLs the app, if any runs.
func (n *processNode) killApp() {
	if n.app != nil {
		_ = n.app.kill()
	}
}

// releaseApp ends the app, if any, and gives back its address.
func (n *processNode) releaseApp() {
	if n.app != nil {
		_ = n.app.kill()
		n.app.release()
	}
}

// Halt stops the node cleanly (SIGTERM, then SIGKILL after 10 s); Restart
// starts it again.
func (n *processNode) Halt(ctx context.Context) error {
	return n.life.end(n.name, "stop", func(ch *child) error { return n.terminateAll(ctx, ch) })
}

var _ Halter = (*processNode)(nil)

// Kill SIGKILLs the node's process group and waits until it is gone.
func (n *processNode) Kill(ctx context.Context) error {
	return n.life.end(n.name, "kill", func(ch *child) error {
		err := ch.kill(ctx)
		n.killApp()
		return err
	})
}

// Pause freezes the node's process group (SIGSTOP) and returns once the
// node is stopped.
func (n *processNode) Pause(ctx context.Context) error {
	return n.freeze(ctx, true)
}

// Resume thaws a paused node (SIGCONT) and returns once it runs.
func (n *processNode) Resume(ctx context.Context) error {
	return n.freeze(ctx, false)
}

func (n *processNode) freeze(ctx context.Context, stop bool) error {
	return n.life.with(n.name, func(ch *child) error {
		if ch == nil {
			return fmt.Errorf("node %s: not running (killed)", n.name)
		}
		sig := sigCont
		if stop {
			sig = sigStop
		}
		if err := signalGroup(ch.pid, sig); err != nil {
			return fmt.Errorf("node %s: %w", n.name, err)
		}
		for {
			info, err := procStat(ch.pid)
			if err != nil || info.state == 'Z' {
				return fmt.Errorf("node %s: exited", n.name)
			}
			if (info.state == 'T') == stop {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
}

// Restart spawns the node again from its home, on the same ports; a node
// still running is stopped cleanly first.
func (n *processNode) Restart(ctx context.Context) error {
	return n.life.restart(n.name,
		func(ch *child) error { return n.terminateAll(ctx, ch) },
		func() (*child, error) { return n.spawn(ctx) })
}

// listenEvents opens the unix socket `valnet node` streams its events to.
// Unix socket paths are limited to ~108 bytes: it lives in a short temp
// dir, not in the (possibly deep) home.
func (n *processNode) listenEvents() error {
	dir, err := MkRunTempDir("ev")
	if err != nil {
		return fmt.Errorf("event socket: %w", err)
	}
	n.sockDir, n.sockPath = dir, filepath.Join(dir, "events.sock")
	n.events, err = ListenEvents("unix", n.sockPath, n.name, n.spec.Sink)
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("event socket: %w", err)
	}
	return nil
}

// closeEvents closes the socket once no child can write to it, once what
// was sent is read, and removes the socket's directory.
func (n *processNode) closeEvents() {
	if n.events == nil {
		return
	}
	n.events.Close()
	os.RemoveAll(n.sockDir)
	n.events = nil
}
