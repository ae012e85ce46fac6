package nodes

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cometbft/cometbft/crypto/ed25519"
	cmtlog "github.com/cometbft/cometbft/libs/log"
	"github.com/cometbft/cometbft/p2p"
	"github.com/cometbft/cometbft/privval"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/internal/nettest"
	"github.com/valnet/valnet/internal/testbin"
	"github.com/valnet/valnet/results/eventlog"
)

// Helper modes of the test binary, re-executed as a child.
const (
	helperEnv    = "VALNET_NODES_TEST_HELPER"
	helperRunner = "runner" // a "runner" that spawns one node, prints its pid and blocks
	helperSleep  = "sleep"  // a process that only sleeps
)

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case helperRunner:
		os.Exit(runHelperRunner())
	case helperSleep:
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// valnetBinary builds the valnet command once per test binary; process
// nodes run its node subcommand.
func valnetBinary(t *testing.T) string {
	t.Helper()
	if !processSupported {
		t.Skip("the process backend needs Linux")
	}
	return testbin.Valnet(t)
}

// Four validators, each its own `valnet node` process. Events arrive over
// the event sockets; a killed validator leaves 3 of 4 to go on, restarts
// from its home and catches up without double signing; a paused one stops
// advancing while the others go on, and catches up once resumed.
func TestProcessNetwork(t *testing.T) {
	bin := valnetBinary(t)
	tn := newTestNet(t, t.TempDir(), 4)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	tn.start(ctx, Process{Command: []string{bin, "node"}})
	t.Logf("4 processes up in %v", time.Since(start).Round(time.Millisecond))
	var pids []int
	for _, n := range tn.Nodes {
		pids = append(pids, n.(*processNode).life.cur.pid)
		if _, err := os.Stat(entryPath(pids[len(pids)-1])); err != nil {
			t.Errorf("%s: no pid registry entry: %v", n.Name(), err)
		}
	}
	tn.ReachHeight(5)
	t.Logf("height 5 after %v", time.Since(start).Round(time.Millisecond))

	// Kill v3: the others go on; restarted, it catches up and signs again,
	// and its FilePV never goes back.
	var signedBefore int64
	tn.KillRestart(ctx, "v3", []string{"v0", "v1", "v2"}, func() { signedBefore = lastSignHeight(t, tn.specs[3]) })
	if after := lastSignHeight(t, tn.specs[3]); after < signedBefore {
		t.Fatalf("v3's FilePV went back from height %d to %d", signedBefore, after)
	}

	// Pause v2: it stops while the others go on; resumed, it catches up.
	tn.PauseResume(ctx, "v2", "v0", "v1", "v3")

	// No double sign: no node saw conflicting votes, and no block holds
	// evidence of one.
	if c := nettest.ConflictingVotes(tn.Log.Snapshot()); len(c) > 0 {
		t.Fatalf("conflicting votes: %v", c)
	}
	top := tn.Height("v0")
	for h := int64(1); h <= top; h++ {
		if n := evidenceAt(t, tn.addrs("v0").RPC, h); n > 0 {
			t.Fatalf("block %d holds %d evidence", h, n)
		}
	}
	t.Logf("checked heights 1..%d after %v", top, time.Since(start).Round(time.Millisecond))

	// A clean stop: every process exits 0, leaves no registry entry and no
	// socket dir.
	sockDirs := []string{}
	for _, n := range tn.Nodes {
		sockDirs = append(sockDirs, n.(*processNode).sockDir)
	}
	stopStart := time.Now()
	tn.Stop()
	tn.Nodes = nil
	t.Logf("clean stop of 4 processes in %v", time.Since(stopStart).Round(time.Millisecond))
	for i, pid := range pids {
		if i == 3 {
			continue // v3's first pid was killed and reaped
		}
		if _, err := os.Stat(entryPath(pid)); err == nil {
			t.Errorf("pid %d still in the registry after stop", pid)
		}
	}
	for _, d := range sockDirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("socket dir %s left behind", d)
		}
	}
}

// lastSignHeight reads the height of a home's FilePV state file.
func lastSignHeight(t *testing.T, s Spec) int64 {
	t.Helper()
	data, err := os.ReadFile(s.Config.PrivValidatorStateFile())
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Height string `json:"height"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	h, _ := strconv.ParseInt(st.Height, 10, 64)
	return h
}

// evidenceAt counts the evidence in block h, read over RPC.
func evidenceAt(t *testing.T, rpc string, h int64) int {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("%s/block?height=%d", rpc, h))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result struct {
			Block struct {
				Evidence struct {
					Evidence []json.RawMessage `json:"evidence"`
				} `json:"evidence"`
			} `json:"block"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return len(out.Result.Block.Evidence.Evidence)
}

// A runner killed with SIGKILL leaves no node behind: the kernel kills the
// node (Pdeathsig), and CleanOrphans drops the registry entry of the
// dead runner.
func TestProcessNoOrphanWhenRunnerKilled(t *testing.T) {
	bin := valnetBinary(t)
	tn := newTestNet(t, t.TempDir(), 1)
	home := tn.specs[0].Config.RootDir
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), helperEnv+"="+helperRunner, "VALNET_TEST_BIN="+bin, "VALNET_TEST_HOME="+home)
	var stderr bytes.Buffer
	helper.Stderr = &stderr
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer helper.Process.Kill()
	pidc := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if s, ok := strings.CutPrefix(sc.Text(), "PID "); ok {
				pid, _ := strconv.Atoi(s)
				pidc <- pid
				return
			}
		}
		close(pidc)
	}()
	var pid int
	select {
	case pid = <-pidc:
	case <-time.After(90 * time.Second):
	}
	if pid == 0 {
		helper.Process.Kill()
		helper.Wait()
		t.Fatalf("helper runner did not start a node: %s", stderr.String())
	}
	data, err := os.ReadFile(entryPath(pid))
	if err != nil {
		t.Fatalf("no registry entry for node %d: %v", pid, err)
	}
	var e pidEntry
	if err := json.Unmarshal(data, &e); err != nil || e.RunnerPID != helper.Process.Pid || e.Home != home {
		t.Fatalf("registry entry %s: %+v (%v)", data, e, err)
	}
	if !isRecordedChild(e) {
		t.Fatalf("the live node %d does not match its entry %+v", pid, e)
	}

	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	helper.Wait()
	killedAt := time.Now()
	nettest.WaitFor(t, 5*time.Second, "the node dies with its runner", func() bool { return !ProcessAlive(pid, 0) })
	t.Logf("node %d gone %v after its runner", pid, time.Since(killedAt).Round(time.Millisecond))

	killed, err := CleanOrphans()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(killed, pid) {
		t.Fatalf("CleanOrphans killed %d, already dead", pid)
	}
	if _, err := os.Stat(entryPath(pid)); err == nil {
		t.Fatal("CleanOrphans left the entry of a dead runner")
	}
}

// runHelperRunner is the test binary acting as a runner: it starts the
// node of VALNET_TEST_HOME with the process backend, prints its pid and
// waits to be killed.
func runHelperRunner() int {
	home := os.Getenv("VALNET_TEST_HOME")
	c, err := LoadConfig(home)
	if err == nil {
		var gen *types.GenesisDoc
		var key *p2p.NodeKey
		if gen, err = types.GenesisDocFromFile(c.GenesisFile()); err == nil {
			if key, err = p2p.LoadNodeKey(c.NodeKeyFile()); err == nil {
				var n Node
				n, err = Process{Command: []string{os.Getenv("VALNET_TEST_BIN"), "node"}}.Start(context.Background(),
					Spec{Name: "v0", Config: c, Genesis: gen, NodeKey: key, Sink: eventlog.SinkFunc(func(eventlog.Event) {})})
				if err == nil {
					fmt.Printf("PID %d\n", n.(*processNode).life.cur.pid)
					select {}
				}
			}
		}
	}
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// CleanOrphans kills a live child of a dead runner that still runs with
// the recorded home, and never a process that merely reuses a pid.
func TestCleanOrphans(t *testing.T) {
	if !processSupported {
		t.Skip("needs Linux")
	}
	sleeper := func(args ...string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$"}, args...)...)
		cmd.Env = append(os.Environ(), helperEnv+"="+helperSleep)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	home := filepath.Join(t.TempDir(), "orphan-home")
	orphan := sleeper("--home", home)
	unrelated := sleeper("--something-else")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadRunner := dead.Process.Pid
	write := func(e pidEntry) {
		data, _ := json.Marshal(e)
		if err := os.MkdirAll(PIDRegistryDir(), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(entryPath(e.PID), data, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(entryPath(e.PID)) })
	}

	// A live runner's children are left alone.
	write(pidEntry{RunnerPID: os.Getpid(), PID: unrelated.Process.Pid, Home: home})
	killed, err := CleanOrphans()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(killed, unrelated.Process.Pid) {
		t.Fatal("killed the child of a live runner")
	}
	if _, err := os.Stat(entryPath(unrelated.Process.Pid)); err != nil {
		t.Fatal("removed the entry of a live runner")
	}
	// A dead runner's entry whose pid now runs something else (not the
	// recorded home): entry dropped, process spared.
	write(pidEntry{RunnerPID: deadRunner, PID: unrelated.Process.Pid, Home: home})
	// A dead runner's live child, still running with its home: killed.
	write(pidEntry{RunnerPID: deadRunner, PID: orphan.Process.Pid, Home: home})
	killed, err = CleanOrphans()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(killed, []int{orphan.Process.Pid}) {
		t.Fatalf("killed %v, want just the orphan %d", killed, orphan.Process.Pid)
	}
	if err := orphan.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("orphan: %v, want killed", err)
	}
	if !ProcessAlive(unrelated.Process.Pid, 0) {
		t.Fatal("the unrelated process was killed")
	}
	for _, pid := range []int{orphan.Process.Pid, unrelated.Process.Pid} {
		if _, err := os.Stat(entryPath(pid)); err == nil {
			t.Fatalf("entry %d left in the registry", pid)
		}
	}
}

// The runner's usual signer for a process node: priv_validator_laddr in
// config.toml, and a remote signer (here CometBFT's own SignerServer over
// a FilePV) dialing it, over TCP and over a unix socket. The signer
// redials a killed and restarted node.
func TestProcessRemoteSigner(t *testing.T) {
	bin := valnetBinary(t)
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			tn := newTestNet(t, t.TempDir(), 1)
			spec := tn.specs[0]
			c := spec.Config
			var laddr string
			var dial privval.SocketDialer
			if network == "tcp" {
				port, err := FreePort()
				if err != nil {
					t.Fatal(err)
				}
				defer ReleasePort(port)
				laddr = fmt.Sprintf("tcp://127.0.0.1:%d", port)
				dial = privval.DialTCPFn(strings.TrimPrefix(laddr, "tcp://"), 3*time.Second, ed25519.GenPrivKey())
			} else {
				dir, err := os.MkdirTemp("", "valnet-pv-")
				if err != nil {
					t.Fatal(err)
				}
				defer os.RemoveAll(dir)
				laddr = "unix://" + filepath.Join(dir, "pv.sock")
				dial = privval.DialUnixFn(filepath.Join(dir, "pv.sock"))
			}
			c.PrivValidatorListenAddr = laddr
			if err := WriteHome(spec); err != nil {
				t.Fatal(err)
			}
			// No FilePV key in the home: the node can only sign remotely.
			if err := os.Remove(c.PrivValidatorKeyFile()); err != nil {
				t.Fatal(err)
			}
			signer := newCountingSigner(spec.Signer)
			dialer := privval.NewSignerDialerEndpoint(cmtlog.NewNopLogger(), redialOnEOF(dial),
				privval.SignerDialerEndpointRetryWaitInterval(50*time.Millisecond),
				privval.SignerDialerEndpointConnRetries(2000))
			server := privval.NewSignerServer(dialer, spec.Genesis.ChainID, signer)
			if err := server.Start(); err != nil {
				t.Fatal(err)
			}
			// Registered before the nodes' cleanup, so it runs after it: a
			// node whose signer is gone is slow to stop (it retries it).
			t.Cleanup(func() { server.Stop() })

			ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
			defer cancel()
			tn.start(ctx, Process{Command: []string{bin, "node"}})
			nettest.WaitFor(t, 3*time.Minute, "height 3", func() bool { return tn.Log.Block("v0") >= 3 })
			if err := tn.Ctl("v0").Kill(ctx); err != nil {
				t.Fatal(err)
			}
			if err := tn.Ctl("v0").Restart(ctx); err != nil {
				t.Fatal(err)
			}
			target := tn.Log.Block("v0") + 3
			nettest.WaitFor(t, 3*time.Minute, "blocks after the restart", func() bool { return tn.Log.Block("v0") >= target })
			votes, doubles := signer.report()
			if votes == 0 || len(doubles) > 0 {
				t.Fatalf("remote signer: %d votes, double signs %v", votes, doubles)
			}
		})
	}
}

// redialOnEOF makes CometBFT's SignerServer notice a node that died. Its
// endpoint drops a connection (and redials) only on an error with a
// Timeout method; a dead node gives EOF or a reset, on which v1.0.1 would
// spin on the dead connection forever. Every read error is made one.
func redialOnEOF(dial privval.SocketDialer) privval.SocketDialer {
	return func() (net.Conn, error) {
		c, err := dial()
		if err != nil {
			return nil, err
		}
		return lostConn{c}, nil
	}
}

type lostConn struct{ net.Conn }

func (c lostConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		err = connLost{err}
	}
	return n, err
}

type connLost struct{ error }

func (connLost) Timeout() bool   { return false } // its presence is what counts
func (e connLost) Unwrap() error { return e.error }

// A node that cannot start says why; a restart on a port another process
// took fails clearly, and works once the port is free again.
func TestProcessStartErrors(t *testing.T) {
	bin := valnetBinary(t)
	tn := newTestNet(t, t.TempDir(), 1)
	spec := tn.specs[0]
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	// The child exits at once: the error carries its stderr.
	bad := spec
	badCfg := *spec.Config
	badCfg.SetRoot(filepath.Join(t.TempDir(), "nohome"))
	os.MkdirAll(badCfg.RootDir, 0o700)
	os.WriteFile(filepath.Join(badCfg.RootDir, "priv_validator_key.json"), nil, 0o600)
	badCfg.BaseConfig.PrivValidatorKey = "priv_validator_key.json"
	bad.Config = &badCfg
	_, err := Process{Command: []string{bin, "node"}}.Start(ctx, bad)
	if err == nil || !strings.Contains(err.Error(), "exited during start") || !strings.Contains(err.Error(), "config.toml") {
		t.Fatalf("start from a home without config.toml: %v", err)
	}
	// No FilePV and no laddr: refused before spawning.
	noPV := spec
	noPVCfg := *spec.Config
	noPVCfg.BaseConfig.PrivValidatorKey = "config/none.json"
	noPV.Config = &noPVCfg
	if _, err := (Process{Command: []string{bin, "node"}}).Start(ctx, noPV); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Fatalf("start without a signer: %v", err)
	}

	tn.start(ctx, Process{Command: []string{bin, "node"}})
	nettest.WaitFor(t, 3*time.Minute, "height 2", func() bool { return tn.Log.Block("v0") >= 2 })
	ctl := tn.Ctl("v0")
	if err := ctl.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ctl.Pause(ctx); err == nil {
		t.Fatal("paused a killed node")
	}
	l, err := net.Listen("tcp", strings.TrimPrefix(spec.Config.RPC.ListenAddress, "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	err = ctl.Restart(ctx)
	l.Close()
	if err == nil || !strings.Contains(err.Error(), "is taken") {
		t.Fatalf("restart on a taken port: %v", err)
	}
	if err := ctl.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	h := tn.Log.Block("v0")
	nettest.WaitFor(t, 3*time.Minute, "blocks after the restart", func() bool { return tn.Log.Block("v0") > h+1 })
}

// The runner's homes may be relative to its working directory (runs/...);
// the child, which runs in its home, gets the absolute path.
func TestProcessRelativeHome(t *testing.T) {
	bin := valnetBinary(t)
	t.Chdir(t.TempDir())
	tn := newTestNet(t, "runs", 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tn.start(ctx, Process{Command: []string{bin, "node"}})
	nettest.WaitFor(t, 3*time.Minute, "height 2", func() bool { return tn.Log.Block("v0") >= 2 })
}
