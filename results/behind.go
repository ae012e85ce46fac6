package results

import (
	"fmt"
	"time"
)

// heightAt is the highest height node had entered by t (its new_round
// and step events up to t); ok false when it shows none by then.
func (x *index) heightAt(node int32, t time.Time) (h int64, ok bool) {
	x.looked(lookMarks, t, t)
	m := x.marks[node]
	if m == nil {
		return 0, false
	}
	// Marks older than the index's bound are folded: t is not older.
	h, ok = m.folded, m.hasFolded
	for _, hm := range m.recent {
		if !hm.t.After(t) && (!ok || hm.height > h) {
			h, ok = hm.height, true
		}
	}
	return h, ok
}

// entered reports whether node showed an event of round k by t.
func (x *index) entered(node int32, k hr, t time.Time) bool {
	rd := x.roundOf(k)
	if rd == nil {
		return false
	}
	at, ok := rd.marks[node]
	return ok && !at.After(t)
}

// behindText says where v's node was at t when it had not reached height
// h, and why it may have been: a node that came back from a node fault
// shortly before is catching up.
func (x *index) behindText(v int32, h int64, t time.Time) string {
	name := x.names.name(v)
	out := fmt.Sprintf("%s's node had not reached height %d", name, h)
	if at, ok := x.heightAt(v, t); ok {
		out += fmt.Sprintf(" (it was at height %d)", at)
	} else {
		out += " (no consensus event of it yet)"
	}
	return out + x.cameBackText(name, t)
}

// cameBackText: "; its node ran again 620 ms before (after node-kill),
// catching up" when v's last down window ended before t, else "".
func (x *index) cameBackText(v string, t time.Time) string {
	x.looked(lookFault, t, t)
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
