package results

import (
	"bytes"
	"encoding/json"

	"github.com/valnet/valnet/internal/action"
	"github.com/valnet/valnet/results/eventlog"
	"strings"
	"testing"
)

func TestNodeChangeOf(t *testing.T) {
	fault := func(action, state string) eventlog.Event {
		return eventlog.Event{Kind: eventlog.KindFault, Validator: "v1", Action: action, State: state}
	}
	tests := []struct {
		name string
		ev   eventlog.Event
		want NodeChange
	}{
		{"stop starts", fault(action.NodeStop, eventlog.FaultStart), NodeDown},
		{"stop ends", fault(action.NodeStop, eventlog.FaultEnd), NodeUp},
		{"kill starts", fault(action.NodeKill, eventlog.FaultStart), NodeDown},
		{"kill ends", fault(action.NodeKill, eventlog.FaultEnd), NodeUp},
		{"pause starts", fault(action.NodePause, eventlog.FaultStart), NodeDown},
		{"pause ends", fault(action.NodePause, eventlog.FaultEnd), NodeUp},
		{"restart starts: down until its end, whatever the detail", fault(action.NodeRestart, eventlog.FaultStart), NodeDown},
		{"restart ends", fault(action.NodeRestart, eventlog.FaultEnd), NodeUp},
		{"start brings the node back", fault(action.NodeStart, eventlog.FaultStart), NodeUp},
		{"start's end too", fault(action.NodeStart, eventlog.FaultEnd), NodeUp},
		{"resume brings the node back", fault(action.NodeResume, eventlog.FaultStart), NodeUp},
		{"a signer fault is not a node fault", fault("signer-delay", eventlog.FaultStart), NodeUnchanged},
		{"a partition is not a node fault", fault("partition", eventlog.FaultStart), NodeUnchanged},
		{"unknown state", fault(action.NodeKill, "maybe"), NodeUnchanged},
		{"no validator", eventlog.Event{Kind: eventlog.KindFault, Action: action.NodeKill, State: eventlog.FaultStart}, NodeUnchanged},
		{"not a fault event", eventlog.Event{Kind: eventlog.KindStep, Validator: "v1", Action: action.NodeKill, State: eventlog.FaultStart}, NodeUnchanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NodeChangeOf(&tt.ev); got != tt.want {
				t.Errorf("NodeChangeOf(%s %s) = %v, want %v", tt.ev.Action, tt.ev.State, got, tt.want)
			}
		})
	}
}

func TestNodeDowns(t *testing.T) {
	type window struct {
		action     string
		start, end float64 // ms; end -1: still open
	}
	tests := []struct {
		name   string
		events []eventlog.Event
		want   []window // of v1
	}{
		{"kill with a duration", []eventlog.Event{faultAt(10, "v1", action.NodeKill, eventlog.FaultStart), faultAt(50, "v1", action.NodeKill, eventlog.FaultEnd)},
			[]window{{action.NodeKill, 10, 50}}},
		{"a stop ends when the node is started again", []eventlog.Event{faultAt(10, "v1", action.NodeStop, eventlog.FaultStart), faultAt(70, "v1", action.NodeStart, eventlog.FaultStart)},
			[]window{{action.NodeStop, 10, 70}}},
		{"a pause ends at node-resume", []eventlog.Event{faultAt(10, "v1", action.NodePause, eventlog.FaultStart), faultAt(30, "v1", action.NodeResume, eventlog.FaultStart)},
			[]window{{action.NodePause, 10, 30}}},
		{"a restart without duration: its start to its end", []eventlog.Event{faultAt(10, "v1", action.NodeRestart, eventlog.FaultStart), faultAt(12, "v1", action.NodeRestart, eventlog.FaultEnd)},
			[]window{{action.NodeRestart, 10, 12}}},
		{"never brought back", []eventlog.Event{faultAt(10, "v1", action.NodeKill, eventlog.FaultStart)},
			[]window{{action.NodeKill, 10, -1}}},
		{"down again while down: the first cause stands", []eventlog.Event{faultAt(10, "v1", action.NodePause, eventlog.FaultStart), faultAt(20, "v1", action.NodeKill, eventlog.FaultStart), faultAt(40, "v1", action.NodeKill, eventlog.FaultEnd)},
			[]window{{action.NodePause, 10, 40}}},
		{"a start of a running node opens nothing", []eventlog.Event{faultAt(10, "v1", action.NodeStart, eventlog.FaultStart)}, nil},
		{"two windows", []eventlog.Event{faultAt(10, "v1", action.NodeKill, eventlog.FaultStart), faultAt(20, "v1", action.NodeKill, eventlog.FaultEnd),
			faultAt(30, "v1", action.NodeRestart, eventlog.FaultStart), faultAt(45, "v1", action.NodeRestart, eventlog.FaultEnd)},
			[]window{{action.NodeKill, 10, 20}, {action.NodeRestart, 30, 45}}},
		{"another validator's faults are its own", []eventlog.Event{faultAt(10, "v2", action.NodeKill, eventlog.FaultStart), faultAt(20, "v1", action.NodeStart, eventlog.FaultStart)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d NodeDowns
			for i := range tt.events {
				d.Observe(&tt.events[i])
			}
			got := d.windowsOf("v1")
			if len(got) != len(tt.want) {
				t.Fatalf("windows %+v, want %+v", got, tt.want)
			}
			for i, w := range tt.want {
				g := got[i]
				open := w.end < 0
				if g.action != w.action || !g.start.Equal(at(w.start)) || g.open != open || (!open && !g.end.Equal(at(w.end))) {
					t.Errorf("window %d = %+v, want %+v", i, g, w)
				}
			}
			wantDown := len(tt.want) > 0 && tt.want[len(tt.want)-1].end < 0
			if d.Down("v1") != wantDown {
				t.Errorf("Down(v1) = %v, want %v", d.Down("v1"), wantDown)
			}
		})
	}
}

// TestNodeRestartMissesAreNodeDown: v4's node is restarted with a
// downtime (killed at 1.5 s, running again at 3.5 s); the precommits it
// misses meanwhile are caused node-down, in summary.json and missed.csv,
// and the one it misses after the restart is not.
func TestNodeRestartMissesAreNodeDown(t *testing.T) {
	evs := []eventlog.Event{runStart("v1", "v2", "v3", "v4"),
		block(1, 1000, 0, nil, nil),
		withDetail(faultAt(1500, "v4", action.NodeRestart, eventlog.FaultStart), "v4 restarting from its home"),
		block(2, 2000, 0, nil, nil),
		block(3, 3000, 0, []string{"v4"}, nil), // v4 absent for height 2
		withDetail(faultAt(3500, "v4", action.NodeRestart, eventlog.FaultEnd), "started again from its home"),
		block(4, 4000, 0, []string{"v4"}, nil), // height 3: decided at 3000, v4 still down
		block(5, 5000, 0, []string{"v4"}, nil), // height 4: after the restart
		runEnd(5500, eventlog.StopHeights)}
	s := Summarize(evs)
	v4 := vByName(t, s, "v4")
	if v4.MissedPrecommits != 3 || v4.MissedByCause.NodeDown != 2 || v4.MissedByCause.Unknown != 1 {
		t.Errorf("v4 missed %d by cause %+v, want 3: node-down 2, unknown 1", v4.MissedPrecommits, v4.MissedByCause)
	}
	var causes []string
	for _, m := range MissedPrecommits(evs) {
		causes = append(causes, m.Cause)
		if m.Cause == CauseNodeDown && !strings.Contains(m.Detail, "node-restart fault active: v4 restarting") {
			t.Errorf("detail %q", m.Detail)
		}
	}
	if strings.Join(causes, " ") != "node-down node-down unknown" {
		t.Errorf("missed.csv causes %v", causes)
	}
}

// TestLegacyMissedLinesChangeNothing: streams written before the recorder
// stopped classifying hold "missed" lines (cause node-down, by another
// rule than missed.csv's); a report of such a stream ignores them.
func TestLegacyMissedLinesChangeNothing(t *testing.T) {
	evs := []eventlog.Event{runStart("v1", "v2", "v3", "v4"),
		block(1, 1000, 0, nil, nil),
		faultAt(1500, "v4", action.NodeKill, eventlog.FaultStart),
		block(2, 2000, 0, nil, nil),
		block(3, 3000, 0, []string{"v4"}, nil),
		faultAt(3500, "v4", action.NodeKill, eventlog.FaultEnd),
		block(4, 4000, 0, []string{"v4"}, nil),
		runEnd(4500, eventlog.StopHeights)}
	var legacy []eventlog.Event
	for _, e := range evs {
		legacy = append(legacy, e)
		if e.Kind == eventlog.KindBlock && e.Height == 3 {
			legacy = append(legacy, eventlog.Event{Time: e.Time, Kind: "missed", Validator: "v4", Height: 2})
		}
	}
	want, err := json.Marshal(Summarize(evs))
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(Summarize(legacy))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("a legacy missed line changed the summary:\n%s\nwant\n%s", got, want)
	}
}

func withDetail(ev eventlog.Event, detail string) eventlog.Event { ev.Detail = detail; return ev }
