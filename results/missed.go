package results

import (
	"encoding/csv"
	"fmt"
	"github.com/valnet/valnet/results/eventlog"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/internal/signfail"
)

// Causes of a missed precommit, in the order they are tried (and
// CauseHostOverload, between signer-late and node-behind). A signature
// the signer chain withheld or never returned is never "late": the four
// failure kinds of internal/signfail are causes of their own.
const (
	CauseNodeDown           = "node-down"
	CauseSignerFailed       = signfail.SignerFailed
	CauseSignatureInvalid   = signfail.SignatureInvalid
	CauseSignerConflict     = signfail.SignerConflict
	CauseSignerNotAnswering = signfail.SignerNotAnswering
	// CauseSignerLate: the signer answered, after the decision.
	CauseSignerLate = "signer-late"
	CauseNodeBehind = "node-behind"
	CauseNetwork    = "network"
	CauseUnknown    = "unknown"
)

// MissedCauses lists every cause of a missed precommit, in report order.
var MissedCauses = []string{CauseSignerLate, CauseSignerFailed, CauseSignatureInvalid, CauseSignerConflict, CauseSignerNotAnswering,
	CauseNodeDown, CauseNodeBehind, CauseHostOverload, CauseNetwork, CauseUnknown}

// MissedByCause counts a validator's missed precommits by cause. A struct
// rather than a map so that every key is always present in summary.json.
type MissedByCause struct {
	SignerLate         int `json:"signer-late"`
	SignerFailed       int `json:"signer-failed"`
	SignatureInvalid   int `json:"signature-invalid"`
	SignerConflict     int `json:"signer-conflict"`
	SignerNotAnswering int `json:"signer-not-answering"`
	NodeDown           int `json:"node-down"`
	NodeBehind         int `json:"node-behind"`
	HostOverload       int `json:"host-overload"`
	Network            int `json:"network"`
	Unknown            int `json:"unknown"`
}

// Get returns the count of one cause (0 for a name that is not a cause).
func (m MissedByCause) Get(cause string) int {
	if p := m.field(cause); p != nil {
		return *p
	}
	return 0
}

func (m *MissedByCause) field(cause string) *int {
	switch cause {
	case CauseSignerLate:
		return &m.SignerLate
	case CauseSignerFailed:
		return &m.SignerFailed
	case CauseSignatureInvalid:
		return &m.SignatureInvalid
	case CauseSignerConflict:
		return &m.SignerConflict
	case CauseSignerNotAnswering:
		return &m.SignerNotAnswering
	case CauseNodeDown:
		return &m.NodeDown
	case CauseNodeBehind:
		return &m.NodeBehind
	case CauseHostOverload:
		return &m.HostOverload
	case CauseNetwork:
		return &m.Network
	case CauseUnknown:
		return &m.Unknown
	}
	return nil
}

// MissedPrecommit is one row of missed.csv: validator's CommitSig for
// Height is absent from block Height+1, and why that most likely happened.
type MissedPrecommit struct {
	Height    int64  `json:"height"`
	Validator string `json:"validator"`
	Cause     string `json:"cause"`
	Detail    string `json:"detail"`
}

// MissedPrecommits classifies every missed precommit of a run (the same
// set missed_precommits counts), by height and in LastCommit order. Causes
// are derived at report time from the events; they are never recorded in
// events.jsonl, so a better classifier re-reads old runs.
func MissedPrecommits(events []eventlog.Event) []MissedPrecommit {
	return summarizeEvents(events).Summary().Missed
}

// missedAt classifies the missed precommits of height h, in LastCommit
// order (see MissedPrecommits): nb is block h+1.
func (x *index) missedAt(c *chain, hd *hdata, nb *blockRow) []MissedPrecommit {
	var out []MissedPrecommit
	for _, id := range c.pool[nb.absent.off : nb.absent.off+nb.absent.n] {
		if id == x.emptyID {
			continue
		}
		cause, detail := x.classifyMissed(c, hd, id)
		out = append(out, MissedPrecommit{Height: hd.height, Validator: x.names.name(id), Cause: cause, Detail: detail})
	}
	return out
}

// decided is when height h was decided, as far as validator v is
// concerned: the earliest step "commit" at h of any node but v's own (v's
// node may lag precisely because of v's signer), else the block event.
func (x *index) decided(c *chain, hd *hdata, v int32) time.Time {
	var t time.Time
	for _, ev := range hd.commitSteps {
		if ev.node != v && (t.IsZero() || ev.t.Before(t)) {
			t = ev.t
		}
	}
	if b := c.row(hd.height); t.IsZero() && b != nil {
		t = b.t.time()
	}
	return t // zero: h was never decided during the run
}

// classifyMissed explains why v's precommit for h is absent from block
// h+1. The first cause that applies wins, from the most certain (the node
// was down) to the least (signed in time, so the vote got lost on the way).
func (x *index) classifyMissed(c *chain, hd *hdata, vid int32) (cause, detail string) {
	h, v := hd.height, x.names.name(vid)
	cr, _ := c.commitRound(h, hd.stepCommit) // known: block h+1 exists
	decided := x.decided(c, hd, vid)
	ms := func(d time.Duration) string { return formatMS(durationMS(d)) }

	// node-down: a node fault overlapping the decisive round.
	from := decided
	if t, ok := x.roundStart(hr{h, cr}); ok && t.Before(from) {
		from = t
	}
	if w := x.downDuring(v, from, decided); w != nil {
		return CauseNodeDown, w.text()
	}

	var ok, failed, prevote *signRec // precommit at cr; failed precommit; any prevote
	var failedAtCR, anyPrecommit bool
	signs := hd.signs[vid]
	for i := range signs {
		ev := &signs[i]
		switch {
		case ev.phase == phase.Prevote && prevote == nil:
			prevote = ev
		case ev.phase != phase.Precommit:
		case ev.err != "" && ev.round <= cr:
			anyPrecommit = true
			if failed == nil || ev.round == cr {
				failed = ev
			}
			failedAtCR = failedAtCR || ev.round == cr
		default:
			anyPrecommit = true
			if ev.err == "" && ev.round == cr && ok == nil {
				ok = ev
			}
		}
	}

	// The commit round's precommit failed, or an earlier round's did and
	// the commit round has no signature to show for it (a later
	// successful signature is judged on its timing instead): the cause is
	// why it failed (signer-failed, signature-invalid, signer-conflict,
	// signer-not-answering).
	if failed != nil && (failedAtCR || ok == nil) {
		return signfail.Of(failed.failure), fmt.Sprintf("precommit r%d: %s", failed.round, failed.err)
	}
	overloaded := func(d string) (string, string, bool) {
		if why, sat := x.saturatedDuring(from, decided); sat {
			return CauseHostOverload, d + "; " + why, true
		}
		return "", "", false
	}

	if ok != nil {
		lat := "signature took " + formatMS(ok.latencyMS) + " ms"
		if ok.t.After(decided) {
			late := fmt.Sprintf("precommit r%d signed %s ms after the decision (%s)", cr, ms(ok.t.Sub(decided)), lat)
			// The signer was the holdup if it had this signature, or an
			// earlier one (a backlog), in hand at the decision.
			if !ok.t.Add(-msDuration(ok.latencyMS)).After(decided) {
				return CauseSignerLate, late
			}
			if busy, isBusy := x.busyAt(vid, decided); isBusy {
				return CauseSignerLate, late + "; at the decision its signer was still on " + x.busyText(busy, decided)
			}
			if busy, isBusy := x.backlogDuring(vid, h, from, decided); isBusy {
				return CauseSignerLate, late + "; during the round its signer was still on " + x.busySince(busy, from)
			}
			if hc, hd, sat := overloaded(late); sat {
				return hc, hd
			}
			// The signer was idle: the node asked late.
			return CauseNodeBehind, fmt.Sprintf("precommit r%d asked for %s ms after the decision (%s): %s's node got there late%s",
				cr, ms(ok.t.Add(-msDuration(ok.latencyMS)).Sub(decided)), lat, v, x.cameBackText(v, decided))
		}
		d := fmt.Sprintf("precommit r%d signed %s ms before the decision (%s)", cr, ms(decided.Sub(ok.t)), lat)
		if pid := c.next(h).proposer; pid != x.emptyID && pid != vid {
			p := x.names.name(pid)
			if x.noVotes {
				d += fmt.Sprintf("; whether %s (proposer of %d) received it is not recorded (vote_events: false)", p, h+1)
			} else if t, got := x.firstReceipt(pid, vid, phase.Precommit, hr{h, cr}); got {
				rel := ms(t.Sub(decided)) + " ms after"
				if t.Before(decided) {
					rel = ms(decided.Sub(t)) + " ms before"
				}
				d += fmt.Sprintf("; %s (proposer of %d) received it %s the decision", p, h+1, rel)
			} else {
				d += fmt.Sprintf("; no vote event shows %s (proposer of %d) receiving it", p, h+1)
			}
		}
		if hc, hd, sat := overloaded(d); sat {
			return hc, hd
		}
		return CauseNetwork, d
	}

	// No precommit for the commit round. The signer was the holdup if it
	// was busy with one of v's signatures when h was decided (of this
	// height or, with a backlog, an earlier one; answered later or never),
	// or, in a stream without sign requests, if v prevoted at h but its
	// precommit never came back at all.
	if busy, isBusy := x.busyAt(vid, decided); isBusy {
		return x.busyCause(busy), fmt.Sprintf("no precommit for r%d: at the decision its signer was still on %s", cr, x.busyText(busy, decided))
	}
	if !anyPrecommit && prevote != nil && !x.requested(vid) {
		return CauseSignerLate, fmt.Sprintf("prevote r%d signed but no precommit signature returned", prevote.round)
	}
	at, seen := x.heightAt(vid, decided)
	behind := seen && at < h
	if behind {
		// A node behind because its signer had a backlog: the signer
		// worked through the decisive round on earlier signatures.
		if busy, isBusy := x.backlogDuring(vid, h, from, decided); isBusy {
			return x.busyCause(busy), fmt.Sprintf("no precommit: %s, its signer on %s during the round", x.behindText(vid, h, decided), x.busySince(busy, from))
		}
	}
	if hc, hd, sat := overloaded(fmt.Sprintf("no precommit for r%d", cr)); sat {
		return hc, hd
	}
	if behind {
		return CauseNodeBehind, "no precommit: " + x.behindText(vid, h, decided)
	}
	if !anyPrecommit && prevote != nil {
		return CauseNodeBehind, fmt.Sprintf("prevote r%d signed, but %s's node never asked for a precommit before the decision (it did not have +2/3 prevotes in time)%s",
			prevote.round, v, x.cameBackText(v, decided))
	}
	if len(signs) == 0 {
		return CauseUnknown, fmt.Sprintf("no signature by %s at height %d", v, h)
	}
	return CauseUnknown, fmt.Sprintf("no precommit signature for r%d", cr)
}

// busyCause is what a signer busy on s was: late (it answered, after the
// moment that mattered, or was still at it when the stream ended) or not
// answering (the request went unanswered for longer than CometBFT's node
// waits for an answer).
func (x *index) busyCause(s sigSpan) string {
	if s.answered() || !x.gaveUp(s) {
		return CauseSignerLate
	}
	return CauseSignerNotAnswering
}

// WriteMissedCSV writes missed.csv: one row per missed precommit of s
// (s.Missed, see MissedPrecommits), with the header
//
//	height,validator,cause,detail
func WriteMissedCSV(w io.Writer, s *Summary) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"height", "validator", "cause", "detail"}); err != nil {
		return err
	}
	for _, m := range s.Missed {
		if err := cw.Write([]string{strconv.FormatInt(m.Height, 10), m.Validator, m.Cause, m.Detail}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// String lists the non-zero causes in report order ("signer-late 1,
// network 2"), or "-" when nothing was missed.
func (m MissedByCause) String() string {
	var parts []string
	for _, c := range MissedCauses {
		if n := m.Get(c); n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
