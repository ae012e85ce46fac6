package runner

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cfg "github.com/cometbft/cometbft/config"
	"github.com/cometbft/cometbft/privval"
	"github.com/cometbft/cometbft/store"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/internal/nettest"
	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/internal/testbin"
	"github.com/valnet/valnet/nodes"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers"
)

// extProc is a remote signer valnet's runner does not run, started as a
// separate process: it prints "address X" (its validator key) and, over
// tcp, "identity Y" (its SecretConnection key) first.
type extProc struct {
	cmd      *exec.Cmd
	address  string
	identity string
	mu       sync.Mutex
	output   bytes.Buffer
}

// startExt starts args as a process in its own process group, reads its
// validator address and identity from the lines (stdout or stderr) that
// start with addrPrefix and idPrefix, and stops it at the end of the test.
func startExt(t *testing.T, addrPrefix, idPrefix string, needID bool, args ...string) *extProc {
	t.Helper()
	p := &extProc{cmd: exec.Command(args[0], args[1:]...)}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	err = p.cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	stdout := r
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(args[0]), p.out())
		}
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-time.After(time.Second):
			}
		}
		close(lines)
	}()
	deadline := time.After(30 * time.Second)
	for p.address == "" || needID && p.identity == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("%s exited before printing its keys:\n%s", args[0], p.out())
			}
			p.mu.Lock()
			p.output.WriteString(l + "\n")
			p.mu.Unlock()
			if v, ok := strings.CutPrefix(l, addrPrefix); ok {
				p.address = strings.ToUpper(strings.Fields(v)[0])
			}
			if v, ok := strings.CutPrefix(l, idPrefix); ok && idPrefix != "" {
				p.identity = strings.ToUpper(strings.Fields(v)[0])
			}
		case <-deadline:
			t.Fatalf("%s printed no keys in 30s:\n%s", args[0], p.out())
		}
	}
	go func() { // keep draining
		for l := range lines {
			p.mu.Lock()
			p.output.WriteString(l + "\n")
			p.mu.Unlock()
		}
	}()
	return p
}

func (p *extProc) out() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output.String()
}

func freeTCP(t *testing.T) string {
	t.Helper()
	port, err := nodes.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// externalYAML: three validators of equal power, so no block commits
// without the external one (more than 2/3 is all three).
func externalYAML(backend, address, identity, faults string, signerKeys ...string) string {
	id := ""
	if identity != "" {
		id = ", identity: " + identity
	}
	for _, k := range signerKeys {
		id += ", " + k
	}
	return fmt.Sprintf(`
name: e2e-external
chain:
  chain_id: ext-chain
  timeouts: {propose: 300ms, propose_delta: 100ms, prevote: 100ms, prevote_delta: 50ms,
             precommit: 100ms, precommit_delta: 50ms, commit: 100ms}
run: {backend: %s, heights: 8, max_duration: 3m}
validators:
  - name: kms
    signer: {type: external, address: %q, wait: 30s%s}
  - name: v
    count: 2
%s
expect:
  - {metric: heights_committed, min: 8}
  - {metric: double_signs, max: 0}
`, backend, address, id, faults)
}

// checkSignedByExternal asserts the run's validator kms has the external
// signer's address in the genesis, and that its signatures in the
// committed blocks verify against the external key.
func checkSignedByExternal(t *testing.T, dir string, s *results.Summary, address string) {
	t.Helper()
	var label string
	for _, v := range s.Validators {
		if v.Name == "kms" {
			if v.Address != address {
				t.Fatalf("kms's address in the run is %s; the external signer's key is %s", v.Address, address)
			}
			label = v.Signer
		}
	}
	if !strings.Contains(label, "external(") || !strings.Contains(label, "not inside the signer") {
		t.Errorf("signer label %q does not say where it is timed", label)
	}
	gen, err := types.GenesisDocFromFile(filepath.Join(dir, "nodes", "v-1", "config", "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	var found *types.GenesisValidator
	for i, gv := range gen.Validators {
		if fmt.Sprintf("%X", gv.Address) == address {
			found = &gen.Validators[i]
		}
	}
	if found == nil {
		t.Fatalf("genesis has no validator with the external key's address %s", address)
	}
	// Read v-1's block store: every commit of heights 1..7 verifies, and
	// carries kms's signature, which verifies against the external key.
	c, err := nodes.LoadConfig(filepath.Join(dir, "nodes", "v-1"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := cfg.DefaultDBProvider(&cfg.DBContext{ID: "blockstore", Config: c})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bs := store.NewBlockStore(db)
	vals := make([]*types.Validator, len(gen.Validators))
	for i, gv := range gen.Validators {
		vals[i] = types.NewValidator(gv.PubKey, gv.Power)
	}
	set := types.NewValidatorSet(vals)
	idx, _ := set.GetByAddress(found.Address)
	signed := 0
	for h := int64(1); h < 8; h++ {
		commit := bs.LoadBlockCommit(h)
		if commit == nil {
			t.Fatalf("no commit of height %d in v-1's block store", h)
		}
		if err := set.VerifyCommit(gen.ChainID, commit.BlockID, h, commit); err != nil {
			t.Fatalf("commit of height %d: %v", h, err)
		}
		if commit.Signatures[idx].BlockIDFlag != types.BlockIDFlagCommit {
			continue
		}
		vote := commit.GetVote(idx)
		if !found.PubKey.VerifySignature(types.VoteSignBytes(gen.ChainID, vote.ToProto()), vote.Signature) {
			t.Fatalf("kms's precommit at height %d does not verify against the external key", h)
		}
		signed++
	}
	if signed < 5 {
		t.Fatalf("kms signed %d of the commits of heights 1..7; want nearly all", signed)
	}
	events, err := eventlog.ReadFile(filepath.Join(dir, EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	if c := nettest.ConflictingVotes(events); len(c) > 0 {
		t.Fatalf("double signs: %v", c)
	}
}

// Signers that speak v0.38's privval (tmkms, horcrux) and answer sparsely
// as horcrux does (only timestamp, signature and extension signature
// set): valnet's listener reads both layouts and takes an answer as
// CometBFT does, so every signature reaches the node, each sign event
// names the phase, height and round asked for, and the run passes on the
// inprocess backend and, relayed, on the process backend. A signer whose
// signatures do not verify fails the run (valnet's default expectation),
// each missed precommit blamed on signature-invalid, never on lateness.
func TestExternalSignerDialectsAndSparseAnswers(t *testing.T) {
	bin := testbin.Build(t, "./runner/testdata/extsigner")
	valnet := valnetBinary(t)
	for _, tc := range []struct {
		name, backend string
		args          []string
		bad           bool
	}{
		{"v0.38 sparse inprocess", "inprocess", []string{"-dialect", "v0.38", "-sparse"}, false},
		{"v0.38 sparse process", "process", []string{"-dialect", "v0.38", "-sparse"}, false},
		{"v1 sparse inprocess", "inprocess", []string{"-dialect", "v1", "-sparse"}, false},
		{"v0.38 invalid signatures", "inprocess", []string{"-dialect", "v0.38", "-sparse", "-corrupt"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			address := "unix://" + filepath.Join(t.TempDir(), "kms.sock")
			ext := startExt(t, "address ", "identity ", false, append([]string{bin, "-addr", address, "-chain-id", "ext-chain", "-home", t.TempDir()}, tc.args...)...)
			dir := filepath.Join(t.TempDir(), "run")
			showLogsOnFailure(t, dir)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			y := externalYAML(tc.backend, address, "", "")
			if tc.bad {
				// Without kms the other two hold 2/3 of the power but not
				// more: they need a third validator to go on.
				y = strings.Replace(y, "count: 2", "count: 3", 1)
			}
			out, err := Run(ctx, parse(t, y), Options{OutDir: dir, NodeCommand: []string{valnet, "node"}})
			if err != nil {
				t.Fatal(err)
			}
			s := out.Summary
			events, err := eventlog.ReadFile(filepath.Join(dir, EventsFile))
			if err != nil {
				t.Fatal(err)
			}
			signs, failures := 0, map[string]int{}
			for _, e := range events {
				if e.Kind != eventlog.KindSign || e.Validator != "kms" || e.Side != "" {
					continue
				}
				signs++
				if !phase.Valid(e.Phase) || e.Height < 1 {
					t.Fatalf("sign event without the request's phase and height: %+v", e)
				}
				if e.Error != "" {
					failures[e.Failure]++
				}
			}
			if signs == 0 {
				t.Fatal("no sign event of kms")
			}
			var kms results.ValidatorSummary
			for _, v := range s.Validators {
				if v.Name == "kms" {
					kms = v
				}
			}
			if !tc.bad {
				if !s.OK || len(failures) > 0 || kms.SignErrors > 0 {
					t.Fatalf("%s; kms sign errors %d %v: %+v", results.ResultLine(s), kms.SignErrors, failures, s.Failed())
				}
				checkSignedByExternal(t, dir, s, ext.address)
				return
			}
			if s.OK {
				t.Fatalf("a signer whose every signature is withheld passed: %s", results.ResultLine(s))
			}
			if failures[signers.FailureSignatureInvalid] != signs || kms.SignFailures.SignatureInvalid != kms.SignErrors || kms.SignErrorsUnexplained != kms.SignErrors {
				t.Fatalf("failures %v of %d signatures; summary %+v", failures, signs, kms.SignFailures)
			}
			if kms.MissedPrecommits == 0 || kms.MissedByCause.SignatureInvalid != kms.MissedPrecommits || kms.MissedByCause.SignerLate != 0 {
				t.Fatalf("kms missed %d, by cause %+v: want every one signature-invalid", kms.MissedPrecommits, kms.MissedByCause)
			}
		})
	}
}

// An external signer serving a key valnet derives for another validator
// (an earlier run's priv_validator_key.json) is refused with why, before
// the genesis; CometBFT's validator set would panic on the duplicate.
func TestExternalSignerWithAValidatorsKey(t *testing.T) {
	bin := testbin.Build(t, "./runner/testdata/extsigner")
	home := t.TempDir()
	key, err := validatorKey(1, "v-1", "")
	if err != nil {
		t.Fatal(err)
	}
	privval.NewFilePV(key, filepath.Join(home, "priv_validator_key.json"), filepath.Join(home, "priv_validator_state.json")).Save()
	address := "unix://" + filepath.Join(t.TempDir(), "kms.sock")
	startExt(t, "address ", "identity ", false, bin, "-addr", address, "-chain-id", "ext-chain", "-home", home)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err = Run(ctx, parse(t, externalYAML("inprocess", address, "", "")), Options{OutDir: filepath.Join(t.TempDir(), "run")})
	want := "validator kms: the external signer's key (address " + strings.ToUpper(key.PubKey().Address().String()) + ") is also v-1's key: keys of valnet's signers derive from the run's seed and the validator's name"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err %v, want %q", err, want)
	}
}

// An external signer declared to speak one privval layout that answers
// in the other is refused before the network starts, with the layout to
// declare.
func TestExternalSignerDialectMismatch(t *testing.T) {
	bin := testbin.Build(t, "./runner/testdata/extsigner")
	address := "unix://" + filepath.Join(t.TempDir(), "kms.sock")
	startExt(t, "address ", "identity ", false, bin, "-addr", address, "-chain-id", "ext-chain", "-home", t.TempDir(), "-dialect", "v0.38")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := Run(ctx, parse(t, externalYAML("inprocess", address, "", "", "dialect: v1")), Options{OutDir: filepath.Join(t.TempDir(), "run")})
	want := "validator kms: signer.dialect v1, but your signer answered PubKey in v0.38's (tendermint.privval: the key in field 1) layout: set dialect: v0.38 (or auto)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err %v, want %q", err, want)
	}
}

// An external signer in another datacenter (signer.link on type
// external): it dials the scenario's address, where the fabric's proxy
// listens, so every signature pays the link's round trip at the node; and
// isolating the link (kms.signer) cuts its votes while its node runs on.
func TestExternalSignerLink(t *testing.T) {
	bin := testbin.Build(t, "./runner/testdata/extsigner")
	address := "tcp://" + freeTCP(t)
	ext := startExt(t, "address ", "identity ", true, bin, "-addr", address, "-chain-id", "ext-chain", "-home", t.TempDir())
	dir := filepath.Join(t.TempDir(), "run")
	showLogsOnFailure(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	faults := "faults:\n  - {action: isolate, target: kms.signer, at: {height: 4}, duration: 2s}"
	out, err := Run(ctx, parse(t, externalYAML("inprocess", address, ext.identity, faults, "link: {latency: 25ms}")), Options{OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Summary
	if !s.OK {
		t.Fatalf("%s: %+v", results.ResultLine(s), s.Failed())
	}
	checkSignedByExternal(t, dir, s, ext.address)
	for _, v := range s.Validators {
		if v.Name != "kms" {
			continue
		}
		if p50 := v.SignLatencyMS.All.P50; p50 < 50 || p50 > 1000 {
			t.Errorf("kms sign latency p50 %.1f ms at the node, want the link's 50 ms round trip and more", p50)
		}
	}
	if len(s.Faults) != 1 || s.Faults[0].EndMS == 0 {
		t.Fatalf("faults %+v", s.Faults)
	}
}

// Bad input and a signer that never comes: clear errors, nothing left.
func TestExternalSignerErrors(t *testing.T) {
	t.Run("nothing dials", func(t *testing.T) {
		addr := freeTCP(t)
		y := strings.Replace(externalYAML("inprocess", "tcp://"+addr, "", ""), "wait: 30s", "wait: 700ms", 1)
		start := time.Now()
		_, err := Run(context.Background(), parse(t, y), Options{OutDir: filepath.Join(t.TempDir(), "run")})
		want := fmt.Sprintf("external signer at tcp://%s did not connect within 700ms: nothing dialled in", addr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err %v, want %q", err, want)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("gave up after %v", d)
		}
		assertPortFree(t, addr)
	})
	t.Run("wrong identity", func(t *testing.T) {
		bin := testbin.Build(t, "./runner/testdata/extsigner")
		addr := freeTCP(t)
		ext := startExt(t, "address ", "identity ", true, bin, "-addr", "tcp://"+addr, "-chain-id", "ext-chain", "-home", t.TempDir())
		other := strings.Repeat("AB", 20)
		y := strings.Replace(externalYAML("inprocess", "tcp://"+addr, other, ""), "wait: 30s", "wait: 3s", 1)
		_, err := Run(context.Background(), parse(t, y), Options{OutDir: filepath.Join(t.TempDir(), "run")})
		want := fmt.Sprintf("did not connect within 3s: refused the signer: its SecretConnection identity is %s, expected %s", ext.identity, other)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err %v, want %q", err, want)
		}
		assertPortFree(t, addr)
	})
	t.Run("ctrl-c while waiting", func(t *testing.T) {
		addr := freeTCP(t)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(500*time.Millisecond, cancel)
		start := time.Now()
		out, err := Run(ctx, parse(t, externalYAML("inprocess", "tcp://"+addr, "", "")), Options{OutDir: filepath.Join(t.TempDir(), "run")})
		// An interrupt before the network ran is recorded as one (exit 2),
		// with the error it caused.
		if err != nil || out.Summary == nil || out.Summary.StopReason != eventlog.StopInterrupted ||
			!strings.Contains(out.Summary.Error, "interrupted while waiting for it to dial in") {
			t.Fatalf("err %v, outcome %+v", err, out)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Ctrl-C took %v to end the wait (wait: 30s)", d)
		}
		assertPortFree(t, addr)
	})
	t.Run("socket exists", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "kms.sock")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		ps := Preflight(context.Background(), parse(t, externalYAML("inprocess", "unix://"+path, "", "")))
		if len(ps) != 1 || !strings.Contains(ps[0].Message, "exists; the node listens there") {
			t.Fatalf("preflight %v", ps)
		}
	})
	t.Run("bad scheme", func(t *testing.T) {
		_, err := scenarios.Parse("external.yaml", []byte(externalYAML("inprocess", "http://127.0.0.1:26659", "", "")))
		if err == nil || !strings.Contains(err.Error(), `validators[0].signer.address: address "http://127.0.0.1:26659": unsupported scheme "http" (allowed: tcp, unix)`) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("address in use", func(t *testing.T) {
		addr := freeTCP(t)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ps := Preflight(context.Background(), parse(t, externalYAML("inprocess", "tcp://"+addr, "", "")))
		if len(ps) != 1 || ps[0].Key != "validators[kms].signer.address" || !strings.Contains(ps[0].Message, "address already in use") {
			t.Fatalf("preflight %v", ps)
		}
	})
}

func assertPortFree(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the run left %s in use: %v", addr, err)
	}
	ln.Close()
}
