package runner

import (
	"context"
	"math"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/valnet/valnet/results/eventlog"
)

// devicesYAML: two simulated validators on one 40 ms device with two
// background chains, beside two local validators.
const devicesYAML = `
name: e2e-device
chain:
  timeouts: {propose: 1s, propose_delta: 100ms, prevote: 300ms, prevote_delta: 50ms,
             precommit: 300ms, precommit_delta: 50ms, commit: 200ms}
run:
  heights: 6
  max_duration: 3m
profiles:
  test-hsm:
    latency: 40ms
devices:
  hsm:
    profile: test-hsm
    background: {chains: 2, block_time: 500ms, spacing: 20ms, jitter: 10ms}
validators:
  - name: a
    signer: {type: simulated, device: hsm}
  - name: b
    signer: {type: simulated, device: hsm}
  - name: v
    count: 2
expect:
  - {metric: heights_committed, min: 6}
`

func TestRunSharedDevice(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	showLogsOnFailure(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, err := Run(ctx, parse(t, devicesYAML), Options{OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Summary
	if s.StopReason != eventlog.StopHeights {
		t.Fatalf("stop %q: %+v", s.StopReason, s.Expectations)
	}
	d := s.Devices["hsm"]
	if d == nil || d.Utilisation == nil || *d.Utilisation <= 0 || *d.Utilisation > 1 {
		t.Fatalf("device hsm %+v, want a utilisation in (0, 1]", d)
	}
	if *d.BackgroundSignatures == 0 || d.BackgroundChains != 2 || d.Profile != "test-hsm" {
		t.Errorf("device hsm %+v: want background signatures from 2 chains", d)
	}
	if !reflect.DeepEqual(d.Validators, []string{"a", "b"}) {
		t.Errorf("validators on hsm %v, want [a b]", d.Validators)
	}

	events, err := eventlog.ReadFile(filepath.Join(dir, EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	// Every signature of a and b went through the device's queue, and the
	// device counted each (but those still in it at the end). That no two
	// ever overlap on the device is the device's own rule
	// (signers.TestDeviceNeverSignsTwoAtOnce); rebuilt from a real run's
	// wall-clock times it holds only on a host that kept up
	// (TestIntegSharedDeviceSpans).
	signed := 0
	for _, e := range events {
		if e.Kind != eventlog.KindSign || (e.Validator != "a" && e.Validator != "b") {
			continue
		}
		if e.QueueMS == nil {
			t.Fatalf("sign event of %s on a device without queue_ms: %+v", e.Validator, e)
		}
		if e.Error != "" {
			continue
		}
		signed++
		// A signature's latency holds its wait and its modelled service.
		if *e.QueueMS < 0 || e.InjectedMS < 40 || e.LatencyMS < *e.QueueMS+e.InjectedMS-0.002 {
			t.Errorf("%s h%d %s: latency %.3f ms, queue %.3f ms, service %.3f ms: want latency >= queue + service >= 40 ms",
				e.Validator, e.Height, e.Phase, e.LatencyMS, *e.QueueMS, e.InjectedMS)
		}
	}
	if diff := math.Abs(float64(*d.Signatures - int64(signed))); diff > 2 {
		t.Errorf("device counted %d signatures, sign events show %d", *d.Signatures, signed)
	}
	var waited float64
	for _, name := range []string{"a", "b"} {
		for _, v := range s.Validators {
			if v.Name == name {
				if v.Device != "hsm" || v.SignQueueMS == nil || v.SignQueueMS.Count == 0 {
					t.Errorf("%s: device %q queue %+v", name, v.Device, v.SignQueueMS)
				} else {
					// Once the device starts, a signature takes at least
					// the profile's 40 ms.
					if sv := v.SignServiceMS; sv == nil || sv.Count != v.SignQueueMS.Count || sv.P50 < 40 {
						t.Errorf("%s: sign_service_ms %+v, want one per queued signature, p50 >= 40 ms", name, sv)
					}
					waited = max(waited, v.SignQueueMS.Max)
				}
			}
		}
	}
	if waited == 0 {
		t.Error("no signature of a or b ever waited for the device it shares with the other and two background chains")
	}

	rebuilt, err := Report(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rebuilt, s) {
		t.Error("summary rebuilt from events.jsonl differs from the run's")
	}
}
