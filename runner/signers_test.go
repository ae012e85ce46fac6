package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
)

// signersYAML puts every signer path of one run side by side, with a fault
// of each kind that a run can show in seconds.
const signersYAML = `
name: e2e-signers
chain:
  timeouts: {propose: 300ms, propose_delta: 100ms, prevote: 100ms, prevote_delta: 50ms,
             precommit: 100ms, precommit_delta: 50ms, commit: 100ms}
run: {heights: 10, max_duration: 3m}
profiles:
  slowish: {latency: 30ms}
validators:
  - name: tcp
    signer: {type: local, via: tcp}
  - name: unix
    signer: {type: local, via: unix, key_type: secp256k1}
  - name: sim
    signer: {type: simulated, profile: slowish}
  - name: kf
    signer: {type: keyfile, passphrase_env: VALNET_TEST_PASSPHRASE, bcrypt_cost: 4, via: tcp}
faults:
  - {action: signer-delay, target: tcp, at: {height: 3}, duration: 2s, latency: 250ms, phases: [precommit]}
  - {action: signer-drop, target: sim, at: {height: 4}, phases: [prevote]}
  - {action: signer-restart, target: kf, at: {height: 5}, duration: 500ms}
expect:
  - {metric: heights_committed, min: 10}
  - {metric: double_signs, max: 0}
`

func TestRunSignerPathsAndFaults(t *testing.T) {
	t.Setenv("VALNET_TEST_PASSPHRASE", "correct horse")
	dir := filepath.Join(t.TempDir(), "run")
	showLogsOnFailure(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := Run(ctx, parse(t, signersYAML), Options{OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Summary
	if !s.OK || s.DoubleSigns != 0 {
		t.Fatalf("%s: %+v", results.ResultLine(s), s.Failed())
	}
	byName := map[string]results.ValidatorSummary{}
	for _, v := range s.Validators {
		byName[v.Name] = v
	}
	for _, name := range []string{"tcp", "unix", "kf"} {
		v := byName[name]
		// Measured at both ends, matched signature by signature. What the
		// hop costs is the host's: TestIntegRemoteSignerLoopbackHop.
		if v.TransportOverheadMS == nil || v.TransportOverheadMS.Count < 10 || v.SignerLatencyMS == nil {
			t.Errorf("%s: remote signer not measured at both ends: overhead %+v", name, v.TransportOverheadMS)
		}
		if !strings.Contains(v.Signer, "via ") {
			t.Errorf("%s: signer label %q does not say it is remote", name, v.Signer)
		}
	}
	if v := byName["sim"]; v.SignLatencyMS.Prevote.P50 < 30 || !strings.Contains(v.Signer, "model:slowish") {
		t.Errorf("sim: %q prevote %+v, want the 30 ms model, labelled a model", v.Signer, v.SignLatencyMS.Prevote)
	}
	if v := byName["kf"]; !strings.HasPrefix(v.Signer, "keyfile(every-sign)") {
		t.Errorf("kf label %q", v.Signer)
	}

	events, err := eventlog.ReadFile(filepath.Join(dir, EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	var dropped, delayed, restarted, signedAfterRestart bool
	var restartAt time.Time
	for _, e := range events {
		switch {
		case e.Kind == eventlog.KindSign && e.Validator == "sim" && strings.Contains(e.Error, "dropped by fault"):
			dropped = e.Height == 4 && e.Phase == "prevote"
		case e.Kind == eventlog.KindSign && e.Validator == "tcp" && e.Side == eventlog.SideSigner && e.Phase == "precommit" && e.InjectedMS >= 250:
			delayed = true
		case e.Kind == eventlog.KindFault && e.Action == "signer-restart" && e.State == eventlog.FaultEnd:
			restarted, restartAt = true, e.Time
		case e.Kind == eventlog.KindSign && e.Validator == "kf" && e.Error == "" && restarted && e.Time.After(restartAt):
			signedAfterRestart = true
		}
	}
	if !dropped || !delayed || !restarted || !signedAfterRestart {
		t.Errorf("faults seen: drop at h4 %v, delay %v, restart %v, signing after restart %v",
			dropped, delayed, restarted, signedAfterRestart)
	}
	if len(s.Faults) != 3 {
		t.Errorf("summary faults %+v", s.Faults)
	}
	// Every signature the node got back, on every signer path, was
	// recorded as requested first.
	type key struct {
		v, phase string
		h        int64
		r        int32
	}
	requested := map[key]bool{}
	answered := 0
	for _, e := range events {
		k := key{e.Validator, e.Phase, e.Height, e.Round}
		switch {
		case e.Kind == eventlog.KindSignRequest:
			requested[k] = true
		case e.Kind == eventlog.KindSign && e.Side == "":
			answered++
			if !requested[k] {
				t.Errorf("%s %s h%d r%d signed with no sign_request before it", e.Validator, e.Phase, e.Height, e.Round)
			}
		}
	}
	if answered == 0 {
		t.Error("no node-side sign events")
	}
}

// gatedSigner answers a vote only once its gate is closed.
type gatedSigner struct {
	types.PrivValidator
	gate chan struct{}
}

func (g *gatedSigner) SignVote(chainID string, vote *cmtproto.Vote, ext bool) error {
	<-g.gate
	return g.PrivValidator.SignVote(chainID, vote, ext)
}

func TestRequestNoterNotesBeforeTheSignerAnswers(t *testing.T) {
	inner := &gatedSigner{PrivValidator: types.NewMockPV(), gate: make(chan struct{})}
	noted := make(chan string, 1)
	s := &requestNoter{Signer: inner, note: func(phase string, h int64, r int32) { noted <- fmt.Sprintf("%s h%d r%d", phase, h, r) }}
	done := make(chan error, 1)
	go func() {
		done <- s.SignVote("c", &cmtproto.Vote{Type: types.PrevoteType, Height: 7, Round: 2}, false)
	}()
	select {
	case got := <-noted:
		if got != "prevote h7 r2" {
			t.Errorf("noted %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a request the signer has not answered was not noted")
	}
	select {
	case <-done:
		t.Fatal("the vote returned before its signer answered")
	default:
	}
	close(inner.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestWrongPassphraseFailsBeforeAnyNodeStarts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	kf := filepath.Join(t.TempDir(), "k.armor")
	yaml := `
name: e2e-passphrase
chain:
  timeouts: {propose: 300ms, prevote: 100ms, precommit: 100ms, commit: 100ms}
run: {heights: 10, max_duration: 3m}
validators:
  - name: kf
    signer: {type: keyfile, passphrase_env: VALNET_TEST_PASSPHRASE, bcrypt_cost: 4, path: ` + kf + `}
`
	t.Setenv("VALNET_TEST_PASSPHRASE", "first")
	// The first run creates the key file with the first passphrase...
	if _, err := Run(context.Background(), parse(t, strings.Replace(yaml, "heights: 10", "heights: 1", 1)), Options{OutDir: dir}); err != nil {
		t.Fatal(err)
	}
	// ...a second run with another passphrase is refused before any node
	// starts.
	t.Setenv("VALNET_TEST_PASSPHRASE", "second")
	out, err := Run(context.Background(), parse(t, yaml), Options{OutDir: filepath.Join(t.TempDir(), "run2")})
	if err == nil || !strings.Contains(err.Error(), "wrong passphrase") {
		t.Fatalf("err = %v, want wrong passphrase", err)
	}
	events, _ := eventlog.ReadFile(filepath.Join(out.OutDir, EventsFile))
	for _, e := range events {
		if e.Kind == eventlog.KindNodeUp {
			t.Fatal("a node started despite the wrong passphrase")
		}
	}
}
