package results

import (
	"fmt"
	"time"
)

// nodeAt is where a node's consensus was at one moment: a new_round or
// step event of that node.
type nodeAt struct {
	t      time.Time
	height int64
	round  int32
}

// heightAt is the highest height node had entered by t (its new_round
// and step events up to t); ok false when it shows none by then.
func (x *index) heightAt(node string, t time.Time) (h int64, ok bool) {
	for _, m := range x.nodeAt[node] {
		if !m.t.After(t) {
			h, ok = max(h, m.height), true
		}
	}
	return h, ok
}

// entered reports whether node showed an event of round k by t.
func (x *index) entered(node string, k hr, t time.Time) bool {
	for _, m := range x.nodeAt[node] {
		if !m.t.After(t) && m.height == k.height && m.round == k.round {
			return true
		}
	}
	return false
}

// behindText says where v's node was at t when it had not reached height
// h, and why it may have been: a node that came back from a node fault
// shortly before is catching up.
func (x *index) behindText(v string, h int64, t time.Time) string {
	out := fmt.Sprintf("%s's node had not reached height %d", v, h)
	if at, ok := x.heightAt(v, t); ok {
		out += fmt.Sprintf(" (it was at height %d)", at)
	} else {
		out += " (no consensus event of it yet)"
	}
	return out + x.cameBackText(v, t)
}

// cameBackText: "; its node ran again 620 ms before (after node-kill),
// catching up" when v's last down window ended before t, else "".
func (x *index) cameBackText(v string, t time.Time) string {
	var last *downWindow
	for i, w := range x.downs.windowsOf(v) {
		if !w.open && !w.end.After(t) {
			last = &x.downs.windowsOf(v)[i]
		}
	}
	if last == nil {
		return ""
	}
	return fmt.Sprintf("; its node ran again %s ms before (after %s), catching up", formatMS(durationMS(t.Sub(last.end))), last.action)
}
