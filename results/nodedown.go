package results

import (
	"github.com/valnet/valnet/results/eventlog"
	"time"

	"github.com/valnet/valnet/internal/action"
)

// NodeChange is what an event does to the node of its validator.
type NodeChange int

const (
	NodeUnchanged NodeChange = iota // not a node fault: says nothing about the node
	NodeDown                        // the node stops running
	NodeUp                          // the node runs again
)

// NodeChangeOf is the one definition of "node down" that the runner's
// live view (the load generator skips a node that is down) and the
// report's node-down cause share. For a fault
// event on a validator:
//   - node-stop, node-kill, node-pause and node-restart starting take the
//     node down; their end brings it back. A node-restart is down until its
//     end event, with or without a duration: the runner emits that end once
//     the node runs again (right after the start when there is no
//     duration, so the window is the restart itself).
//   - node-start and node-resume (start or end) bring the node back: they
//     end the down window of an earlier stop, kill or pause of the same
//     validator.
//
// Nothing else, and no Detail text, changes whether a node is down.
func NodeChangeOf(e *eventlog.Event) NodeChange {
	if e.Kind != eventlog.KindFault || e.Validator == "" {
		return NodeUnchanged
	}
	switch e.Action {
	case action.NodeStop, action.NodeKill, action.NodePause, action.NodeRestart:
		switch e.State {
		case eventlog.FaultStart:
			return NodeDown
		case eventlog.FaultEnd:
			return NodeUp
		}
	case action.NodeStart, action.NodeResume:
		if e.State == eventlog.FaultStart || e.State == eventlog.FaultEnd {
			return NodeUp
		}
	}
	return NodeUnchanged
}

// NodeDowns follows, through a stream of events in order, which
// validators' nodes are down (by NodeChangeOf) and keeps each down window.
// The recorder asks it while the run goes; the report's index keeps one
// per Summarizer. The zero value is ready to use; it is not safe for
// concurrent use.
type NodeDowns struct {
	windows map[string][]downWindow // by validator, in stream order; only the last may be open
}

// downWindow is a stretch in which a validator's node was down: from the
// event that took it down (its action and detail) to the one that brought
// it back; open (and end zero) while it lasts.
type downWindow struct {
	action, detail string
	start, end     time.Time
	open           bool
}

// Observe follows e. A node already down stays in its window (the first
// cause stands) until an event brings it back.
func (d *NodeDowns) Observe(e *eventlog.Event) {
	switch NodeChangeOf(e) {
	case NodeDown:
		if d.Down(e.Validator) {
			return
		}
		if d.windows == nil {
			d.windows = map[string][]downWindow{}
		}
		d.windows[e.Validator] = append(d.windows[e.Validator], downWindow{action: e.Action, detail: e.Detail, start: e.Time, open: true})
	case NodeUp:
		if ws := d.windows[e.Validator]; len(ws) > 0 && ws[len(ws)-1].open {
			ws[len(ws)-1].end, ws[len(ws)-1].open = e.Time, false
		}
	}
}

// Down reports whether validator's node is down after the events observed.
func (d *NodeDowns) Down(validator string) bool {
	ws := d.windows[validator]
	return len(ws) > 0 && ws[len(ws)-1].open
}

// windowsOf lists validator's down windows in order.
func (d *NodeDowns) windowsOf(validator string) []downWindow { return d.windows[validator] }

// downDuring is v's down window that overlaps [from, to], if any.
func (d *NodeDowns) downDuring(v string, from, to time.Time) *downWindow {
	ws := d.windows[v]
	for i := range ws {
		if !ws[i].start.After(to) && (ws[i].open || ws[i].end.After(from)) {
			return &ws[i]
		}
	}
	return nil
}

// text names the fault that took the node down: "node-kill fault active:
// v-4 down (node-kill)".
func (w *downWindow) text() string {
	d := w.action + " fault active"
	if w.detail != "" {
		d += ": " + w.detail
	}
	return d
}
