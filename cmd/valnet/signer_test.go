package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/privval"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/signers"
)

// signerKeyDir writes a priv_validator_key.json and an armored key file (bcrypt
// cost 4, passphrase "pw") of one key into a new directory.
func signerKeyDir(t *testing.T) (dir, keyJSON, armored string) {
	t.Helper()
	dir = t.TempDir()
	key := ed25519.GenPrivKeyFromSecret([]byte("signer-cli-test"))
	keyJSON = filepath.Join(dir, "priv_validator_key.json")
	privval.NewFilePV(key, keyJSON, "").Key.Save()
	armored = filepath.Join(dir, "key.armor")
	if err := signers.WriteKeyFile(armored, key, []byte("pw"), 4); err != nil {
		t.Fatal(err)
	}
	return dir, keyJSON, armored
}

func TestSignerServeBadInput(t *testing.T) {
	dir, keyJSON, armored := signerKeyDir(t)
	lockedDir := t.TempDir()
	lockedKey := filepath.Join(lockedDir, "priv_validator_key.json")
	privval.NewFilePV(ed25519.GenPrivKey(), lockedKey, "").Key.Save()
	g, err := signers.OpenGuard(signers.PrivKeySigner{Key: ed25519.GenPrivKey()}, signers.DefaultStateFile(lockedKey))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()

	n := 0
	cfg := func(text string) string {
		n++
		p := filepath.Join(dir, fmt.Sprintf("signer%d.yaml", n))
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// No node listens on port 1: every case must fail before dialing.
	base := []string{"signer", "serve", "--node", "tcp://127.0.0.1:1", "--chain-id", "c", "--key-file", keyJSON}
	with := func(args ...string) []string { return append(append([]string{}, base...), args...) }
	t.Setenv("VALNET_TEST_PASS", "not-it")

	tests := []struct {
		name   string
		args   []string
		stderr string // regexp
	}{
		{"nothing given", []string{"signer", "serve"},
			`(?s)missing --node \(or node: in --config\).*missing --chain-id.*missing --key-file`},
		{"bad scheme", with("--node", "http://127.0.0.1:26659"), `unsupported scheme "http"`},
		{"no scheme", with("--node", "127.0.0.1:26659"), `has no scheme: write tcp://host:port`},
		{"unknown type", with("--type", "hsm"), `unknown signer type "hsm" \(allowed: local, keyfile, simulated\)`},
		{"bad latency", with("--latency", "lognormal:800ms:200ms"), `--latency: latency "lognormal:800ms:200ms": p99 200ms is less than p50 800ms`},
		{"phases without latency", with("--latency-phases", "prevote"), `--latency-phases needs a latency`},
		{"bad phase", with("--latency", "1s", "--latency-phases", "vote"), `latency phases: unknown phase "vote"`},
		{"profile without type", with("--profile", "yubihsm2"), `--profile yubihsm2 needs --type simulated`},
		{"unknown profile", with("--type", "simulated", "--profile", "hsm9"), `unknown profile "hsm9"`},
		{"passphrase for local", with("--passphrase-env", "X"), `apply only to --type keyfile \(type is local\)`},
		{"keyfile without passphrase", with("--type", "keyfile", "--key-file", armored), `type keyfile: passphrase: give passphrase_env or passphrase_file`},
		{"wrong passphrase", with("--type", "keyfile", "--key-file", armored, "--passphrase-env", "VALNET_TEST_PASS"), `wrong passphrase`},
		{"key file missing", with("--key-file", filepath.Join(dir, "nope.json")), `key file .*nope.json: no such file`},
		{"armored key as local", with("--key-file", armored), `is an armored \(encrypted\) key file: use type keyfile`},
		{"state file in use", with("--key-file", lockedKey), `another signer is using this state file`},
		{"bad cpu scale", with("--cpu-scale", "0"), `--cpu-scale must be greater than 0`},
		{"bad node id", with("--node-id", "node0"), `node_id: identity "node0" is not an address of 40 hex digits`},
		{"node id over unix", with("--node", "unix:///tmp/x.sock", "--node-id", strings.Repeat("AB", 20)), `node_id applies to a tcp node only`},
		{"config: bad node id", []string{"signer", "serve", "--config", cfg("node: tcp://127.0.0.1:1\nchain_id: c\nkey_file: priv_validator_key.json\nnode_id: 12AB\n")},
			`signer\d.yaml:4:10: node_id: "12AB" is not a SecretConnection identity: write the node's address, 40 hex digits`},
		{"outage fault", with("--fault", "{action: signer-outage, at: {height: 3}, duration: 5s}"),
			`--fault #1:1:10: fault.action: signer-outage does not apply to a standalone signer`},
		{"fault at a time", with("--fault", "{action: signer-drop, at: {time: 30s}}"),
			`--fault #1:1:28: fault.at.time: unknown key: a standalone signer sees no clock of the chain`},
		{"fault not yaml", with("--fault", "signer-drop@10"), `--fault #1:1:1: fault: expected a mapping \(key: value lines\), got "signer-drop@10"`},
		{"two bad faults", with("--fault", "{action: signer-dorp, at: {height: 3}}", "--fault", "{action: signer-drop}"),
			`(?s)--fault #1:1:10: fault.action: unknown fault action "signer-dorp"; did you mean "signer-drop"\?.*--fault #2:1:1: fault.at: required`},
		{"unknown subcommand", []string{"signer", "sreve"}, `unknown command "sreve" for "valnet signer"`},
		{"config: every problem with its position", []string{"signer", "serve", "--config", cfg(`
node: tcp://127.0.0.1:1
chain_id: c
key_file: priv_validator_key.json
latencyy: 200ms
cpu_scale: fast
latency: {dist: lognormal, p50: 200ms}
faults:
  - {action: signer-delay, target: v1, at: {height: 5}, latency: 2s}
  - {action: signer-drop, at: {height: 0}}
`)}, `(?s)signer\d.yaml:5:1: latencyy: unknown key; did you mean "latency"\? \(allowed: node, chain_id, .*` +
			`signer\d.yaml:6:12: cpu_scale: expected a number, got "fast".*` +
			`signer\d.yaml:7:10: latency: dist lognormal needs p99.*` +
			`signer\d.yaml:9:28: faults\[0\].target: unknown key: a standalone signer is the only target.*` +
			`signer\d.yaml:10:40: faults\[1\].at.height: must be at least 1, got 0`},
		{"config: flags override and paths are relative to the file", []string{"signer", "serve", "--config", cfg(`
node: http://wrong
chain_id: c
key_file: missing-key.json
`), "--node", "tcp://127.0.0.1:1"}, `key file ` + regexp.QuoteMeta(filepath.Join(dir, "missing-key.json")) + `: no such file`},
		{"config: not a mapping", []string{"signer", "serve", "--config", cfg("- node\n")}, `signer\d.yaml:1:1: a signer config is a mapping of keys`},
		{"config: missing", []string{"signer", "serve", "--config", filepath.Join(dir, "nope.yaml")}, `--config: open .*nope.yaml: no such file`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != exitBadInput {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitBadInput, stdout, stderr)
			}
			if !regexp.MustCompile(tc.stderr).MatchString(stderr) {
				t.Errorf("stderr does not match %q:\n%s", tc.stderr, stderr)
			}
		})
	}
}

// serveOutput is written by the serving goroutines.
type serveOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *serveOutput) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *serveOutput) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSignerServeSignsUntilInterrupted runs the command against a fake node
// (the node side of valnet's remote hop), signs, and stops it with SIGINT.
func TestSignerServeSignsUntilInterrupted(t *testing.T) {
	_, keyJSON, _ := signerKeyDir(t)
	node, err := signers.ListenRemote(signers.ClientConfig{Network: signers.NetTCP, Address: "127.0.0.1:0",
		ChainID: "cli-chain", NodeKey: ed25519.GenPrivKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	conf := filepath.Join(t.TempDir(), "signer.yaml")
	if err := os.WriteFile(conf, []byte("chain_id: cli-chain\nlatency: 5ms\nfaults:\n  - {action: signer-error, at: {height: 2}, phases: [precommit]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr serveOutput
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"signer", "serve", "--config", conf, "--node", "tcp://" + node.Addr(), "--key-file", keyJSON}, &stdout, &stderr)
	}()
	if err := node.WaitForSigner(10 * time.Second); err != nil {
		t.Fatalf("signer did not connect: %v\n%s", err, stderr.String())
	}
	for h := int64(1); h <= 2; h++ {
		for _, typ := range []cmtproto.SignedMsgType{types.PrevoteType, types.PrecommitType} {
			err := node.SignVote("cli-chain", &cmtproto.Vote{Type: typ, Height: h, Timestamp: time.Now()}, false)
			if (err != nil) != (h == 2 && typ == types.PrecommitType) {
				t.Fatalf("h=%d %v: %v", h, typ, err)
			}
		}
	}
	// The signal handler is installed before dialing, so it is in place.
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d after SIGINT\n%s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop on SIGINT")
	}
	out := stdout.String()
	for _, re := range []string{
		`(?m)^prevote h=1 r=0 \d+\.\d\dms$`, `(?m)^precommit h=1 r=0 \d+\.\d\dms$`, `(?m)^prevote h=2 r=0 \d+\.\d\dms$`,
		`(?m)^precommit h=2 r=0 ERROR signer error injected by fault faults\[0\]:signer-error$`,
		`(?m)^summary: 4 signature requests, 1 refused`, `(?m)^prevote +2 +0 +\d`, `(?m)^precommit +1 +1 +\d`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("stdout lacks %s:\n%s", re, out)
		}
	}
	if !strings.Contains(stderr.String(), "connected to the node") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}
