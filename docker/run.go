// Package docker is valnet's Docker backend: every validator runs as
// `valnet node` in its own container, from the home the runner wrote on
// this host, on a private bridge network of the run. Nodes can be killed
// (SIGKILL), frozen (cgroup freezer) and restarted as an operator's
// machines would, like the process backend, but each in its own network
// namespace, file system and cgroup.
//
// A run goes: NewRun (engine, image, network) → Prepare (container IPs,
// known before homes are written) → Backend().Start per validator →
// Node.Stop → Run.Close. See docs/docker.md.
package docker

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	cfg "github.com/cometbft/cometbft/config"
	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"

	"github.com/valnet/valnet/nodes"
)

// Labels on every container and network of a run. Runner labels say who
// owns a resource, so that a later run can remove what a killed runner
// left behind, and nothing of a live one.
const (
	LabelRun         = "valnet.run"          // the run ID
	LabelNode        = "valnet.node"         // containers: the validator's name
	LabelRunnerPID   = "valnet.runner.pid"   // the runner's pid
	LabelRunnerHost  = "valnet.runner.host"  // the runner's hostname
	LabelRunnerStart = "valnet.runner.start" // the runner's start time (/proc ticks): tells a reused pid apart
	LabelSockDir     = "valnet.sockdir"      // networks: the run's event socket dir on the runner's host
)

// Fixed ports inside every container: each container has its own IP, so
// no port needs picking.
const (
	P2PPort     = 26656
	RPCPort     = 26657
	PrivValPort = 26659 // priv_validator_laddr for a signer that stays on the host (via: tcp)
)

// In-container paths.
const (
	ContainerHome    = "/home/valnet" // the validator's home, bind-mounted read-write
	ContainerSockDir = "/sock"        // the run's event socket dir, bind-mounted
)

// maxNodes is how many validators fit the run's /24: .10 to .254.
const maxNodes = 245

// Options configure a Run; the zero value is usable.
type Options struct {
	// Binary is a static Linux valnet binary to put in the node image.
	// "": $VALNET_DOCKER_BINARY, else one built with CGO_ENABLED=0 from
	// the valnet module holding the working directory, else this very
	// executable if it is a static valnet binary (see resolveBinary).
	Binary string
	// StartTimeout bounds how long a node may take to answer RPC /status
	// after its container starts; default 60 s.
	StartTimeout time.Duration
	// StopTimeout is how long a clean stop waits after SIGTERM before
	// Docker kills the node; default 10 s.
	StopTimeout time.Duration
	// Logf receives progress (image builds, leftovers removed); nil: none.
	Logf func(format string, args ...any)

	// Endpoint is the engine to use, e.g. "tcp://10.0.0.7:2375"; "":
	// DOCKER_HOST, else the default unix socket (dockertest's rules).
	Endpoint string
	// Remote forces the remote-engine path (no bind mounts, events over
	// TCP, published ports; see docs/docker.md) even for a local engine.
	// Without it the path is chosen by itself: an endpoint that is not a
	// unix socket, or a bridge gateway that is not an address of this
	// host, is a remote engine.
	Remote bool
	// HostAddr is this host's address as the engine's containers reach it
	// (remote engine: nodes dial their event stream there). "":
	// $VALNET_DOCKER_HOST_ADDR, else this host's source address on its
	// route to the engine host (host.docker.internal when the engine host
	// is a loopback address).
	HostAddr string
	// EngineHost is where this host reaches ports the engine publishes
	// (remote engine: RPC, signer). "": $VALNET_DOCKER_ENGINE_HOST, else
	// the endpoint's host (tcp://HOST:PORT), else 127.0.0.1.
	EngineHost string
}

// Environment variables for the remote-engine path (Options.HostAddr,
// Options.EngineHost).
const (
	HostAddrEnv   = "VALNET_DOCKER_HOST_ADDR"
	EngineHostEnv = "VALNET_DOCKER_ENGINE_HOST"
)

// Run is the Docker side of one valnet run: the engine connection, the
// node image, the run's bridge network and every container on it.
type Run struct {
	id     string
	opts   Options
	client *dc.Client
	image  string
	// userImages are the images of users' node binaries, by path.
	userImages map[string]string
	labels     map[string]string
	netName    string
	netID      string
	subnet     *net.IPNet
	gateway    net.IP
	sockDir    string

	// The remote-engine path (Remote): where published ports are reached,
	// where containers reach this host, and the local relays of the
	// runner's signers (see remote.go).
	remote     bool
	engineHost string
	hostAddr   string

	mu     sync.Mutex
	relays map[string]*signerRelay
	ips    map[string]net.IP
	nodes  []*node
	closed bool
}

// NewRun connects to the Docker engine (DOCKER_HOST, else the default
// unix socket), removes what killed earlier runs left behind, makes sure
// the node image exists (building it if needed) and creates the run's
// bridge network valnet-<ID>. runID names the run (e.g. the base name of
// its output dir); a short random suffix makes the ID unique. Close
// removes everything the run created.
func NewRun(ctx context.Context, runID string, opts Options) (*Run, error) {
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 60 * time.Second
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 10 * time.Second
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	client, err := connect(ctx, opts.Endpoint)
	if err != nil {
		return nil, err
	}
	remote := opts.Remote || engineRemote(client)
	if _, err := cleanupLeftovers(ctx, client, false, opts.Logf); err != nil {
		opts.Logf("docker: leftovers of earlier runs: %v", err)
	}
	image, _, err := ensureImage(ctx, client, opts.Binary, opts.Logf)
	if err != nil {
		return nil, err
	}
	r := &Run{id: newRunID(runID), opts: opts, client: client, image: image, ips: map[string]net.IP{},
		remote: remote, relays: map[string]*signerRelay{}}
	r.netName = "valnet-" + r.id
	// Unix socket paths are limited to ~108 bytes: a short temp dir.
	if r.sockDir, err = nodes.MkRunTempDir("dk"); err != nil {
		return nil, fmt.Errorf("docker: event socket dir: %w", err)
	}
	r.labels = runnerLabels(r.id)
	if err := r.createNetwork(ctx); err != nil {
		os.RemoveAll(r.sockDir)
		return nil, err
	}
	if r.remote {
		if err := r.resolveRemote(); err != nil {
			_ = r.client.RemoveNetwork(r.netID)
			os.RemoveAll(r.sockDir)
			return nil, err
		}
		opts.Logf("docker: remote engine %s: published ports reached at %s, containers reach this host at %s (no bind mounts, events over TCP)",
			client.Endpoint(), r.engineHost, r.hostAddr)
	}
	return r, nil
}

// connect opens the engine endpoint names, else the one DOCKER_HOST names
// (dockertest's rules), and pings it.
func connect(ctx context.Context, endpoint string) (*dc.Client, error) {
	ep := endpoint
	if ep == "" {
		ep = os.Getenv("DOCKER_HOST")
	}
	if strings.HasPrefix(ep, "ssh://") {
		return nil, fmt.Errorf("docker backend: DOCKER_HOST=%s: ssh:// engines are not supported by valnet's Docker client; "+
			"forward the engine's socket (ssh -NL 127.0.0.1:2375:/var/run/docker.sock HOST), set DOCKER_HOST=tcp://127.0.0.1:2375 "+
			"and %s=HOST (where the engine publishes ports), see docs/docker.md", ep, EngineHostEnv)
	}
	pool, err := dockertest.NewPool(endpoint)
	if err != nil {
		return nil, fmt.Errorf("no Docker engine reachable (%v): start Docker or use run.backend: inprocess", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Client.PingWithContext(pctx); err != nil {
		return nil, fmt.Errorf("no Docker engine reachable (%s: %v): start Docker or use run.backend: inprocess",
			pool.Client.Endpoint(), err)
	}
	return pool.Client, nil
}

// engineRemote reports whether the engine is reached otherwise than by a
// unix socket of this host (tcp://, http(s)://): a remote engine, whose
// host sees neither this host's files nor its sockets.
func engineRemote(c *dc.Client) bool {
	return !strings.HasPrefix(c.Endpoint(), "unix://")
}

var idChars = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// newRunID makes a Docker-name-safe, unique run ID from a readable one.
func newRunID(readable string) string {
	id := strings.Trim(idChars.ReplaceAllString(readable, "-"), "-._")
	if len(id) > 40 {
		id = strings.TrimRight(id[:40], "-._")
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	if id == "" {
		return "run-" + hex.EncodeToString(b[:])
	}
	return id + "-" + hex.EncodeToString(b[:])
}

// runnerLabels are the labels of every resource of run id.
func runnerLabels(id string) map[string]string {
	host, _ := os.Hostname()
	l := map[string]string{LabelRun: id, LabelRunnerPID: strconv.Itoa(os.Getpid()), LabelRunnerHost: host}
	if st, ok := nodes.ProcessStart(os.Getpid()); ok {
		l[LabelRunnerStart] = strconv.FormatUint(st, 10)
	}
	return l
}

func (r *Run) labelsWith(extra map[string]string) map[string]string {
	out := make(map[string]string, len(r.labels)+len(extra))
	for k, v := range r.labels {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// createNetwork creates the run's bridge network on a free /24 (a known
// subnet, so that Prepare can hand out static IPs before anything runs)
// and checks that its gateway is an address of this host.
func (r *Run) createNetwork(ctx context.Context) error {
	taken := r.takenNets()
	tries := 0
	for _, cand := range candidateSubnets() {
		if overlapsAny(cand, taken) {
			continue
		}
		if tries++; tries > 32 {
			break
		}
		gw := make(net.IP, 4)
		copy(gw, cand.IP.To4())
		gw[3] = 1
		n, err := r.client.CreateNetwork(dc.CreateNetworkOptions{
			Name: r.netName, Driver: "bridge", CheckDuplicate: true, Context: ctx,
			Labels: r.labelsWith(map[string]string{LabelSockDir: r.sockDir}),
			IPAM:   &dc.IPAMOptions{Driver: "default", Config: []dc.IPAMConfig{{Subnet: cand.String(), Gateway: gw.String()}}},
		})
		if err != nil {
			// Another network (maybe a concurrent run's) took the subnet
			// since we listed them: try the next one.
			if strings.Contains(strings.ToLower(err.Error()), "overlap") {
				continue
			}
			return fmt.Errorf("docker: create network %s: %w", r.netName, err)
		}
		r.netID, r.subnet, r.gateway = n.ID, cand, gw
		if !r.remote && !isLocalIP(gw) {
			// Docker Desktop's VM, rootless Docker, valnet in a container:
			// the engine's bridge is not on this host.
			r.opts.Logf("docker: the bridge gateway %s of network %s is not an address of this host: using the remote-engine path", gw, r.netName)
			r.remote = true
		}
		return nil
	}
	return fmt.Errorf("docker: no free /24 for network %s in 172.28.0.0/14 (every candidate overlaps another network or a route of this host)", r.netName)
}

// candidateSubnets are the /24s the run's network may take, in order.
func candidateSubnets() []*net.IPNet {
	var out []*net.IPNet
	for b := 28; b <= 31; b++ {
		for c := 0; c < 256; c++ {
			out = append(out, &net.IPNet{IP: net.IPv4(172, byte(b), byte(c), 0).To4(), Mask: net.CIDRMask(24, 32)})
		}
	}
	return out
}

// takenNets are the subnets of every Docker network and the networks of
// this host's interfaces and routes: a run's network must overlap none
// (Docker checks its own networks, not a VPN's routes).
func (r *Run) takenNets() []*net.IPNet {
	var out []*net.IPNet
	if nets, err := r.client.ListNetworks(); err == nil {
		for _, n := range nets {
			for _, c := range n.IPAM.Config {
				if _, ipn, err := net.ParseCIDR(c.Subnet); err == nil {
					out = append(out, ipn)
				}
			}
		}
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
				out = append(out, &net.IPNet{IP: ipn.IP.Mask(ipn.Mask), Mask: ipn.Mask})
			}
		}
	}
	return append(out, hostRoutes()...)
}

// hostRoutes reads the IPv4 routing table (Linux), skipping the default
// route.
func hostRoutes() []*net.IPNet {
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []*net.IPNet
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fld := strings.Fields(sc.Text())
		if len(fld) < 8 {
			continue
		}
		dst, err1 := strconv.ParseUint(fld[1], 16, 32)
		mask, err2 := strconv.ParseUint(fld[7], 16, 32)
		if err1 != nil || err2 != nil || mask == 0 {
			continue
		}
		ip, m := make(net.IP, 4), make(net.IPMask, 4)
		binary.LittleEndian.PutUint32(ip, uint32(dst))
		binary.LittleEndian.PutUint32(m, uint32(mask))
		out = append(out, &net.IPNet{IP: ip, Mask: m})
	}
	return out
}

func overlapsAny(n *net.IPNet, others []*net.IPNet) bool {
	for _, o := range others {
		if o.Contains(n.IP) || n.Contains(o.IP) {
			return true
		}
	}
	return false
}

func isLocalIP(ip net.IP) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// ID is the run's unique ID: the value of the valnet.run label.
func (r *Run) ID() string { return r.id }

// NetworkName is the run's Docker network, valnet-<ID>.
func (r *Run) NetworkName() string { return r.netName }

// Image is the node image's tag, valnet-node:<12 hex of the binary's sha256>.
func (r *Run) Image() string { return r.image }

// Gateway is the bridge's IP on this host. Containers reach the host
// there: the link fabric's proxies listen on it (network.Options.ListenHost).
func (r *Run) Gateway() string { return r.gateway.String() }

// Addresses are where the validators of a run can be reached, known before
// any container exists: static IPs on the run's network.
type Addresses struct {
	Network string // the Docker network, valnet-<run ID>
	Subnet  string // e.g. 172.28.3.0/24
	// Gateway is this host's IP on the bridge: listen there for containers
	// to reach the host (network.Options{ListenHost: Gateway}).
	Gateway string
	Nodes   map[string]NodeAddresses
}

// NodeAddresses are one validator's addresses, reachable from this host and
// from every container of the run. With a remote engine (Run.Remote) IP,
// P2P and RPC are on the engine's bridge, reachable from the containers
// only (the runner reaches RPC at Node.Addrs().RPC, a published port), and
// PrivVal is a relay on this host's loopback to the node's published
// signer port.
type NodeAddresses struct {
	IP      string // the container's IP
	P2P     string // IP:26656, for persistent_peers (or a fabric route's target)
	RPC     string // IP:26657
	PrivVal string // IP:26659 (remote engine: 127.0.0.1:<relay>), where a host signer dials (via: tcp)
}

// Prepare gives every named validator a static IP on the run's network
// (.10, .11, … in order) and returns the addresses, so that the runner can
// write persistent peers, RPC addresses and signer addresses into homes
// before any container exists. A name prepared before keeps its IP.
func (r *Run) Prepare(names []string) (Addresses, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return Addresses{}, errors.New("docker: run closed")
	}
	used := map[string]bool{}
	for _, ip := range r.ips {
		used[ip.String()] = true
	}
	next := 10
	for _, name := range names {
		if name == "" {
			return Addresses{}, errors.New("docker: Prepare: empty validator name")
		}
		if _, ok := r.ips[name]; ok {
			continue
		}
		base := r.subnet.IP.To4()
		for next <= 254 && used[net.IPv4(base[0], base[1], base[2], byte(next)).String()] {
			next++
		}
		if next > 254 {
			return Addresses{}, fmt.Errorf("docker: at most %d validators fit network %s", maxNodes, r.netName)
		}
		ip := net.IPv4(base[0], base[1], base[2], byte(next)).To4()
		r.ips[name] = ip
		used[ip.String()] = true
	}
	if r.remote {
		for _, name := range names {
			if _, err := r.relayLocked(name); err != nil {
				return Addresses{}, err
			}
		}
	}
	return r.addressesLocked(), nil
}

func (r *Run) addressesLocked() Addresses {
	a := Addresses{Network: r.netName, Subnet: r.subnet.String(), Gateway: r.gateway.String(), Nodes: map[string]NodeAddresses{}}
	for name, ip := range r.ips {
		s := ip.String()
		a.Nodes[name] = NodeAddresses{IP: s,
			P2P:     net.JoinHostPort(s, strconv.Itoa(P2PPort)),
			RPC:     net.JoinHostPort(s, strconv.Itoa(RPCPort)),
			PrivVal: net.JoinHostPort(s, strconv.Itoa(PrivValPort))}
		if rl := r.relays[name]; rl != nil {
			na := a.Nodes[name]
			na.PrivVal = rl.addr()
			a.Nodes[name] = na
		}
	}
	return a
}

// Configure sets a node config's listen addresses for a container: P2P
// and RPC on every interface of the container at the fixed ports, and,
// with remoteSigner, priv_validator_laddr for a signer on the host that
// dials NodeAddresses.PrivVal (via: tcp). Persistent peers are the
// runner's to set.
func Configure(c *cfg.Config, remoteSigner bool) {
	c.P2P.ListenAddress = fmt.Sprintf("tcp://0.0.0.0:%d", P2PPort)
	c.RPC.ListenAddress = fmt.Sprintf("tcp://0.0.0.0:%d", RPCPort)
	if remoteSigner {
		c.PrivValidatorListenAddr = fmt.Sprintf("tcp://0.0.0.0:%d", PrivValPort)
	}
}

// SockDir is the run's socket dir on this host, bind-mounted in every
// container at /sock: event sockets, and unix signer sockets.
func (r *Run) SockDir() string { return r.sockDir }

// SignerSocket is where validator name's node listens for a signer over a
// unix socket: laddr is its priv_validator_laddr inside the container
// (unix:///sock/<name>.signer.sock), hostPath the same socket as a signer on
// this host dials it (signers.ServeRemote with NetUnix). The runner uses
// it for signers that stay on the host without TCP (via: direct or unix).
func (r *Run) SignerSocket(name string) (laddr, hostPath string) {
	file := r.sockFile(name, ".signer.sock")
	return "unix://" + ContainerSockDir + "/" + file, filepath.Join(r.sockDir, file)
}

// sockFile names a socket of validator name in the socket dir: its name
// when the path fits a unix socket address (~108 bytes), else a hash.
func (r *Run) sockFile(name, suffix string) string {
	file := idChars.ReplaceAllString(name, "-") + suffix
	if len(r.sockDir)+1+len(file) > 100 {
		h := sha256.Sum256([]byte(name))
		file = hex.EncodeToString(h[:6]) + suffix
	}
	return file
}

// hostSocket maps a unix laddr inside a container (in /sock) to its path
// on this host; "" for any other address.
func (r *Run) hostSocket(laddr string) string {
	rest, ok := strings.CutPrefix(laddr, "unix://"+ContainerSockDir+"/")
	if !ok || rest == "" || strings.Contains(rest, "/") {
		return ""
	}
	return filepath.Join(r.sockDir, rest)
}

// KeepCommand is the shell command that removes the run's containers and
// network, for a user who kept the network up (--keep).
func (r *Run) KeepCommand() string {
	return fmt.Sprintf("docker rm -f $(docker ps -aq --filter label=%s=%s); docker network rm %s", LabelRun, r.id, r.netName)
}

// Close removes every container and the network of the run and its event
// socket dir, whatever state they are in; nodes not stopped before are
// killed. It is safe to call more than once.
func (r *Run) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	started := append([]*node(nil), r.nodes...)
	relays := r.relays
	r.relays = map[string]*signerRelay{}
	r.mu.Unlock()
	for _, rl := range relays {
		rl.close()
	}
	var errs []error
	for _, n := range started {
		if err := n.remove(); err != nil {
			errs = append(errs, err)
		}
	}
	// Anything else labelled with the run (a container whose Start failed
	// half-way).
	_, _, rerrs := removeRun(context.Background(), r.client, r.id)
	errs = append(errs, rerrs...)
	if err := os.RemoveAll(r.sockDir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removeRun force-removes the containers and networks labelled with run
// id and says how many of each it removed.
func removeRun(ctx context.Context, c *dc.Client, id string) (containers, networks int, errs []error) {
	cs, err := c.ListContainers(dc.ListContainersOptions{All: true, Context: ctx,
		Filters: map[string][]string{"label": {LabelRun + "=" + id}}})
	if err != nil {
		return 0, 0, []error{fmt.Errorf("docker: list containers of run %s: %w", id, err)}
	}
	for _, ct := range cs {
		err := c.RemoveContainer(dc.RemoveContainerOptions{ID: ct.ID, Force: true, RemoveVolumes: true, Context: ctx})
		var nsc *dc.NoSuchContainer
		switch {
		case err == nil:
			containers++
		case !errors.As(err, &nsc):
			errs = append(errs, fmt.Errorf("docker: remove container %s: %w", ct.ID[:12], err))
		}
	}
	nets, err := c.FilteredListNetworks(dc.NetworkFilterOpts{"label": {LabelRun + "=" + id: true}})
	if err != nil {
		return containers, 0, append(errs, fmt.Errorf("docker: list networks of run %s: %w", id, err))
	}
	for _, n := range nets {
		err := c.RemoveNetwork(n.ID)
		var nsn *dc.NoSuchNetwork
		switch {
		case err == nil:
			networks++
		case !errors.As(err, &nsn):
			errs = append(errs, fmt.Errorf("docker: remove network %s: %w", n.Name, err))
		}
	}
	return containers, networks, errs
}

// Leftovers is what runs whose runner is gone left in Docker.
type Leftovers struct {
	Runs       []string // run IDs
	Containers int
	Networks   []string // network names
	SockDirs   []string // the runs' event socket dirs on this host, removed
	Sockets    int      // unix sockets in them
}

// CleanupLeftovers removes the containers and networks (and event socket
// dirs) of runs whose runner is gone: labelled with this host's name and
// the pid of a process that no longer exists (or is another process now:
// the start time label tells). Runs of live runners and of other hosts
// are left alone. dryRun only lists them. NewRun calls it; so does
// valnet clean. An engine that does not answer is an error.
func CleanupLeftovers(ctx context.Context, dryRun bool) (Leftovers, error) {
	c, err := connect(ctx, "")
	if err != nil {
		return Leftovers{}, err
	}
	return cleanupLeftovers(ctx, c, dryRun, nil)
}

func cleanupLeftovers(ctx context.Context, c *dc.Client, dryRun bool, logf func(string, ...any)) (Leftovers, error) {
	var out Leftovers
	if logf == nil {
		logf = func(string, ...any) {}
	}
	type runRes struct {
		labels     map[string]string
		containers int
		networks   []string
	}
	runs := map[string]*runRes{}
	res := func(id string, l map[string]string) *runRes {
		if runs[id] == nil {
			runs[id] = &runRes{labels: l}
		}
		return runs[id]
	}
	cs, err := c.ListContainers(dc.ListContainersOptions{All: true, Context: ctx,
		Filters: map[string][]string{"label": {LabelRun}}})
	if err != nil {
		return out, fmt.Errorf("docker: list containers: %w", err)
	}
	for _, ct := range cs {
		if id := ct.Labels[LabelRun]; id != "" {
			res(id, ct.Labels).containers++
		}
	}
	nets, err := c.FilteredListNetworks(dc.NetworkFilterOpts{"label": {LabelRun: true}})
	if err != nil {
		return out, fmt.Errorf("docker: list networks: %w", err)
	}
	sockDirs := map[string]string{}
	for _, n := range nets {
		id := n.Labels[LabelRun]
		if id == "" {
			continue
		}
		rr := res(id, n.Labels)
		rr.networks = append(rr.networks, n.Name)
		if d := n.Labels[LabelSockDir]; d != "" {
			sockDirs[id] = d
		}
	}
	host, _ := os.Hostname()
	var errs []error
	ids := make([]string, 0, len(runs))
	for id := range runs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		rr := runs[id]
		if !runnerGone(rr.labels, host) {
			continue
		}
		containers, networks := rr.containers, rr.networks
		if !dryRun {
			nc, nn, e := removeRun(ctx, c, id)
			if len(e) > 0 {
				errs = append(errs, e...)
				continue
			}
			containers = nc
			if nn < len(networks) {
				networks = networks[:nn]
			}
		}
		if d := sockDirs[id]; d != "" && strings.HasPrefix(filepath.Base(d), "valnet-dk-") {
			if _, err := os.Stat(d); err == nil {
				out.Sockets += nodes.CountSockets(d)
				if !dryRun {
					_ = os.RemoveAll(d)
				}
				out.SockDirs = append(out.SockDirs, d)
			}
		}
		if !dryRun {
			logf("docker: removed the leftovers of run %s (its runner, pid %s, is gone)", id, rr.labels[LabelRunnerPID])
		}
		out.Runs = append(out.Runs, id)
		out.Containers += containers
		out.Networks = append(out.Networks, networks...)
	}
	return out, errors.Join(errs...)
}

// runnerGone reports whether the runner that labelled a resource is known
// to be gone: same host, and its pid is no longer that process. Anything
// unsure (another host, no labels, no /proc) counts as alive.
func runnerGone(l map[string]string, host string) bool {
	if host == "" || l[LabelRunnerHost] != host {
		return false
	}
	pid, err := strconv.Atoi(l[LabelRunnerPID])
	if err != nil || pid <= 0 {
		return false
	}
	if _, ok := nodes.ProcessStart(os.Getpid()); !ok {
		return false // no /proc: cannot tell
	}
	// No start label: any process under the pid is the runner.
	start, _ := strconv.ParseUint(l[LabelRunnerStart], 10, 64)
	return !nodes.ProcessAlive(pid, start)
}

// userImage is the image that runs a user's node binary, built once per
// run (and kept while its tag exists).
func (r *Run) userImage(ctx context.Context, binary string) (string, error) {
	r.mu.Lock()
	tag, ok := r.userImages[binary]
	r.mu.Unlock()
	if ok {
		return tag, nil
	}
	tag, err := ensureUserImage(ctx, r.client, binary, r.opts.Logf)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	if r.userImages == nil {
		r.userImages = map[string]string{}
	}
	r.userImages[binary] = tag
	r.mu.Unlock()
	return tag, nil
}
