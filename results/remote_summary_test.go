package results

import (
	"github.com/valnet/valnet/results/eventlog"
	"testing"

	"github.com/valnet/valnet/internal/phase"
)

func TestRemoteSignerSidesAndTransportOverhead(t *testing.T) {
	node := func(h int64, phase string, ms float64) eventlog.Event {
		e := signEv("v1", phase, h, 0, "aa")
		e.LatencyMS = ms
		return e
	}
	signer := func(h int64, phase string, ms float64) eventlog.Event {
		e := node(h, phase, ms)
		e.Side = eventlog.SideSigner
		return e
	}
	events := []eventlog.Event{runStart("v1"),
		signer(1, phase.Prevote, 10), node(1, phase.Prevote, 10.2),
		signer(1, phase.Precommit, 20), node(1, phase.Precommit, 20.5),
		signer(2, phase.Prevote, 30), node(2, phase.Prevote, 30.1),
		node(3, phase.Prevote, 5), // no signer-side match: not an overhead sample
		runEnd(100, eventlog.StopHeights)}
	s := Summarize(events)
	v := s.Validators[0]
	if v.SignLatencyMS.All.Count != 4 {
		t.Errorf("node-side signatures counted %d times, want 4 (signer side must not count twice)", v.SignLatencyMS.All.Count)
	}
	if v.SignerLatencyMS == nil || v.SignerLatencyMS.All.Count != 3 || v.SignerLatencyMS.Precommit.P50 != 20 {
		t.Fatalf("signer latency %+v", v.SignerLatencyMS)
	}
	o := v.TransportOverheadMS
	if o == nil || o.Count != 3 || o.P50 != 0.2 || o.Max != 0.5 {
		t.Fatalf("transport overhead %+v, want 3 samples p50 0.2 max 0.5", o)
	}
	if s.DoubleSigns != 0 {
		t.Errorf("the two sides of one signature counted as a double sign")
	}
}

func TestFaultWindows(t *testing.T) {
	f := func(ms float64, action, target, state string) eventlog.Event {
		return eventlog.Event{Time: at(ms), Kind: eventlog.KindFault, Action: action, Validator: target, State: state}
	}
	s := Summarize([]eventlog.Event{runStart("v1", "v2"),
		f(1000, "signer-delay", "v1", eventlog.FaultStart), f(1500, "signer-outage", "v2", eventlog.FaultStart),
		f(3000, "signer-delay", "v1", eventlog.FaultEnd), runEnd(5000, eventlog.StopHeights)})
	if len(s.Faults) != 2 {
		t.Fatalf("faults %+v", s.Faults)
	}
	if d := s.Faults[0]; d.Action != "signer-delay" || d.Target != "v1" || d.StartMS != 1000 || d.EndMS != 3000 {
		t.Errorf("delay window %+v", d)
	}
	if o := s.Faults[1]; o.Target != "v2" || o.StartMS != 1500 || o.EndMS != 0 {
		t.Errorf("outage window %+v (never ended: end 0)", o)
	}
}
