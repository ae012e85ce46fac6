package nodes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// AppSpec is a validator's own ABCI application (a scenario's app:): the
// backend starts Command as a process of its own beside the node, and the
// node connects to it over Transport instead of running the built-in
// kvstore. Its life follows the node's (docs/app.md): it starts before
// the node, and a node kill, stop or restart kills, stops or restarts it
// after the node.
type AppSpec struct {
	// Command is the app's argv; {addr} is replaced by the address it must
	// listen on and {home} by its directory (AppHomeDir in the node's home).
	Command []string
	// Transport is CometBFT's abci setting: socket (the address is a unix
	// socket) or grpc (a loopback TCP port).
	Transport string
	// StartTimeout bounds how long the app may take to accept a
	// connection; default 30 s.
	StartTimeout time.Duration
}

// Files of an app in the node's home.
const (
	AppHomeDir = "app-home" // {home}: the app's own directory, kept with the run
	AppLogFile = "app.log"  // the app's stdout and stderr
)

// Placeholders of AppSpec.Command (scenarios.AppAddr and AppHome).
const (
	appAddrVar = "{addr}"
	appHomeVar = "{home}"
)

// appStopGrace is how long an app may take to exit after SIGTERM before it
// is killed.
const appStopGrace = 5 * time.Second

// app is one validator's application process across the node's
// incarnations: one address for all of them, so that a restarted app is
// where the node looks for it.
type app struct {
	node    string
	spec    AppSpec
	addr    string // what the node dials: unix:///PATH or 127.0.0.1:PORT
	dial    [2]string
	mark    string // in the app's command line: how the orphan check knows it
	sockDir string
	port    int
	home    string
	log     string
	argv    []string
	cur     *appProc // nil when not running
}

// appProc is one spawned incarnation of an app.
type appProc struct {
	pid  int
	done chan struct{}
	err  error
}

// newApp picks the app's address: a unix socket in a short run temp dir for
// socket, a free loopback port for grpc (CometBFT's gRPC client dials TCP).
func newApp(node, nodeHome string, spec AppSpec) (*app, error) {
	if len(spec.Command) == 0 {
		return nil, fmt.Errorf("node %s: app: no command", node)
	}
	home, err := filepath.Abs(nodeHome)
	if err != nil {
		return nil, err
	}
	a := &app{node: node, spec: spec, home: filepath.Join(home, AppHomeDir), log: filepath.Join(home, AppLogFile)}
	if a.spec.StartTimeout <= 0 {
		a.spec.StartTimeout = 30 * time.Second
	}
	switch spec.Transport {
	case "socket", "":
		a.spec.Transport = "socket"
		if a.sockDir, err = MkRunTempDir("app"); err != nil {
			return nil, fmt.Errorf("node %s: app socket: %w", node, err)
		}
		path := filepath.Join(a.sockDir, "app.sock")
		a.addr, a.dial, a.mark = "unix://"+path, [2]string{"unix", path}, path
	case "grpc":
		if a.port, err = FreePort(); err != nil {
			return nil, fmt.Errorf("node %s: app port: %w", node, err)
		}
		// No tcp:// scheme: CometBFT v1.0's gRPC client hands the address
		// to grpc.NewClient, which reads "tcp://" as a host name and
		// retries Echo for ever; a server takes HOST:PORT as tcp too.
		hp := net.JoinHostPort("127.0.0.1", strconv.Itoa(a.port))
		a.addr, a.dial, a.mark = hp, [2]string{"tcp", hp}, hp
	default:
		return nil, fmt.Errorf("node %s: app: unknown transport %q (socket or grpc)", node, spec.Transport)
	}
	for _, arg := range spec.Command {
		arg = strings.ReplaceAll(arg, appAddrVar, a.addr)
		a.argv = append(a.argv, strings.ReplaceAll(arg, appHomeVar, a.home))
	}
	if !strings.Contains(strings.Join(a.argv, " "), a.mark) {
		a.release()
		return nil, fmt.Errorf("node %s: app: the command must pass on %s (its listen address)", node, appAddrVar)
	}
	if err := os.MkdirAll(a.home, 0o700); err != nil {
		a.release()
		return nil, fmt.Errorf("node %s: app home: %w", node, err)
	}
	return a, nil
}

// Addr is what the node dials (proxy_app).
func (a *app) Addr() string { return a.addr }

// running reports whether an incarnation runs.
func (a *app) running() bool {
	if a.cur == nil {
		return false
	}
	select {
	case <-a.cur.done:
		return false
	default:
		return true
	}
}

// start spawns the app unless it runs, and returns once it accepts a
// connection on its address; if it exits first or never listens, the
// error carries the tail of app.log.
func (a *app) start(ctx context.Context) error {
	if !processSupported {
		return errNoProcess
	}
	if a.running() {
		return nil
	}
	a.cur = nil
	if a.sockDir != "" {
		_ = os.Remove(a.dial[1]) // a killed app leaves its socket file
	}
	logFile, err := os.OpenFile(a.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("node %s: app: %w", a.node, err)
	}
	defer logFile.Close() // the child has its own copy
	fmt.Fprintf(logFile, "--- valnet %s: %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(a.argv, " "))
	cmd := exec.Command(a.argv[0], a.argv[1:]...)
	cmd.Dir = a.home
	cmd.Env = childEnv()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childAttr()
	if err := startChild(cmd); err != nil {
		return fmt.Errorf("node %s: app: start %s: %w", a.node, a.argv[0], err)
	}
	p := &appProc{pid: cmd.Process.Pid, done: make(chan struct{})}
	regErr := registerChild(p.pid, a.mark)
	go func() {
		p.err = cmd.Wait()
		unregisterChild(p.pid)
		close(p.done)
	}()
	a.cur = p
	if err := errors.Join(regErr, a.waitAccept(ctx, p)); err != nil {
		_ = a.kill()
		return fmt.Errorf("node %s: app: %w", a.node, err)
	}
	return nil
}

// waitAccept polls the address until the app accepts, exits, or the start
// timeout (or ctx) ends.
func (a *app) waitAccept(ctx context.Context, p *appProc) error {
	ctx, cancel := context.WithTimeout(ctx, a.spec.StartTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if c, err := net.DialTimeout(a.dial[0], a.dial[1], time.Second); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it listened on %s (%v): %s", a.argv[0], a.addr, p.err, a.logTail())
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				return fmt.Errorf("%s did not listen on %s within %v: %s", a.argv[0], a.addr, a.spec.StartTimeout, a.logTail())
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// logTail is the end of app.log since the last start, for errors.
func (a *app) logTail() string {
	if t := fileTail(a.log); t != "" {
		return "app.log ends: " + t
	}
	return "app.log is empty"
}

// stop ends the app: SIGTERM (with SIGCONT), up to appStopGrace or ctx,
// then SIGKILL. An app that exited already is no error: its node is gone.
func (a *app) stop(ctx context.Context) error {
	p := a.cur
	if p == nil {
		return nil
	}
	a.cur = nil
	if stopGroup(ctx, p.pid, p.done, appStopGrace) {
		return fmt.Errorf("node %s: app did not stop within %v of SIGTERM; killed", a.node, appStopGrace)
	}
	return nil
}

// kill SIGKILLs the app's process group and waits until it is reaped.
func (a *app) kill() error {
	p := a.cur
	if p == nil {
		return nil
	}
	a.cur = nil
	if err := signalGroup(p.pid, sigKill); err != nil {
		return fmt.Errorf("node %s: app: %w", a.node, err)
	}
	<-p.done
	return nil
}

// release gives back the address (socket directory, port); the app must
// not run.
func (a *app) release() {
	if a.sockDir != "" {
		os.RemoveAll(a.sockDir)
		a.sockDir = ""
	}
	if a.port != 0 {
		ReleasePort(a.port)
		a.port = 0
	}
}

// PID is the running app's pid, 0 when none runs (tests).
func (a *app) PID() int {
	if !a.running() {
		return 0
	}
	return a.cur.pid
}

// CleanLeftovers kills the app processes (and node processes) of runners
// that are gone, and removes their socket directories: an in-process node
// spawns its app as a child like the process backend's nodes.
func (InProcess) CleanLeftovers(ctx context.Context) ([]string, error) {
	return Process{}.CleanLeftovers(ctx)
}

var _ LeftoverCleaner = InProcess{}
