//go:build integ

package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/cometbft/cometbft/privval"

	"github.com/valnet/valnet/internal/testbin"
	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
)

// valnet signer serve as a separate process is an external signer too;
// its outage is cut at the node's end, and it comes back. On the process
// backend valnet's listener relays to the node's own process.
func TestIntegExternalValnetSignerServe(t *testing.T) {
	// Parallel: its checks are load-proof (heights, signatures, /commit
	// agreement, lower bounds), so it runs beside the other parallel
	// tests of make integ after the sequential ones (the host-judged
	// timing tests and the leak searches) have had the host alone.
	t.Parallel()
	bin := valnetBinary(t)
	for _, backend := range []string{"inprocess", "process"} {
		t.Run(backend, func(t *testing.T) {
			addr := freeTCP(t)
			home := t.TempDir()
			keyFile := filepath.Join(home, "priv_validator_key.json")
			privval.NewFilePV(ed25519.GenPrivKey(), keyFile, filepath.Join(home, "unused_state.json")).Key.Save()
			ext := startExt(t, "valnet signer: key ", "valnet signer: identity ", true, bin, "signer", "serve", "--node", "tcp://"+addr,
				"--chain-id", "ext-chain", "--key-file", keyFile)
			faults := "faults:\n  - {action: signer-outage, target: kms, at: {height: 3}, duration: 2s}" +
				"\n  - {action: signer-delay, target: kms, at: {height: 6}, duration: 1s, latency: 300ms, phases: [precommit]}"
			dir := filepath.Join(t.TempDir(), "run")
			showLogsOnFailure(t, dir)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			out, err := Run(ctx, parse(t, externalYAML(backend, "tcp://"+addr, ext.identity, faults)),
				Options{OutDir: dir, NodeCommand: []string{bin, "node"}})
			if err != nil {
				t.Fatal(err)
			}
			s := out.Summary
			if !s.OK {
				t.Fatalf("%s: %+v", results.ResultLine(s), s.Failed())
			}
			checkSignedByExternal(t, dir, s, ext.address)
			if len(s.Faults) != 2 || s.Faults[0].EndMS == 0 || s.Faults[1].EndMS == 0 {
				t.Fatalf("faults %+v", s.Faults)
			}
			events, err := eventlog.ReadFile(filepath.Join(dir, EventsFile))
			if err != nil {
				t.Fatal(err)
			}
			var start, end, lastBlock time.Time
			var gap time.Duration
			for _, e := range events {
				switch {
				case e.Kind == eventlog.KindFault && e.Action == "signer-outage" && e.State == eventlog.FaultStart:
					start = e.Time
				case e.Kind == eventlog.KindFault && e.Action == "signer-outage" && e.State == eventlog.FaultEnd:
					end = e.Time
				case e.Kind == eventlog.KindBlock:
					if !lastBlock.IsZero() && !start.IsZero() && end.IsZero() || !lastBlock.IsZero() && e.Time.After(end) && lastBlock.Before(end) {
						gap = max(gap, e.Time.Sub(lastBlock))
					}
					lastBlock = e.Time
				}
			}
			// No block commits without kms (all three are needed): the
			// outage stops the chain for about its 2 s.
			if gap < 1500*time.Millisecond {
				t.Errorf("longest block interval across the outage %v; the cut link did not stop kms signing", gap)
			}
			t.Logf("longest block interval across the 2s outage: %v", gap)
			signedAfter, delayed := false, false
			for _, e := range events {
				if e.Kind == eventlog.KindSign && e.Validator == "kms" && e.Error == "" && e.Time.After(end) {
					signedAfter = true
				}
				if e.Kind == eventlog.KindSign && e.Validator == "kms" && e.Phase == "precommit" && e.InjectedMS >= 300 && e.LatencyMS >= 300 {
					delayed = true // signer-delay, applied at the node
				}
			}
			if !signedAfter {
				t.Error("kms never signed again after the outage ended")
			}
			if !delayed {
				t.Error("no kms precommit carries the 300ms signer-delay")
			}
		})
	}
}

// CometBFT's own privval.SignerServer over a FilePV, in its own process,
// dialing the node over tcp (SecretConnection, its identity pinned) and
// over a unix socket.
func TestIntegExternalCometBFTSignerServer(t *testing.T) {
	// Parallel: its checks are load-proof (heights, signatures, /commit
	// agreement, lower bounds), so it runs beside the other parallel
	// tests of make integ after the sequential ones (the host-judged
	// timing tests and the leak searches) have had the host alone.
	t.Parallel()
	bin := testbin.Build(t, "./runner/testdata/extsigner")
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			address := "tcp://" + freeTCP(t)
			if network == "unix" {
				address = "unix://" + filepath.Join(t.TempDir(), "kms.sock")
			}
			ext := startExt(t, "address ", "identity ", network == "tcp", bin, "-addr", address, "-chain-id", "ext-chain", "-home", t.TempDir())
			dir := filepath.Join(t.TempDir(), "run")
			showLogsOnFailure(t, dir)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			out, err := Run(ctx, parse(t, externalYAML("inprocess", address, ext.identity, "")), Options{OutDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if !out.Summary.OK {
				t.Fatalf("%s: %+v", results.ResultLine(out.Summary), out.Summary.Failed())
			}
			checkSignedByExternal(t, dir, out.Summary, ext.address)
			if path, ok := strings.CutPrefix(address, "unix://"); ok {
				if _, err := os.Stat(path); !os.IsNotExist(err) {
					t.Errorf("the run left its socket %s behind (%v)", path, err)
				}
			}
		})
	}
}
