//go:build integ

package docker

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dc "github.com/ory/dockertest/v3/docker"

	"github.com/valnet/valnet/internal/nettest"
	"github.com/valnet/valnet/nodes"
	"github.com/valnet/valnet/signers"
)

// The image is built once per binary and reused while its tag exists;
// what it holds runs.
func TestIntegImageBuildAndReuse(t *testing.T) {
	bin := engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	// A binary of its own (the valnet binary with a nonce appended, which
	// an ELF ignores): a tag nobody else builds or removes meanwhile, and
	// a real build.
	bin = uniqueBinary(t, bin)
	sum, err := fileSHA256(bin)
	if err != nil {
		t.Fatal(err)
	}
	want := ImageRepo + ":" + sum[:12]
	t.Cleanup(func() { _ = c.RemoveImage(want) })

	start := time.Now()
	tag, built, err := ensureImage(ctx, c, bin, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	first := time.Since(start)
	if tag != want {
		t.Fatalf("tag %s, want %s", tag, want)
	}
	if !built {
		t.Fatal("the first ensureImage did not build")
	}
	start = time.Now()
	tag2, built2, err := ensureImage(ctx, c, bin, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if built2 || tag2 != tag {
		t.Fatalf("second ensureImage: tag %s built %v; want %s reused", tag2, built2, tag)
	}
	t.Logf("first ensureImage (build: %v) %v, second (reuse) %v", built, first.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	// The image runs valnet: `valnet version` instead of `valnet node`.
	ct, err := c.CreateContainer(dc.CreateContainerOptions{Context: ctx,
		Config:     &dc.Config{Image: tag, Entrypoint: []string{"/valnet", "version"}, Labels: map[string]string{"valnet.test": "image"}},
		HostConfig: &dc.HostConfig{NetworkMode: "none"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.RemoveContainer(dc.RemoveContainerOptions{ID: ct.ID, Force: true})
	if err := c.StartContainer(ct.ID, nil); err != nil {
		t.Fatal(err)
	}
	if code, err := c.WaitContainerWithContext(ct.ID, ctx); err != nil || code != 0 {
		t.Fatalf("valnet version in the image: exit %d, %v", code, err)
	}
	var out bytes.Buffer
	if err := c.Logs(dc.LogsOptions{Container: ct.ID, OutputStream: &out, ErrorStream: &out, Stdout: true, Stderr: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "valnet") {
		t.Fatalf("valnet version in the image said %q", out.String())
	}
}

// With no binary given, the node binary comes from $VALNET_DOCKER_BINARY,
// else from building valnet's module: reproducibly, so the image tag of
// unchanged code stays the same.
func TestIntegResolveBinary(t *testing.T) {
	bin, want, goos, goarch := nodeBinaryTarget(t)
	ctx := context.Background()
	for _, env := range []string{"", bin} {
		t.Setenv(BinaryEnv, env)
		dst := filepath.Join(t.TempDir(), "valnet")
		if err := resolveBinary(ctx, "", dst, goos, goarch, t.Logf); err != nil {
			t.Fatal(err)
		}
		if got, _ := fileSHA256(dst); got != want {
			t.Errorf("%s=%q: binary %s, want %s (the test's own build)", BinaryEnv, env, got[:12], want[:12])
		}
	}
	t.Setenv(BinaryEnv, "/bin/sh")
	if err := resolveBinary(ctx, "", filepath.Join(t.TempDir(), "valnet"), goos, goarch, t.Logf); err == nil {
		t.Errorf("%s=/bin/sh was accepted", BinaryEnv)
	}
}

// uniqueBinary copies bin with a random nonce appended.
func uniqueBinary(t *testing.T, bin string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "valnet")
	if err := copyFile(bin, dst); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(dst, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "valnet-test-nonce-%d-%d", time.Now().UnixNano(), os.Getpid()); err != nil {
		t.Fatal(err)
	}
	return dst
}

// Four validators, each in its container, peers through the link fabric
// on the bridge gateway; v0 and v1 sign with the FilePV of their homes, v2
// and v3 on the host, over priv_validator_laddr (a unix socket in the
// bind-mounted socket dir, and TCP): height 5 with events at the Sink; a
// paused node stops and catches up once resumed; a killed node (v3, and a
// paused v2) restarts from its home and signs again. Nothing of the run
// is left.
func TestIntegDockerNetwork(t *testing.T) {
	root := t.TempDir()
	nettest.ShowLogsOnFailure(t, root, "node.log", nodes.StderrFile)
	testStart := time.Now()
	r := newTestRun(t, t.Logf)
	t.Logf("run %s: network %s (%s, gateway %s), image %s, in %v", r.ID(), r.NetworkName(), r.subnet, r.Gateway(), r.Image(),
		time.Since(testStart).Round(time.Millisecond))
	tn := newTestNet(t, r, root, 4, netOptions{fabric: true, remote: map[string]string{"v2": signers.NetUnix, "v3": signers.NetTCP}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Misuse is refused before any container exists.
	bad := tn.specs[0]
	bad.Name = "stranger"
	if _, err := r.Backend().Start(ctx, bad); err == nil || !strings.Contains(err.Error(), "Prepare") {
		t.Fatalf("an unprepared node: %v", err)
	}
	loop := tn.specs[0]
	c, rpc := *loop.Config, *loop.Config.RPC
	rpc.ListenAddress = "tcp://127.0.0.1:26657"
	c.RPC = &rpc
	loop.Config = &c
	if _, err := r.Backend().Start(ctx, loop); err == nil || !strings.Contains(err.Error(), "0.0.0.0") {
		t.Fatalf("a node on loopback: %v", err)
	}

	start := time.Now()
	tn.start(ctx)
	t.Logf("4 containers up in %v", time.Since(start).Round(time.Millisecond))
	for _, n := range tn.Nodes {
		if a := tn.addrs(n.Name()); !strings.HasPrefix(a.RPC, "http://172.") || !strings.Contains(a.P2P, "@172.") {
			t.Errorf("%s: addrs %+v", n.Name(), a)
		}
	}
	tn.ReachHeight(5)
	t.Logf("height 5 after %v", time.Since(start).Round(time.Millisecond))

	// Pause v2: it stops while the others go on; resumed, it catches up.
	tn.PauseResume(ctx, "v2", "v0", "v1", "v3")
	t.Logf("pause/resume done after %v", time.Since(start).Round(time.Millisecond))

	// Kill v3 (its signer on the host): the others go on; restarted, it
	// catches up and its signer (which redials) signs again.
	tn.KillRestart(ctx, "v3", []string{"v0", "v1", "v2"}, nil)
	t.Logf("kill/restart of v3 done after %v", time.Since(start).Round(time.Millisecond))

	// Kill a paused node: docker kills a frozen container too. It restarts
	// over the signer socket its killed self left behind.
	if err := tn.Ctl("v2").Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tn.Ctl("v2").Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tn.Ctl("v2").Pause(ctx); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("pausing a killed node: %v", err)
	}
	if err := tn.Ctl("v2").Restart(ctx); err != nil {
		t.Fatal(err)
	}
	top := tn.Log.MinBlock("v0", "v1", "v3")
	nettest.WaitFor(t, 3*time.Minute, "v2 catches up after kill while paused", func() bool { return tn.Log.Block("v2") >= top+1 })
	nettest.WaitFor(t, 3*time.Minute, "v2 signs again", func() bool { return nettest.SignedIn(tn.Log.Snapshot(), "v2", top) })
	t.Logf("kill while paused + restart of v2 done after %v", time.Since(start).Round(time.Millisecond))

	tn.stopClean()
	for _, n := range tn.Nodes {
		if err := n.Stop(ctx); err != nil {
			t.Errorf("second stop of %s: %v", n.Name(), err)
		}
		if err := n.(nodes.Controller).Restart(ctx); err == nil {
			t.Errorf("restart of stopped %s succeeded", n.Name())
		}
	}
	ids := r.ID()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	assertNoLeftovers(t, r.client, ids)
	if cmd := r.KeepCommand(); !strings.Contains(cmd, "label=valnet.run="+ids) || !strings.Contains(cmd, "docker network rm valnet-"+ids) {
		t.Errorf("keep command %q", cmd)
	}
	t.Logf("whole test %v", time.Since(testStart).Round(time.Millisecond))
}

// What a killed runner left (a network and a container labelled with a
// dead pid on this host, or with a pid since reused) is removed; what a
// live runner, or another host's, owns stays.
func TestIntegCleanupLeftovers(t *testing.T) {
	bin := engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	image, _, err := ensureImage(ctx, c, bin, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	// A pid that was alive and is not any more.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := dead.Process.Pid
	if nodes.ProcessAlive(deadPID, 0) {
		t.Skipf("pid %d was reused at once", deadPID)
	}
	host, _ := os.Hostname()
	self := runnerLabels("x")
	fake := func(id string, pid int, start, host string) map[string]string {
		return map[string]string{LabelRun: id, LabelRunnerPID: strconv.Itoa(pid), LabelRunnerStart: start, LabelRunnerHost: host}
	}
	sockDir, err := os.MkdirTemp("", "valnet-dk-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	cases := []struct {
		labels map[string]string
		gone   bool
	}{
		{fake(newRunID("dead-runner"), deadPID, "", host), true},
		{fake(newRunID("reused-pid"), os.Getpid(), "1", host), true},
		{fake(newRunID("live-runner"), os.Getpid(), self[LabelRunnerStart], host), false},
		{fake(newRunID("other-host"), deadPID, "", host+"-elsewhere"), false},
	}
	for i, tc := range cases {
		id := tc.labels[LabelRun]
		t.Cleanup(func() { removeRun(context.Background(), c, id) })
		nl := map[string]string{LabelSockDir: sockDir}
		for k, v := range tc.labels {
			nl[k] = v
		}
		if i != 0 {
			delete(nl, LabelSockDir)
		}
		n, err := c.CreateNetwork(dc.CreateNetworkOptions{Name: "valnet-" + id, Driver: "bridge", Labels: nl, Context: ctx})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.CreateContainer(dc.CreateContainerOptions{Context: ctx, Name: ContainerName(id, "v0"),
			Config:     &dc.Config{Image: image, Labels: tc.labels},
			HostConfig: &dc.HostConfig{NetworkMode: n.Name}}); err != nil {
			t.Fatal(err)
		}
	}
	// A dry run lists the dead runs' leftovers and removes nothing.
	dry, err := CleanupLeftovers(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		id := tc.labels[LabelRun]
		if slices.Contains(dry.Runs, id) != tc.gone {
			t.Errorf("dry run: run %s listed %v, want %v", id, slices.Contains(dry.Runs, id), tc.gone)
		}
		cs, _ := c.ListContainers(dc.ListContainersOptions{All: true, Filters: map[string][]string{"label": {LabelRun + "=" + id}}})
		if len(cs) != 1 {
			t.Errorf("dry run: run %s has %d containers, want its 1 untouched", id, len(cs))
		}
	}
	if _, err := os.Stat(sockDir); err != nil {
		t.Errorf("dry run removed the socket dir: %v", err)
	}
	l, err := CleanupLeftovers(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	removed := l.Runs
	for _, tc := range cases {
		id := tc.labels[LabelRun]
		// Another valnet on this engine may have removed a dead run's
		// leftovers first: what counts is that they are gone, and that a
		// live run's are neither removed nor reported.
		if slices.Contains(removed, id) && !tc.gone {
			t.Errorf("run %s of a live runner was removed", id)
		}
		cs, _ := c.ListContainers(dc.ListContainersOptions{All: true, Filters: map[string][]string{"label": {LabelRun + "=" + id}}})
		nets, _ := c.FilteredListNetworks(dc.NetworkFilterOpts{"label": {LabelRun + "=" + id: true}})
		if left := len(cs) + len(nets); (left == 0) != tc.gone {
			t.Errorf("run %s: %d containers and %d networks left; want gone: %v", id, len(cs), len(nets), tc.gone)
		}
		if !tc.gone {
			if _, _, errs := removeRun(ctx, c, id); len(errs) > 0 {
				t.Error(errs)
			}
		}
	}
	if _, err := os.Stat(sockDir); err == nil {
		t.Errorf("the dead run's socket dir %s was not removed", sockDir)
	}
}

// A remote engine, simulated with the local one behind a TCP endpoint
// (socat): no bind mounts (homes uploaded, node.log copied back), events
// over TCP to this host's address as containers see it, RPC and the
// signer port published on the engine host (127.0.0.1 here); v2 asks for
// a unix signer and gets TCP through the relay, v3 signs over TCP. Height
// 5, a kill and restart of v3 (new published ports), full cleanup.
func TestIntegDockerRemoteEngine(t *testing.T) {
	engine(t)
	endpoint := socatEngine(t)
	testStart := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	local, err := connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	// This host as the run's containers reach it: the default bridge's
	// gateway, an address of this host (a real remote engine: the
	// default, this host's source address towards the engine).
	hostAddr := ""
	if br, err := local.NetworkInfo("bridge"); err == nil && len(br.IPAM.Config) > 0 {
		if hostAddr = br.IPAM.Config[0].Gateway; hostAddr == "" {
			if _, ipn, err := net.ParseCIDR(br.IPAM.Config[0].Subnet); err == nil && ipn.IP.To4() != nil {
				gw := append(net.IP(nil), ipn.IP.To4()...)
				gw[3]++
				hostAddr = gw.String() // Docker's default: the subnet's first address
			}
		}
	}
	if hostAddr == "" || !isLocalIP(net.ParseIP(hostAddr)) {
		t.Skipf("no default bridge gateway on this host (%q) for containers to reach it", hostAddr)
	}
	r := newTestRunWith(t, Options{Logf: t.Logf, Endpoint: endpoint, HostAddr: hostAddr})
	if !r.Remote() || r.EngineHost() != "127.0.0.1" || r.HostAddr() != hostAddr {
		t.Fatalf("remote %v, engine host %q, host addr %q", r.Remote(), r.EngineHost(), r.HostAddr())
	}
	if _, network, addr := r.SignerAddr("nobody-yet"); network != signers.NetTCP || !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("remote SignerAddr: %s %s", network, addr)
	}
	root := t.TempDir()
	nettest.ShowLogsOnFailure(t, root, "node.log", nodes.StderrFile)
	tn := newTestNet(t, r, root, 4, netOptions{remote: map[string]string{"v2": signers.NetUnix, "v3": signers.NetTCP}})
	for _, s := range tn.specs {
		if s.Config.PrivValidatorListenAddr != "" && !strings.HasPrefix(s.Config.PrivValidatorListenAddr, "tcp://0.0.0.0:") {
			t.Fatalf("%s: priv_validator_laddr %s", s.Name, s.Config.PrivValidatorListenAddr)
		}
		if _, err := os.Stat(nodes.LogFile(s.Config)); err == nil {
			t.Fatalf("%s: node.log exists before the start", s.Name)
		}
	}
	start := time.Now()
	tn.start(ctx)
	t.Logf("4 containers up in %v", time.Since(start).Round(time.Millisecond))
	for _, n := range tn.Nodes {
		if a := tn.addrs(n.Name()); !strings.HasPrefix(a.RPC, "http://127.0.0.1:") || !strings.Contains(a.P2P, "@172.") {
			t.Errorf("%s: addrs %+v", n.Name(), a)
		}
		ins, err := r.client.InspectContainer(n.(*node).id)
		if err != nil {
			t.Fatal(err)
		}
		if len(ins.Mounts) != 0 || len(ins.HostConfig.Mounts) != 0 || len(ins.HostConfig.Binds) != 0 {
			t.Errorf("%s: mounts %+v %+v %v", n.Name(), ins.Mounts, ins.HostConfig.Mounts, ins.HostConfig.Binds)
		}
	}
	tn.ReachHeight(5)
	t.Logf("height 5 after %v", time.Since(start).Round(time.Millisecond))

	// Kill v3 (its signer on this host, through the relay) and restart it:
	// new published ports, the same relay.
	before := tn.addrs("v3").RPC
	tn.KillRestart(ctx, "v3", []string{"v0", "v1", "v2"}, nil)
	t.Logf("v3 RPC %s before the kill, %s after the restart", before, tn.addrs("v3").RPC)
	nettest.WaitFor(t, 3*time.Minute, "v2 signs (relay)", func() bool { return nettest.SignedIn(tn.Log.Snapshot(), "v2", 1) })
	t.Logf("kill/restart of v3 done after %v", time.Since(start).Round(time.Millisecond))
	tn.stopClean()
	for _, s := range tn.specs {
		data, err := os.ReadFile(nodes.LogFile(s.Config))
		if err != nil || len(data) == 0 {
			t.Errorf("%s: node.log not copied back: %v", s.Name, err)
		}
	}
	id := r.ID()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	assertNoLeftovers(t, local, id)
	t.Logf("whole test %v", time.Since(testStart).Round(time.Millisecond))
}

// socatEngine serves the local engine's socket on a TCP port of loopback
// (socat) and returns that endpoint; it skips the test when socat is
// missing or cannot start.
func socatEngine(t *testing.T) string {
	t.Helper()
	sock := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); strings.HasPrefix(h, "unix://") {
		sock = strings.TrimPrefix(h, "unix://")
	} else if h != "" {
		t.Skipf("DOCKER_HOST=%s is not a unix socket to put behind TCP", h)
	}
	socat, err := exec.LookPath("socat")
	if err != nil {
		t.Skip("socat not installed (apt-get install socat): it simulates a remote engine over TCP")
	}
	port, err := nodes.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(socat, fmt.Sprintf("TCP-LISTEN:%d,bind=127.0.0.1,fork,reuseaddr", port), "UNIX-CONNECT:"+sock)
	if err := cmd.Start(); err != nil {
		t.Skipf("socat: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	endpoint := "tcp://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := connect(ctx, endpoint)
		cancel()
		if err == nil {
			return endpoint
		}
		if time.Now().After(deadline) {
			t.Skipf("socat on %s does not answer as an engine: %v", endpoint, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
