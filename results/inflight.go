package results

import (
	"fmt"
	"slices"
	"time"
)

// sigSpan is one signature of a validator's signer from request to
// answer: from its sign event (began = t - latency_ms), or from a
// sign_request that no sign event answered (end zero: the signer never
// returned it during the run).
type sigSpan struct {
	phase      string
	height     int64
	round      int32
	began, end time.Time
	latencyMS  float64
}

func (s sigSpan) answered() bool { return !s.end.IsZero() }

// inProgress: the signer was working on s at t.
func (s sigSpan) inProgress(t time.Time) bool {
	return !s.began.After(t) && (!s.answered() || s.end.After(t))
}

// what names the signature, e.g. "the h19 precommit r1 signature".
func (s sigSpan) what() string {
	return fmt.Sprintf("the h%d %s r%d signature", s.height, s.phase, s.round)
}

// spansOf lists v's signatures (node side) in the order they began. A
// sign_request is answered by the first later sign event of the same
// phase, height and round that no earlier request took.
func (x *index) spansOf(v string) []sigSpan {
	if sp, ok := x.spans[v]; ok {
		return sp
	}
	var out []sigSpan
	answers := map[turn][]*Event{} // (phase, height, round) -> sign events not yet taken by a request
	for _, ev := range x.signsOf[v] {
		out = append(out, sigSpan{phase: ev.Phase, height: ev.Height, round: ev.Round,
			began: ev.Time.Add(-msDuration(ev.LatencyMS)), end: ev.Time, latencyMS: ev.LatencyMS})
		k := turn{height: ev.Height, round: ev.Round, phase: ev.Phase}
		answers[k] = append(answers[k], ev)
	}
	for _, req := range x.requests[v] {
		k := turn{height: req.Height, round: req.Round, phase: req.Phase}
		evs := answers[k]
		i := slices.IndexFunc(evs, func(ev *Event) bool { return !ev.Time.Before(req.Time) })
		if i >= 0 {
			answers[k] = evs[i+1:] // answers of one turn come in order
			continue
		}
		out = append(out, sigSpan{phase: req.Phase, height: req.Height, round: req.Round, began: req.Time})
	}
	slices.SortStableFunc(out, func(a, b sigSpan) int { return a.began.Compare(b.began) })
	if x.spans == nil {
		x.spans = map[string][]sigSpan{}
	}
	x.spans[v] = out
	return out
}

// busyAt is the earliest-begun signature of v's signer still in progress
// at t, if any: the signer was the holdup then.
func (x *index) busyAt(v string, t time.Time) (sigSpan, bool) {
	return x.busyOtherThan(v, t, "", hr{-1, -1})
}

// busyOtherThan is busyAt leaving out v's own phase signature at k: what
// kept the signer from starting that one.
func (x *index) busyOtherThan(v string, t time.Time, phase string, k hr) (sigSpan, bool) {
	for _, s := range x.spansOf(v) {
		if s.began.After(t) {
			break
		}
		if s.inProgress(t) && !(s.phase == phase && s.height == k.height && s.round == k.round) {
			return s, true
		}
	}
	return sigSpan{}, false
}

// backlogDuring is the first signature of v's signer for a height below h
// that was in progress at some time in [from, to], if any: a backlog that
// kept the signer from h's own signatures.
func (x *index) backlogDuring(v string, h int64, from, to time.Time) (sigSpan, bool) {
	for _, s := range x.spansOf(v) {
		if s.began.After(to) {
			break
		}
		if s.height < h && (!s.answered() || !s.end.Before(from)) {
			return s, true
		}
	}
	return sigSpan{}, false
}

// unanswered is v's request for a phase signature at (h, r) that its
// signer never returned, if any.
func (x *index) unanswered(v, phase string, k hr) (sigSpan, bool) {
	for _, s := range x.spansOf(v) {
		if !s.answered() && s.phase == phase && s.height == k.height && s.round == k.round {
			return s, true
		}
	}
	return sigSpan{}, false
}

// busyText says what v's signer was doing at t, relative to t, e.g. "the
// h19 precommit r0 signature, requested 200 ms before, took 1504 ms" or
// "…, requested 3 s before, never returned".
func busyText(s sigSpan, t time.Time) string {
	out := s.what() + ", requested " + formatMS(durationMS(t.Sub(s.began))) + " ms before"
	if s.answered() {
		return out + ", took " + formatMS(s.latencyMS) + " ms"
	}
	return out + ", never returned"
}

// busySince names s as busyText does, relative to the start of a round:
// "the h19 proposal r0 signature (requested 300 ms before the round
// began, took 1501 ms)".
func busySince(s sigSpan, roundStart time.Time) string {
	out := s.what() + " ("
	if d := roundStart.Sub(s.began); d >= 0 {
		out += "requested " + formatMS(durationMS(d)) + " ms before the round began"
	} else {
		out += "requested " + formatMS(durationMS(-d)) + " ms into the round"
	}
	if s.answered() {
		return out + ", took " + formatMS(s.latencyMS) + " ms)"
	}
	return out + ", never returned)"
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

func durationMS(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
