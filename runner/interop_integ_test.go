//go:build integ

package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valnet/valnet/internal/testbin"
	"github.com/valnet/valnet/latency"
	"github.com/valnet/valnet/nodes"
	"github.com/valnet/valnet/signers"
)

// TestIntegStockCometBFTSignsWithValnetSigner runs an unmodified cometbft
// binary, of the v0.38 line (tendermint.privval) and of v1
// (cometbft.privval.v1), whose only validator signs through `valnet
// signer serve` (run in-process via signers.StartServe, dialect auto: both
// PubKey layouts at once) over priv_validator_laddr. The node cannot
// commit a block without the signer, so committed heights prove the
// signatures were accepted. The node is then restarted, and the signer
// must redial it and keep the chain going.
func TestIntegStockCometBFTSignsWithValnetSigner(t *testing.T) {
	// Parallel: its checks are load-proof (heights, signatures, /commit
	// agreement, lower bounds), so it runs beside the other parallel
	// tests of make integ after the sequential ones (the host-judged
	// timing tests and the leak searches) have had the host alone.
	t.Parallel()
	for _, version := range []string{"v0.38.26", "v1.0.1"} {
		t.Run(version, func(t *testing.T) { stockSignsWithValnetSigner(t, version) })
	}
}

func stockSignsWithValnetSigner(t *testing.T, version string) {
	tmp := t.TempDir()
	logs := &interopLogs{dir: tmp}
	t.Cleanup(func() { logs.showIfFailed(t) })
	start := time.Now()
	cometbft := testbin.CometBFT(t, version)

	home := filepath.Join(tmp, "home")
	if out, err := exec.Command(cometbft, "init", "--home", home).CombinedOutput(); err != nil {
		t.Fatalf("cometbft init: %v\n%s", err, out)
	}
	ports := interopPorts(t, 3)
	rpc := fmt.Sprintf("127.0.0.1:%d", ports[1])
	pvAddr := fmt.Sprintf("tcp://127.0.0.1:%d", ports[2])
	editStockConfig(t, filepath.Join(home, "config", "config.toml"), map[string]string{
		`priv_validator_laddr = ""`:         fmt.Sprintf(`priv_validator_laddr = %q`, pvAddr),
		`laddr = "tcp://0.0.0.0:26656"`:     fmt.Sprintf(`laddr = "tcp://127.0.0.1:%d"`, ports[0]),
		`laddr = "tcp://127.0.0.1:26657"`:   fmt.Sprintf(`laddr = "tcp://%s"`, rpc),
		`timeout_propose = "3s"`:            `timeout_propose = "300ms"`,
		`timeout_prevote = "1s"`:            `timeout_prevote = "100ms"`,
		`timeout_precommit = "1s"`:          `timeout_precommit = "100ms"`,
		`timeout_commit = "1s"`:             `timeout_commit = "100ms"`,
		`timeout_propose_delta = "500ms"`:   `timeout_propose_delta = "100ms"`,
		`timeout_prevote_delta = "500ms"`:   `timeout_prevote_delta = "50ms"`,
		`timeout_precommit_delta = "500ms"`: `timeout_precommit_delta = "50ms"`,
	})
	var genesis struct {
		ChainID string `json:"chain_id"`
	}
	readStockJSON(t, filepath.Join(home, "config", "genesis.json"), &genesis)
	var pvKey struct {
		Address string `json:"address"`
	}
	keyFile := filepath.Join(home, "config", "priv_validator_key.json")
	readStockJSON(t, keyFile, &pvKey)

	// The signer starts first and waits for the node, as tmkms would.
	out := &interopBuffer{}
	signed := &interopSigned{out: out}
	serve, err := signers.StartServe(signers.ServeConfig{Node: pvAddr, ChainID: genesis.ChainID, KeyFile: keyFile,
		Latency: &latency.Spec{Dist: latency.Fixed, Value: 5 * time.Millisecond}, Obs: signed, Log: logs.file(t, "signer.log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Stop() })
	logs.add("signer.out", out)
	if want := filepath.Join(home, "config", signers.DefaultServeStateName); serve.StateFile() != want {
		t.Errorf("state file %s, want %s", serve.StateFile(), want)
	}

	node := startStockNode(t, cometbft, home, logs.file(t, "node.log"))
	h1 := waitStockHeight(t, rpc, 5, node)
	t.Logf("height %d after %v", h1, time.Since(start).Round(time.Millisecond))

	// The commit of height 3 holds our validator's precommit.
	var commit struct {
		Result struct {
			SignedHeader struct {
				Commit struct {
					Signatures []struct {
						ValidatorAddress string `json:"validator_address"`
						Signature        string `json:"signature"`
					} `json:"signatures"`
				} `json:"commit"`
			} `json:"signed_header"`
		} `json:"result"`
	}
	mustStockRPC(t, rpc, "/commit?height=3", &commit)
	sigs := commit.Result.SignedHeader.Commit.Signatures
	if len(sigs) != 1 || sigs[0].ValidatorAddress != pvKey.Address || sigs[0].Signature == "" {
		t.Errorf("commit of height 3 has signatures %+v, want one from %s", sigs, pvKey.Address)
	}

	// A node restart: the signer must come back on its own.
	node.stop(t)
	node = startStockNode(t, cometbft, home, logs.file(t, "node-restarted.log"))
	h2 := waitStockHeight(t, rpc, h1+3, node)
	t.Logf("height %d after the node restart, %v in all", h2, time.Since(start).Round(time.Millisecond))
	node.stop(t)

	if err := serve.Stop(); err != nil {
		t.Errorf("signer stop: %v", err)
	}
	text := out.String()
	for h := int64(1); h <= h2; h++ {
		for _, phase := range []string{"prevote", "precommit"} {
			re := regexp.MustCompile(fmt.Sprintf(`(?m)^%s h=%d r=\d+ ok$`, phase, h))
			if !re.MatchString(text) {
				t.Errorf("no signed %s at height %d in the signer's records", phase, h)
			}
		}
	}
	for _, bad := range unexplainedRefusals(text) {
		t.Errorf("refused signature in the signer's records: %s", bad)
	}
	signerLog, _ := os.ReadFile(filepath.Join(tmp, "signer.log"))
	if !strings.Contains(string(signerLog), "reconnected to the node") {
		t.Errorf("the signer log does not show the reconnection")
	}
}

// stockNode is a cometbft child process in its own process group.
type stockNode struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
	once   sync.Once
}

func startStockNode(t *testing.T, cometbft, home string, log io.Writer) *stockNode {
	t.Helper()
	cmd := exec.Command(cometbft, "start", "--home", home, "--proxy_app=kvstore")
	cmd.Stdout, cmd.Stderr = log, log
	// Its own group, so that it and anything it starts are killed together.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &stockNode{cmd: cmd, exited: make(chan struct{})}
	go func() { n.err = cmd.Wait(); close(n.exited) }()
	t.Cleanup(func() { n.stop(t) })
	return n
}

// stop ends the node (SIGTERM, then SIGKILL after 10 s) and checks that
// its process is gone.
func (n *stockNode) stop(t *testing.T) {
	n.once.Do(func() {
		pid := n.cmd.Process.Pid
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		select {
		case <-n.exited:
		case <-time.After(10 * time.Second):
			t.Errorf("cometbft (pid %d) ignored SIGTERM; killing it", pid)
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-n.exited
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL) // anything left in its group
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("cometbft (pid %d) still exists after stop: %v", pid, err)
		}
	})
}

func (n *stockNode) running() error {
	select {
	case <-n.exited:
		return fmt.Errorf("cometbft exited: %v", n.err)
	default:
		return nil
	}
}

// waitStockHeight polls /status until the node has committed height want.
func waitStockHeight(t *testing.T, rpc string, want int64, node *stockNode) int64 {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var last int64
	for time.Now().Before(deadline) {
		if err := node.running(); err != nil {
			t.Fatal(err)
		}
		var st struct {
			Result struct {
				SyncInfo struct {
					LatestBlockHeight string `json:"latest_block_height"`
				} `json:"sync_info"`
			} `json:"result"`
		}
		if err := stockRPC(rpc, "/status", &st); err == nil {
			last, _ = strconv.ParseInt(st.Result.SyncInfo.LatestBlockHeight, 10, 64)
			if last >= want {
				return last
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("height %d not reached in 2m (last %d)", want, last)
	return 0
}

func stockRPC(rpc, path string, v any) error {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + rpc + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func mustStockRPC(t *testing.T, rpc, path string, v any) {
	t.Helper()
	if err := stockRPC(rpc, path, v); err != nil {
		t.Fatal(err)
	}
}

func readStockJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, v)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// editStockConfig replaces lines of config.toml; every line must be there, so a
// changed template fails loudly instead of leaving a default in place.
func editStockConfig(t *testing.T, path string, edits map[string]string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for from, to := range edits {
		re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(from) + `$`)
		if len(re.FindAllStringIndex(text, -1)) != 1 {
			t.Fatalf("config.toml: want exactly one line %q", from)
		}
		text = re.ReplaceAllLiteralString(text, to)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func interopPorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		port, err := nodes.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nodes.ReleasePort(port) })
		ports = append(ports, port)
	}
	return ports
}

// interopSigned writes one line per signature the signer reports.
type interopSigned struct{ out *interopBuffer }

func (s *interopSigned) SignDone(r signers.SignRecord) {
	if r.Err != nil {
		fmt.Fprintf(s.out, "%s h=%d r=%d ERROR %v\n", r.Phase, r.Height, r.Round, r.Err)
		return
	}
	fmt.Fprintf(s.out, "%s h=%d r=%d ok\n", r.Phase, r.Height, r.Round)
}

// interopBuffer collects the signer's output, written from its goroutines.
type interopBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *interopBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *interopBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// interopLogs keeps logs in files and shows their tails only on failure.
type interopLogs struct {
	dir     string
	files   []string
	buffers map[string]*interopBuffer
}

func (l *interopLogs) file(t *testing.T, name string) io.Writer {
	t.Helper()
	f, err := os.Create(filepath.Join(l.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	l.files = append(l.files, f.Name())
	return f
}

func (l *interopLogs) add(name string, b *interopBuffer) {
	if l.buffers == nil {
		l.buffers = map[string]*interopBuffer{}
	}
	l.buffers[name] = b
}

func (l *interopLogs) showIfFailed(t *testing.T) {
	if !t.Failed() {
		return
	}
	tail := func(s string) string {
		if len(s) > 6000 {
			return "..." + s[len(s)-6000:]
		}
		return s
	}
	for _, f := range l.files {
		data, _ := os.ReadFile(f)
		t.Logf("--- %s (tail)\n%s", f, tail(string(data)))
	}
	for name, b := range l.buffers {
		t.Logf("--- %s (tail)\n%s", name, tail(b.String()))
	}
}
