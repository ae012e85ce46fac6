package docker

// The remote-engine path: the engine runs on another host (DOCKER_HOST=tcp://…),
// or its bridge is not on this host (Docker Desktop's VM, rootless Docker).
// Nothing of this host's file system is visible to the engine, and its
// bridge IPs cannot be reached from here, so:
//   - a validator's home is uploaded into its container (a tar) before its
//     first start, and node.log (and a FilePV's state) copied back when it
//     is stopped or removed; nothing is bind-mounted;
//   - a node streams its events over TCP to a listener of this host
//     (Run.HostAddr, as the containers reach it);
//   - RPC (26657) and the signer port (26659) are published on the engine
//     host at random ports; the runner reaches RPC at EngineHost:<port>, and
//     a signer dials a relay on this host's loopback that forwards to
//     EngineHost:<published 26659> (published ports change at every start of
//     a container, a relay's address does not);
//   - P2P stays on the bridge, between containers.

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	dc "github.com/ory/dockertest/v3/docker"

	"github.com/valnet/valnet/internal/accept"
)

// Remote reports whether the run uses the remote-engine path: no bind
// mounts, events over TCP, RPC and signers through published ports, and no
// link fabric between containers (its proxies would have to sit on the
// engine's host). The runner must refuse shaped links and network faults
// when it is true.
func (r *Run) Remote() bool { return r.remote }

// EngineHost is where this host reaches the ports the engine publishes
// (remote engine only; "" otherwise).
func (r *Run) EngineHost() string { return r.engineHost }

// HostAddr is this host's address as the containers reach it (remote
// engine only; "" otherwise).
func (r *Run) HostAddr() string { return r.hostAddr }

// resolveRemote sets the engine host and this host's address for the
// remote path, from the options, the environment, or the endpoint.
func (r *Run) resolveRemote() error {
	r.engineHost = firstNonEmpty(r.opts.EngineHost, os.Getenv(EngineHostEnv))
	ep := r.client.Endpoint()
	enginePort := "2375"
	if u, err := url.Parse(ep); err == nil && u.Scheme != "unix" && u.Hostname() != "" {
		if r.engineHost == "" {
			r.engineHost = u.Hostname()
		}
		if p := u.Port(); p != "" {
			enginePort = p
		}
	}
	if r.engineHost == "" {
		r.engineHost = "127.0.0.1" // a unix socket: Docker Desktop, rootless Docker publish on this host
	}
	r.hostAddr = firstNonEmpty(r.opts.HostAddr, os.Getenv(HostAddrEnv))
	if r.hostAddr != "" {
		return nil
	}
	if ip := net.ParseIP(r.engineHost); (ip != nil && ip.IsLoopback()) || r.engineHost == "localhost" {
		// The engine is reached through this host's loopback (a VM, a
		// tunnel): its containers reach this host by Docker's own name
		// (mapped to the host gateway in every container, see create).
		r.hostAddr = hostGatewayName
		return nil
	}
	// This host's source address on its route to the engine host.
	conn, err := net.Dial("udp", net.JoinHostPort(r.engineHost, enginePort))
	if err != nil {
		return fmt.Errorf("docker backend: remote engine %s: cannot tell this host's address as its containers see it (%v); set %s", ep, err, HostAddrEnv)
	}
	defer conn.Close()
	r.hostAddr = conn.LocalAddr().(*net.UDPAddr).IP.String()
	return nil
}

// hostGatewayName is the name a container resolves to its engine host's
// gateway (ExtraHosts host-gateway, Docker 20.10 and later).
const hostGatewayName = "host.docker.internal"

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// SignerAddr is how the runner serves validator name's signer from this
// host: laddr is the node's priv_validator_laddr, dialNetwork and dialAddr
// where the signer dials (signers.ServerConfig{Network, Address}). With a
// local engine it is the unix socket of SignerSocket ("unix", the host
// path); with a remote engine a unix socket cannot cross hosts, so every
// signer goes over TCP: laddr tcp://0.0.0.0:26659, and the signer dials a
// relay on this host's loopback that forwards to the node's published
// port. name should have been Prepared.
func (r *Run) SignerAddr(name string) (laddr, dialNetwork, dialAddr string) {
	if !r.remote {
		laddr, hostPath := r.SignerSocket(name)
		return laddr, "unix", hostPath
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	laddr = fmt.Sprintf("tcp://0.0.0.0:%d", PrivValPort)
	rl, err := r.relayLocked(name)
	if err != nil {
		return laddr, "tcp", "" // the signer fails to dial and says so
	}
	return laddr, "tcp", rl.addr()
}

// signerRelay forwards the connections of a signer on this host to a
// node's published signer port, looked up at each connection.
type signerRelay struct {
	run  *Run
	name string
	loop *accept.Loop
}

// relayLocked returns validator name's signer relay, opening it if needed;
// r.mu held.
func (r *Run) relayLocked(name string) (*signerRelay, error) {
	if rl := r.relays[name]; rl != nil {
		return rl, nil
	}
	if r.closed {
		return nil, errors.New("docker: run closed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("docker: signer relay of %s: %w", name, err)
	}
	rl := &signerRelay{run: r, name: name, loop: accept.New(ln)}
	rl.loop.Serve(rl.relay)
	r.relays[name] = rl
	return rl, nil
}

func (rl *signerRelay) addr() string { return rl.loop.Addr().String() }

// relay joins one signer connection to the node's published port; without
// a running node it closes the connection (the signer redials).
func (rl *signerRelay) relay(c net.Conn) {
	defer c.Close()
	port := rl.run.publishedPort(rl.name, PrivValPort)
	if port == "" {
		time.Sleep(200 * time.Millisecond) // no busy redial loop before the node exists
		return
	}
	up, err := net.DialTimeout("tcp", net.JoinHostPort(rl.run.engineHost, port), 5*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	if !rl.loop.Track(up) {
		return // closing
	}
	defer rl.loop.Untrack(up)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); closeWrite(up); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); closeWrite(c); done <- struct{}{} }()
	<-done
	<-done
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

// close stops the relay and cuts its connections.
func (rl *signerRelay) close() { rl.loop.Close(0) }

// publishedPort is the engine host's port that a running container of
// validator name publishes for its port; "" if none.
func (r *Run) publishedPort(name string, port int) string {
	r.mu.Lock()
	var n *node
	for _, cand := range r.nodes {
		if cand.name == name {
			n = cand // the last one started
		}
	}
	r.mu.Unlock()
	if n == nil {
		return ""
	}
	return n.hostPort(port)
}

// readPorts reads the host ports the engine gave the container's published
// ports at its last start.
func (n *node) readPorts(ins *dc.Container) {
	ports := map[int]string{}
	if ins.NetworkSettings != nil {
		for p, bindings := range ins.NetworkSettings.Ports {
			num, err := strconv.Atoi(p.Port())
			if err != nil || p.Proto() != "tcp" {
				continue
			}
			for _, b := range bindings {
				if b.HostPort != "" {
					ports[num] = b.HostPort
					break
				}
			}
		}
	}
	n.addrMu.Lock()
	n.ports = ports
	if hp := ports[RPCPort]; hp != "" {
		n.rpc = "http://" + net.JoinHostPort(n.run.engineHost, hp)
		n.addrs.RPC = n.rpc
	}
	n.addrMu.Unlock()
}

func (n *node) hostPort(port int) string {
	n.addrMu.Lock()
	defer n.addrMu.Unlock()
	return n.ports[port]
}

// portBindings publishes RPC and the signer port at random ports of the
// engine host (its loopback only when the engine is reached there).
func (r *Run) portBindings() (map[dc.Port]struct{}, map[dc.Port][]dc.PortBinding) {
	hostIP := ""
	if ip := net.ParseIP(r.engineHost); ip != nil && ip.IsLoopback() {
		hostIP = r.engineHost
	}
	exposed := map[dc.Port]struct{}{}
	bindings := map[dc.Port][]dc.PortBinding{}
	for _, p := range []int{RPCPort, PrivValPort} {
		k := dc.Port(strconv.Itoa(p) + "/tcp")
		exposed[k] = struct{}{}
		bindings[k] = []dc.PortBinding{{HostIP: hostIP, HostPort: ""}}
	}
	return exposed, bindings
}

// uploadHome copies the validator's home into its (created, not started)
// container at /home/valnet, owned by the runner's uid:gid as the node
// runs.
func (n *node) uploadHome() error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarHome(pw, n.home)) }()
	err := n.run.client.UploadToContainer(n.id, dc.UploadToContainerOptions{InputStream: pr, Path: "/"})
	pr.CloseWithError(errors.New("upload ended"))
	if err != nil {
		return fmt.Errorf("node %s: upload home into container: %w", n.name, err)
	}
	return nil
}

// tarHome writes home as home/valnet/… (regular files, dirs, symlinks).
func tarHome(w io.Writer, home string) error {
	tw := tar.NewWriter(w)
	uid, gid := os.Getuid(), os.Getgid()
	root := strings.TrimPrefix(ContainerHome, "/")
	now := time.Now()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: path.Dir(root) + "/", Mode: 0o755, ModTime: now}); err != nil {
		return err
	}
	err := filepath.Walk(home, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(home, p)
		if err != nil {
			return err
		}
		name := path.Join(root, filepath.ToSlash(rel))
		link := ""
		switch {
		case fi.Mode().IsRegular(), fi.IsDir():
		case fi.Mode()&os.ModeSymlink != 0:
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		default:
			return nil // sockets and the like stay here
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name, h.Uid, h.Gid, h.Uname, h.Gname = name, uid, gid, "", ""
		if fi.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.CopyN(tw, f, h.Size)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// fetchFiles copies back from the container what the run directory keeps
// of the node: node.log, and the FilePV's last-sign state when the home
// has one. Best effort: a file that cannot be read is left as it was.
func (n *node) fetchFiles() {
	if !n.run.remote || n.id == "" {
		return
	}
	files := []string{nodeLogName}
	if st := n.spec.Config.PrivValidatorStateFile(); n.spec.Config.PrivValidatorListenAddr == "" {
		if rel, err := filepath.Rel(n.home, st); err == nil && !strings.HasPrefix(rel, "..") {
			files = append(files, filepath.ToSlash(rel))
		}
	}
	for _, rel := range files {
		if err := n.fetchFile(rel); err != nil {
			n.run.opts.Logf("docker: node %s: copy %s back from its container: %v", n.name, rel, err)
		}
	}
}

// nodeLogName is node.log's path in a home (nodes.LogFile).
const nodeLogName = "node.log"

func (n *node) fetchFile(rel string) error {
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		err := n.run.client.DownloadFromContainer(n.id, dc.DownloadFromContainerOptions{
			Path: ContainerHome + "/" + rel, OutputStream: pw, InactivityTimeout: 30 * time.Second})
		pw.CloseWithError(err)
		errc <- err
	}()
	defer func() { pr.Close(); <-errc }()
	tr := tar.NewReader(pr)
	for {
		h, err := tr.Next()
		if err != nil {
			if err == io.EOF {
				return errors.New("not in the archive")
			}
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		dst := filepath.Join(n.home, filepath.FromSlash(rel))
		tmp, err := os.CreateTemp(filepath.Dir(dst), ".fetch-*")
		if err != nil {
			return err
		}
		_, err = io.Copy(tmp, tr)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(tmp.Name(), 0o600)
		}
		if err == nil {
			err = os.Rename(tmp.Name(), dst)
		}
		if err != nil {
			os.Remove(tmp.Name())
		}
		return err
	}
}
