package runner

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/signers/pkcs11"
)

// needSoftHSM skips without SoftHSM2, except under CI, which installs it
// (.ci/run): there its absence fails the test.
func needSoftHSM(t *testing.T) {
	t.Helper()
	if !pkcs11.Available {
		t.Skip("skipping: PKCS#11 needs cgo (this test binary was built with CGO_ENABLED=0)")
	}
	if _, err := pkcs11.FindSoftHSM(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
}

const pkcs11YAML = `
name: e2e-pkcs11
chain:
  timeouts: {propose: 300ms, propose_delta: 100ms, prevote: 100ms, prevote_delta: 50ms,
             precommit: 100ms, precommit_delta: 50ms, commit: 100ms}
run: {heights: 8, max_duration: 3m}
validators:
  - name: hsm
    signer: {type: pkcs11, provision: softhsm, via: tcp}
  - name: v
    count: 3
expect:
  - {metric: heights_committed, min: 8}
  - {metric: double_signs, max: 0}
`

// TestRunPKCS11Provisioned runs a validator whose key lives in a SoftHSM2
// token the run provisions, behind the remote-signer hop.
func TestRunPKCS11Provisioned(t *testing.T) {
	needSoftHSM(t)
	dir := filepath.Join(t.TempDir(), "run")
	showLogsOnFailure(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := Run(ctx, parse(t, pkcs11YAML), Options{OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Summary
	if !s.OK || s.DoubleSigns != 0 || s.Heights.Committed < 8 {
		t.Fatalf("%s: %+v", results.ResultLine(s), s.Failed())
	}
	var hsm results.ValidatorSummary
	for _, v := range s.Validators {
		if v.Name == "hsm" {
			hsm = v
		}
	}
	if hsm.Signer != "pkcs11(valnet-hsm) via tcp" {
		t.Errorf("hsm signer label %q", hsm.Signer)
	}
	if hsm.SignLatencyMS.All.Count < 8 || hsm.SignerLatencyMS == nil || hsm.SignerLatencyMS.All.Count < 8 || hsm.SignErrors != 0 {
		t.Errorf("hsm signing not recorded: node side %+v, signer side %+v, %d errors", hsm.SignLatencyMS.All, hsm.SignerLatencyMS, hsm.SignErrors)
	}
	t.Logf("hsm: %s; signer-side latency p50 %.3f ms p99 %.3f ms over %d signatures; missed precommits %d",
		results.ResultLine(s), hsm.SignerLatencyMS.All.P50, hsm.SignerLatencyMS.All.P99, hsm.SignerLatencyMS.All.Count, hsm.MissedPrecommits)

	// The genesis holds the token's key, not the seed-derived one.
	hsmDir := filepath.Join(dir, "hsm")
	pin, err := pkcs11.ReadPIN("", filepath.Join(hsmDir, "valnet-hsm.pin"))
	if err != nil {
		t.Fatal(err)
	}
	module, _ := pkcs11.FindSoftHSM()
	signer, err := pkcs11.Open(pkcs11.Config{Module: module, Token: "valnet-hsm", KeyLabel: "consensus", PIN: pin,
		SoftHSMConf: filepath.Join(hsmDir, "softhsm2.conf")})
	if err != nil {
		t.Fatalf("the run's token cannot be opened after the run: %v", err)
	}
	defer signer.Close()
	if addr := strings.ToUpper(hex.EncodeToString(signer.PubKey().Address())); hsm.Address != addr {
		t.Errorf("hsm's address in the run %s, the token key's %s", hsm.Address, addr)
	}
}

// TestRunPKCS11OwnToken uses a token that exists before the run, named by
// label with its PIN in an environment variable: a wrong PIN stops the run
// before any node starts; the right one runs.
func TestRunPKCS11OwnToken(t *testing.T) {
	needSoftHSM(t)
	cfg, err := pkcs11.Provision(filepath.Join(t.TempDir(), "hsm"), "mine", "validator")
	if err != nil {
		t.Fatal(err)
	}
	yaml := `
name: e2e-pkcs11-own
chain:
  timeouts: {propose: 300ms, prevote: 100ms, precommit: 100ms, commit: 100ms}
run: {heights: 3, max_duration: 2m}
validators:
  - name: hsm
    signer: {type: pkcs11, module: ` + cfg.Module + `, token: mine, key: validator, pin_env: VALNET_TEST_PIN}
  - name: v
    count: 2
`
	t.Setenv("VALNET_TEST_PIN", "not-the-pin")
	out, err := Run(context.Background(), parse(t, yaml), Options{OutDir: filepath.Join(t.TempDir(), "run")})
	if err == nil || !strings.Contains(err.Error(), `validator hsm: pkcs11: wrong PIN for token "mine"`) {
		t.Fatalf("err = %v, want a wrong PIN", err)
	}
	events, _ := eventlog.ReadFile(filepath.Join(out.OutDir, EventsFile))
	for _, e := range events {
		if e.Kind == eventlog.KindNodeUp {
			t.Fatal("a node started despite the wrong PIN")
		}
	}
	t.Setenv("VALNET_TEST_PIN", string(cfg.PIN))
	dir := filepath.Join(t.TempDir(), "run2")
	showLogsOnFailure(t, dir)
	out, err = Run(context.Background(), parse(t, yaml), Options{OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if s := out.Summary; s.Heights.Committed < 3 || s.DoubleSigns != 0 {
		t.Fatalf("%s", results.ResultLine(s))
	}
}

// pkcs11DeviceYAML: two validators whose keys are in SoftHSM2 tokens, both
// behind one shared device with four other chains' background load. The
// background keeps the device about half busy (4 chains × ~2.25 signatures
// × 30 ms per 500 ms), so some of a's and b's ~30 signatures must wait:
// with one background chain (13 %), a loaded CI host once had none wait.
const pkcs11DeviceYAML = `
name: e2e-pkcs11-device
chain:
  timeouts: {propose: 1s, propose_delta: 100ms, prevote: 300ms, prevote_delta: 50ms,
             precommit: 300ms, precommit_delta: 50ms, commit: 200ms}
run: {heights: 6, max_duration: 3m}
profiles:
  test-hsm: {latency: 30ms}
devices:
  hsm:
    profile: test-hsm
    background: {chains: 4, block_time: 500ms, spacing: 20ms, jitter: 10ms}
validators:
  - name: a
    signer: {type: pkcs11, provision: softhsm, device: hsm}
  - name: b
    signer: {type: pkcs11, provision: softhsm, device: hsm}
  - name: v
    count: 2
expect:
  - {metric: heights_committed, min: 6}
  - {metric: double_signs, max: 0}
`

// TestRunPKCS11SharedDevice runs two real PKCS#11 signers on one device:
// their signatures (made in the tokens, verified by every node) wait in
// the device's queue, behind each other and the background load, and the
// waits reach summary.json.
func TestRunPKCS11SharedDevice(t *testing.T) {
	needSoftHSM(t)
	dir := filepath.Join(t.TempDir(), "run")
	showLogsOnFailure(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := Run(ctx, parse(t, pkcs11DeviceYAML), Options{OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Summary
	if !s.OK || s.DoubleSigns != 0 {
		t.Fatalf("ok %v, double signs %d: %+v", s.OK, s.DoubleSigns, s.Expectations)
	}
	d := s.Devices["hsm"]
	if d == nil || d.Signatures == nil || *d.Signatures == 0 || d.BackgroundSignatures == nil || *d.BackgroundSignatures == 0 {
		t.Fatalf("device hsm %+v: want this chain's and the background's signatures", d)
	}
	waited := 0.0
	for _, v := range s.Validators {
		if v.Name != "a" && v.Name != "b" {
			continue
		}
		if !strings.HasPrefix(v.Signer, "pkcs11(") || v.Device != "hsm" || v.SignQueueMS == nil || v.SignQueueMS.Count == 0 {
			t.Errorf("%s: signer %q device %q queue %+v", v.Name, v.Signer, v.Device, v.SignQueueMS)
			continue
		}
		waited = max(waited, v.SignQueueMS.Max)
	}
	if waited <= 0 {
		t.Error("no PKCS#11 signature waited for the device shared with another token and four background chains")
	}
}
