//go:build integ

package runner

import (
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
)

// The timing halves of make test's real-network tests: what a real run's
// wall-clock figures must be, judged only on a host that kept up
// (runJudged). make test keeps what load cannot change.

// TestIntegSlowSignerTiming: e2eYAML's three validators without a delay
// sign a precommit in well under the 100 ms timeouts, slow's 250 ms are
// not much more at the node, and slow misses more precommits than any
// other (TestRunSlowSignerMissesPrecommits checks the rest).
func TestIntegSlowSignerTiming(t *testing.T) {
	s := runJudged(t, parse(t, e2eYAML), Options{}).Summary
	if s.StopReason != eventlog.StopHeights || !s.OK {
		t.Fatalf("stop %q ok %v: %+v", s.StopReason, s.OK, s.Expectations)
	}
	var slow results.ValidatorSummary
	maxOther := 0
	for _, v := range s.Validators {
		if v.Name == "slow" {
			slow = v
			continue
		}
		maxOther = max(maxOther, v.MissedPrecommits)
		if v.SignLatencyMS.Precommit.P50 > 100 {
			t.Errorf("%s (no injected delay) precommit p50 = %v ms", v.Name, v.SignLatencyMS.Precommit.P50)
		}
	}
	if slow.MissedPrecommits <= maxOther {
		t.Errorf("slow missed %d precommits, others up to %d: want more", slow.MissedPrecommits, maxOther)
	}
	for phase, st := range map[string]results.LatencyStats{
		"prevote": slow.SignLatencyMS.Prevote, "precommit": slow.SignLatencyMS.Precommit,
	} {
		if st.Count > 0 && st.P50 > 400 {
			t.Errorf("slow %s latency %+v: want p50 <= 400 ms for a 250 ms delay", phase, st)
		}
	}
}

// TestIntegSharedDeviceSpans: rebuilt from devicesYAML's sign events
// (each one's start, its queue wait, its modelled service time), no two
// signatures of a and b overlap on their shared device. The rebuilt start
// is early by the decorators' time before the device's queue, which only a
// host that kept up holds within the 2 ms slack.
func TestIntegSharedDeviceSpans(t *testing.T) {
	out := runJudged(t, parse(t, devicesYAML), Options{})
	if s := out.Summary; s.StopReason != eventlog.StopHeights {
		t.Fatalf("stop %q: %+v", s.StopReason, s.Expectations)
	}
	events, err := eventlog.ReadFile(filepath.Join(out.OutDir, EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	type span struct {
		from, to time.Time
		who      string
	}
	var spans []span
	for _, e := range events {
		if e.Kind != eventlog.KindSign || (e.Validator != "a" && e.Validator != "b") || e.Error != "" || e.QueueMS == nil {
			continue
		}
		start := e.Time.Add(-time.Duration(e.LatencyMS * float64(time.Millisecond)))
		from := start.Add(time.Duration(*e.QueueMS * float64(time.Millisecond)))
		spans = append(spans, span{from, from.Add(time.Duration(e.InjectedMS * float64(time.Millisecond))), e.Validator})
	}
	if len(spans) < 10 {
		t.Fatalf("%d signatures of a and b on the device", len(spans))
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from.Before(spans[j].from) })
	const slack = 2 * time.Millisecond // event times are rounded to microseconds
	for i := 1; i < len(spans); i++ {
		if prev, cur := spans[i-1], spans[i]; cur.from.Add(slack).Before(prev.to) {
			t.Errorf("%s signed on the device from %v while %s held it until %v", cur.who, cur.from, prev.who, prev.to)
		}
	}
}

// TestIntegRemoteSignerLoopbackHop: signersYAML's remote signers over tcp
// and unix cost a loopback hop, well under 20 ms a signature.
func TestIntegRemoteSignerLoopbackHop(t *testing.T) {
	t.Setenv("VALNET_TEST_PASSPHRASE", "correct horse")
	s := runJudged(t, parse(t, signersYAML), Options{}).Summary
	if !s.OK {
		t.Fatalf("%s: %+v", results.ResultLine(s), s.Failed())
	}
	for _, v := range s.Validators {
		switch v.Name {
		case "tcp", "unix", "kf":
			if o := v.TransportOverheadMS; o == nil || o.Count < 10 || o.P50 > 20 {
				t.Errorf("%s: transport overhead %+v, want p50 <= 20 ms: a loopback hop", v.Name, o)
			}
		}
	}
}

// TestIntegLoadNoFailures: a healthy 4-validator network takes loadYAML's
// 100 tx/s of 256 B: none refused, none failed.
func TestIntegLoadNoFailures(t *testing.T) {
	s := runJudged(t, parse(t, loadYAML), Options{}).Summary
	l := s.Load
	if l == nil {
		t.Fatal("summary has no load")
	}
	if !s.OK || l.Accepted == 0 || l.Committed == 0 || l.Rejected > 0 || l.Failed > 0 {
		t.Errorf("a healthy network with 100/s: %+v", *l)
	}
}
