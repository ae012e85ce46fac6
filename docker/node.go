package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	dc "github.com/ory/dockertest/v3/docker"

	"github.com/valnet/valnet/nodes"
)

// Backend starts the validators of one Run as containers: get it from
// Run.Backend.
type Backend struct{ run *Run }

var _ nodes.Backend = Backend{}

// Backend is the nodes.Backend that starts this run's containers.
func (r *Run) Backend() Backend { return Backend{run: r} }

func (Backend) Name() string { return "docker" }

// Start creates and starts the container of spec's validator, which must
// have been Prepared, from its home on this host (already written, with
// Configure's listen addresses and a FilePV or priv_validator_laddr), and
// returns once the node answers RPC /status as itself. Spec.Signer is not
// used: the container signs with its home's FilePV or a remote signer.
func (b Backend) Start(ctx context.Context, spec nodes.Spec) (nodes.Node, error) {
	r := b.run
	if r == nil {
		return nil, errors.New("docker backend: no run (use docker.NewRun(...).Backend())")
	}
	r.mu.Lock()
	ip, ok := r.ips[spec.Name]
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil, errors.New("docker backend: run closed")
	}
	if !ok {
		return nil, fmt.Errorf("node %s: no IP on network %s; call (*docker.Run).Prepare with every validator before writing homes", spec.Name, r.netName)
	}
	c := spec.Config
	p2pPort, err := containerPort(c.P2P.ListenAddress, ip)
	if err != nil {
		return nil, fmt.Errorf("node %s: p2p laddr: %w", spec.Name, err)
	}
	rpcPort, err := containerPort(c.RPC.ListenAddress, ip)
	if err != nil {
		return nil, fmt.Errorf("node %s: rpc laddr: %w", spec.Name, err)
	}
	if la := c.PrivValidatorListenAddr; la != "" {
		if _, err := containerPort(la, ip); err != nil && r.remote {
			return nil, fmt.Errorf("node %s: priv_validator_laddr: %w (with a remote engine signers use TCP only: Run.SignerAddr)", spec.Name, err)
		} else if err != nil && r.hostSocket(la) == "" {
			return nil, fmt.Errorf("node %s: priv_validator_laddr: %w (or a unix socket in %s: Run.SignerSocket)", spec.Name, err, ContainerSockDir)
		}
	} else if _, err := os.Stat(c.PrivValidatorKeyFile()); err != nil {
		return nil, fmt.Errorf("node %s: a docker node signs through priv_validator_laddr (a remote signer) or a FilePV in its home, and it has neither: %w", spec.Name, err)
	}
	home, err := filepath.Abs(c.RootDir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(home, "config", "config.toml")); err != nil {
		return nil, fmt.Errorf("node %s: home not written: %w", spec.Name, err)
	}
	n := &node{run: r, name: spec.Name, spec: spec, home: home, ip: ip,
		rpc:  "http://" + net.JoinHostPort(ip.String(), strconv.Itoa(rpcPort)),
		http: &http.Client{Timeout: time.Second}}
	n.addrs = nodes.Addrs{RPC: n.rpc, P2P: nodes.NodeID(spec.NodeKey) + "@" + net.JoinHostPort(ip.String(), strconv.Itoa(p2pPort))}
	if r.remote {
		if rpcPort != RPCPort {
			return nil, fmt.Errorf("node %s: rpc laddr: with a remote engine RPC must listen on port %d (docker.Configure), which is published", spec.Name, RPCPort)
		}
		// Published at each start (readPorts).
		n.rpc, n.addrs.RPC = "", ""
	}
	args := []string{"--home", ContainerHome, "--name", spec.Name}
	n.image = r.image
	if spec.Binary != "" {
		// A stock cometbft: its own image, CometBFT's own start command,
		// events from its RPC (WatchRPCEvents), logs on its stdout.
		if n.image, err = r.userImage(ctx, spec.Binary); err != nil {
			return nil, err
		}
		args = []string{"start", "--home", ContainerHome, "--proxy_app=kvstore"}
	} else if spec.Sink != nil {
		events, err := n.listenEvents()
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", spec.Name, err)
		}
		args = append(args, "--events", events)
	}
	if err := n.create(ctx, args); err != nil {
		n.closeEvents()
		return nil, err
	}
	if r.remote {
		if err := n.uploadHome(); err != nil {
			_ = r.client.RemoveContainer(dc.RemoveContainerOptions{ID: n.id, Force: true})
			n.closeEvents()
			return nil, err
		}
	}
	r.mu.Lock()
	r.nodes = append(r.nodes, n)
	r.mu.Unlock()
	if err := n.startContainer(ctx); err != nil {
		_ = n.remove()
		return nil, err
	}
	return n, nil
}

// containerPort checks that a listen address can be reached from outside
// the container (0.0.0.0 or the container's own IP) and returns its port.
func containerPort(laddr string, ip net.IP) (int, error) {
	hostport, ok := strings.CutPrefix(laddr, "tcp://")
	if !ok {
		return 0, fmt.Errorf("%q: want tcp://0.0.0.0:PORT (docker.Configure sets it)", laddr)
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", laddr, err)
	}
	if h := net.ParseIP(host); host != "" && (h == nil || (!h.IsUnspecified() && !h.Equal(ip))) {
		return 0, fmt.Errorf("%q: a container listening on %s cannot be reached by its peers or the runner; listen on 0.0.0.0 (docker.Configure)", laddr, host)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 {
		return 0, fmt.Errorf("%q: bad port", laddr)
	}
	return p, nil
}

// node is one validator's container.
type node struct {
	run    *Run
	image  string // valnet's node image, or the user binary's
	name   string
	spec   nodes.Spec
	home   string
	ip     net.IP
	id     string // container ID
	http   *http.Client
	height nodes.LastHeight

	// addrMu guards the addresses, which a remote engine's published
	// ports change at every start.
	addrMu sync.Mutex
	addrs  nodes.Addrs
	rpc    string
	ports  map[int]string // container port -> engine host port (remote engine)

	// The event socket, open across restarts; the container reaches it
	// through the bind-mounted socket dir.
	events *nodes.EventListener

	// life serialises Stop, the Controller methods and Close; killed (by
	// Kill, since the last start: its exit code is ours) is under it.
	life   nodes.Lifecycle
	killed bool
	// unwatch ends the RPC event stream of a user binary's current start.
	unwatch func()
}

// user reports whether the container runs the user's own binary.
func (n *node) user() bool { return n.spec.Binary != "" }

// watch streams a user binary's events from its RPC for this start.
func (n *node) watch() error {
	n.stopWatch()
	if !n.user() {
		return nil
	}
	stop, err := nodes.WatchRPCEvents(n.rpcURL(), n.spec)
	n.unwatch = stop
	return err
}

func (n *node) stopWatch() {
	if n.unwatch != nil {
		n.unwatch()
		n.unwatch = nil
	}
}

var (
	_ nodes.Node           = (*node)(nil)
	_ nodes.HeightReporter = (*node)(nil)
	_ nodes.Controller     = (*node)(nil)
)

func (n *node) Name() string { return n.name }
func (n *node) Addrs() nodes.Addrs {
	n.addrMu.Lock()
	defer n.addrMu.Unlock()
	return n.addrs
}

func (n *node) rpcURL() string {
	n.addrMu.Lock()
	defer n.addrMu.Unlock()
	return n.rpc
}

// ContainerName is the container of validator name in run id.
func ContainerName(runID, name string) string {
	return "valnet-" + runID + "-" + idChars.ReplaceAllString(name, "-")
}

// create creates the container: home and socket dir bind-mounted, static
// IP, the runner's uid (files it writes into the home stay the runner's,
// and the 0700 home stays readable), labels for cleanup.
func (n *node) create(ctx context.Context, args []string) error {
	r := n.run
	var (
		mounts     []dc.HostMount
		exposed    map[dc.Port]struct{}
		bindings   map[dc.Port][]dc.PortBinding
		extraHosts []string
	)
	if r.remote {
		// Nothing of this host is visible to the engine: the home is
		// uploaded (uploadHome), RPC and the signer port published.
		exposed, bindings = r.portBindings()
		if r.hostAddr == hostGatewayName {
			extraHosts = []string{hostGatewayName + ":host-gateway"}
		}
	} else {
		mounts = []dc.HostMount{{Type: "bind", Source: n.home, Target: ContainerHome}}
		if n.events != nil || r.hostSocket(n.spec.Config.PrivValidatorListenAddr) != "" {
			mounts = append(mounts, dc.HostMount{Type: "bind", Source: r.sockDir, Target: ContainerSockDir})
		}
	}
	ct, err := r.client.CreateContainer(dc.CreateContainerOptions{
		Context: ctx,
		Name:    ContainerName(r.id, n.name),
		Config: &dc.Config{
			Image:        n.image,
			Cmd:          args,
			User:         fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()),
			Env:          []string{"HOME=" + ContainerHome},
			WorkingDir:   ContainerHome,
			Labels:       r.labelsWith(map[string]string{LabelNode: n.name}),
			Hostname:     idChars.ReplaceAllString(n.name, "-"),
			ExposedPorts: exposed,
		},
		HostConfig: &dc.HostConfig{
			Mounts:       mounts,
			PortBindings: bindings,
			ExtraHosts:   extraHosts,
			NetworkMode:  r.netName,
			// Docker's own log of the container: only `valnet node`'s
			// stderr (CometBFT logs to node.log in the home); bounded.
			LogConfig: dc.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "10m", "max-file": "2"}},
		},
		NetworkingConfig: &dc.NetworkingConfig{EndpointsConfig: map[string]*dc.EndpointConfig{
			r.netName: {IPAMConfig: &dc.EndpointIPAMConfig{IPv4Address: n.ip.String()}},
		}},
	})
	if err != nil {
		return fmt.Errorf("node %s: create container: %w", n.name, err)
	}
	n.id = ct.ID
	return nil
}

// startContainer starts the container and waits until RPC answers as this
// node (its node ID), the container exits, or StartTimeout passes.
func (n *node) startContainer(ctx context.Context) error {
	c := n.run.client
	// A killed node leaves its signer socket file behind, and CometBFT
	// cannot listen over it.
	nodes.RemoveStaleSocket(n.run.hostSocket(n.spec.Config.PrivValidatorListenAddr))
	if err := c.StartContainerWithContext(n.id, nil, ctx); err != nil {
		var already *dc.ContainerAlreadyRunning
		if !errors.As(err, &already) {
			return fmt.Errorf("node %s: start container: %w", n.name, err)
		}
	}
	if n.run.remote {
		// The engine picks new host ports at every start.
		ins, err := c.InspectContainerWithContext(n.id, ctx)
		if err != nil {
			return fmt.Errorf("node %s: inspect container: %w", n.name, err)
		}
		n.readPorts(ins)
		if n.rpcURL() == "" {
			return fmt.Errorf("node %s: the engine published no port for RPC %d/tcp (%s)", n.name, RPCPort, n.logTail())
		}
	}
	ctx, cancel := context.WithTimeout(ctx, n.run.opts.StartTimeout)
	defer cancel()
	polls := 0
	st, err := nodes.WaitStatus(ctx, n.status, nodes.NodeID(n.spec.NodeKey), func() error {
		if polls++; polls%5 != 0 {
			return nil // every 0.5 s: did it exit?
		}
		if ins, err := c.InspectContainerWithContext(n.id, ctx); err == nil && !ins.State.Running {
			return fmt.Errorf("node %s: container exited during start (code %d): %s", n.name, ins.State.ExitCode, n.logTail())
		}
		return nil
	})
	n.height.Update(st, err)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("node %s: RPC %s did not answer /status within %v (see node.log in %s; %s)",
			n.name, n.rpcURL(), n.run.opts.StartTimeout, n.home, n.logTail())
	}
	if err == nil {
		err = n.watch()
	}
	return err
}

func (n *node) status(ctx context.Context) (*nodes.StatusResult, error) {
	rpc := n.rpcURL()
	if rpc == "" {
		return nil, errors.New("not started")
	}
	return nodes.RPCStatus(ctx, n.http, rpc)
}

// Height is the node's last block height from RPC /status; while the node
// cannot answer (killed, paused) it is the last height it reported.
func (n *node) Height(ctx context.Context) int64 {
	return n.height.Update(n.status(ctx))
}

// ContainerID is the ID of the node's container.
func (n *node) ContainerID() string { return n.id }

// logs is what Docker kept of the container's stdout and stderr (every
// start of it); tailLines 0 means all.
func (n *node) logs(tailLines int) string {
	var buf bytes.Buffer
	t := "all"
	if tailLines > 0 {
		t = strconv.Itoa(tailLines)
	}
	// Its own bound, not the caller's context: the output is read for a
	// failure message or just before the container goes, often after the
	// run's context has ended (Ctrl-C), which is when it is wanted most.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = n.run.client.Logs(dc.LogsOptions{Context: ctx, Container: n.id, OutputStream: &buf, ErrorStream: &buf,
		Stdout: true, Stderr: true, Tail: t})
	return buf.String()
}

func (n *node) logTail() string {
	s := tail(n.logs(30), 2000)
	if s == "" {
		return "no output"
	}
	return "container output: " + s
}

// saveLogs appends the container's output to node.stderr in the home, as
// the process backend keeps a child's stderr, before the container goes.
// A stock cometbft logs on its stdout: its output is node.log, as the
// process backend keeps it.
func (n *node) saveLogs() {
	out := n.logs(0)
	if out == "" {
		return
	}
	path := filepath.Join(n.home, nodes.StderrFile)
	if n.user() {
		path = nodes.LogFile(n.spec.Config)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "--- valnet docker %s: container %s\n%s", time.Now().Format(time.RFC3339Nano), ContainerName(n.run.id, n.name), out)
}

func (n *node) inspect(ctx context.Context) (*dc.State, error) {
	ins, err := n.run.client.InspectContainerWithContext(n.id, ctx)
	if err != nil {
		return nil, err
	}
	return &ins.State, nil
}

// Stop stops the node cleanly (docker stop: SIGTERM, SIGKILL after
// StopTimeout), keeps its output in node.stderr, removes the container and
// closes the event socket once drained. A node that exited non-zero is an
// error carrying its output.
func (n *node) Stop(ctx context.Context) error {
	return n.life.Stop(func() error {
		err := n.stopContainer(ctx)
		n.stopWatch()
		if st, ierr := n.inspect(ctx); err == nil && ierr == nil && !n.killed && st.ExitCode != 0 {
			// It had exited by itself before this stop: a crash.
			why := fmt.Sprintf("code %d", st.ExitCode)
			if st.OOMKilled {
				why = "killed: out of memory"
			}
			err = fmt.Errorf("node %s: had exited (%s): %s", n.name, why, n.logTail())
		}
		n.saveLogs()
		n.fetchFiles()
		if rerr := n.run.client.RemoveContainer(dc.RemoveContainerOptions{ID: n.id, Force: true, RemoveVolumes: true}); rerr != nil && err == nil {
			var nsc *dc.NoSuchContainer
			if !errors.As(rerr, &nsc) {
				err = fmt.Errorf("node %s: remove container: %w", n.name, rerr)
			}
		}
		n.closeEvents()
		return err
	})
}

// stopContainer stops a running (or paused) container cleanly; a stopped
// one is left as it is.
func (n *node) stopContainer(ctx context.Context) error {
	st, err := n.inspect(ctx)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	if !st.Running {
		return nil
	}
	if st.Paused {
		// A frozen process cannot act on SIGTERM.
		if err := n.run.client.UnpauseContainer(n.id); err != nil {
			return fmt.Errorf("node %s: unpause before stop: %w", n.name, err)
		}
	}
	timeout := n.run.opts.StopTimeout
	if err := n.run.client.StopContainerWithContext(n.id, uint(timeout/time.Second), ctx); err != nil {
		var nr *dc.ContainerNotRunning
		if !errors.As(err, &nr) {
			return fmt.Errorf("node %s: docker stop: %w", n.name, err)
		}
	}
	st, err = n.inspect(ctx)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	switch {
	case st.Running:
		return fmt.Errorf("node %s: still running after docker stop", n.name)
	case st.ExitCode == 137:
		return fmt.Errorf("node %s: did not stop within %v of SIGTERM; killed", n.name, timeout)
	case st.ExitCode != 0:
		return fmt.Errorf("node %s: exited with code %d: %s", n.name, st.ExitCode, n.logTail())
	}
	return nil
}

// Kill SIGKILLs the node (docker kill; a paused node too) and returns once
// its container has stopped. The home keeps whatever was written.
func (n *node) Kill(ctx context.Context) error {
	return n.life.Control(n.name, func() error {
		st, err := n.inspect(ctx)
		if err != nil {
			return fmt.Errorf("node %s: %w", n.name, err)
		}
		if !st.Running {
			return nil
		}
		if err := n.run.client.KillContainer(dc.KillContainerOptions{ID: n.id, Signal: dc.SIGKILL, Context: ctx}); err != nil {
			var nr *dc.ContainerNotRunning
			if !errors.As(err, &nr) {
				return fmt.Errorf("node %s: docker kill: %w", n.name, err)
			}
		}
		n.killed = true
		n.stopWatch() // a restart streams again
		if _, err := n.run.client.WaitContainerWithContext(n.id, ctx); err != nil {
			return fmt.Errorf("node %s: wait for kill: %w", n.name, err)
		}
		return nil
	})
}

// Pause freezes the container (docker pause: the cgroup freezer, like
// SIGSTOP but for every process of it and invisible to them). Peers see a
// silent peer; TCP connections stay open.
func (n *node) Pause(ctx context.Context) error {
	return n.freeze(ctx, true)
}

// Resume thaws a paused container (docker unpause).
func (n *node) Resume(ctx context.Context) error {
	return n.freeze(ctx, false)
}

func (n *node) freeze(ctx context.Context, pause bool) error {
	return n.life.Control(n.name, func() error {
		st, err := n.inspect(ctx)
		if err != nil {
			return fmt.Errorf("node %s: %w", n.name, err)
		}
		if !st.Running {
			return fmt.Errorf("node %s: not running (killed)", n.name)
		}
		if st.Paused == pause {
			return nil
		}
		if pause {
			err = n.run.client.PauseContainer(n.id)
		} else {
			err = n.run.client.UnpauseContainer(n.id)
		}
		if err != nil {
			return fmt.Errorf("node %s: %w", n.name, err)
		}
		return nil
	})
}

// Restart starts the container again (same IP, same home: WAL, block
// store, FilePV state), stopping it cleanly first if it runs, and returns
// once RPC answers. It catches up from its peers; `valnet node` reconnects
// to the same event socket.
func (n *node) Restart(ctx context.Context) error {
	return n.life.Control(n.name, func() error {
		if err := n.stopContainer(ctx); err != nil {
			return fmt.Errorf("restart: %w", err)
		}
		n.killed = false
		if err := n.startContainer(ctx); err != nil {
			return fmt.Errorf("restart: %w", err)
		}
		return nil
	})
}

// remove force-removes the container (keeping its output) and closes the
// event socket: Run.Close, for nodes nobody stopped.
func (n *node) remove() error {
	return n.life.Discard(func() error {
		defer n.closeEvents()
		n.stopWatch()
		if n.id == "" {
			return nil
		}
		n.saveLogs()
		n.fetchFiles()
		err := n.run.client.RemoveContainer(dc.RemoveContainerOptions{ID: n.id, Force: true, RemoveVolumes: true})
		if nsc := (*dc.NoSuchContainer)(nil); err != nil && !errors.As(err, &nsc) {
			return fmt.Errorf("node %s: remove container: %w", n.name, err)
		}
		return nil
	})
}

// listenEvents opens the node's event socket in the run's socket dir, or
// with a remote engine a TCP listener on every interface of this host, and
// returns the address the node dials (--events).
func (n *node) listenEvents() (string, error) {
	if n.run.remote {
		l, err := nodes.ListenEvents("tcp", ":0", n.name, n.spec.Sink)
		if err != nil {
			return "", fmt.Errorf("event listener: %w", err)
		}
		n.events = l
		port := l.Addr().(*net.TCPAddr).Port
		return "tcp://" + net.JoinHostPort(n.run.hostAddr, strconv.Itoa(port)), nil
	}
	file := n.run.sockFile(n.name, ".events.sock")
	l, err := nodes.ListenEvents("unix", filepath.Join(n.run.sockDir, file), n.name, n.spec.Sink)
	if err != nil {
		return "", fmt.Errorf("event socket: %w", err)
	}
	n.events = l
	return "unix://" + ContainerSockDir + "/" + file, nil
}

// closeEvents closes the socket once no container can write to it, after
// what was sent is read (nodes.EventListener.Close).
func (n *node) closeEvents() {
	if n.events == nil {
		return
	}
	n.events.Close()
	n.events = nil
}
