package results

import (
	"fmt"
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
	req        bool  // from an unanswered sign_request
	seq        int64 // stream position of its event
}

func (s sigSpan) answered() bool { return !s.end.IsZero() }

// inProgress: the signer was working on s at t.
func (s sigSpan) inProgress(t time.Time) bool {
	return !s.began.After(t) && (!s.answered() || s.end.After(t))
}

// before orders a validator's signatures as they began, sign events
// before unanswered requests, each in stream order: what a stable sort by
// began of its sign events followed by its unanswered requests gives.
func (s sigSpan) before(o sigSpan) bool {
	if c := s.began.Compare(o.began); c != 0 {
		return c < 0
	}
	if s.req != o.req {
		return !s.req
	}
	return s.seq < o.seq
}

// what names the signature, e.g. "the h19 precommit r1 signature".
func (s sigSpan) what() string {
	return fmt.Sprintf("the h%d %s r%d signature", s.height, s.phase, s.round)
}

// busyAt is the earliest-begun signature of v's signer still in progress
// at t, if any: the signer was the holdup then.
func (x *index) busyAt(v int32, t time.Time) (sigSpan, bool) {
	return x.busyOtherThan(v, t, "", hr{-1, -1})
}

// busyOtherThan is busyAt leaving out v's own phase signature at k: what
// kept the signer from starting that one.
func (x *index) busyOtherThan(v int32, t time.Time, phase string, k hr) (sigSpan, bool) {
	x.looked(lookSpans, t, t)
	for _, s := range x.spans[v] {
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
func (x *index) backlogDuring(v int32, h int64, from, to time.Time) (sigSpan, bool) {
	x.looked(lookSpans, from, to)
	for _, s := range x.spans[v] {
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
// signer never returned, if any (h's requests are resolved: see resolve).
func (x *index) unanswered(v int32, phase string, k hr) (sigSpan, bool) {
	for _, s := range x.spans[v] {
		if !s.answered() && s.phase == phase && s.height == k.height && s.round == k.round {
			return s, true
		}
	}
	return sigSpan{}, false
}

// privvalTimeout is how long a CometBFT node waits for its remote
// signer's answer (privval/signer_endpoint.go: the 5 s read timeout, the
// same in v0.37 to v1): a request out longer than that was given up on.
const privvalTimeout = 5 * time.Second

// gaveUp reports whether s, unanswered, was out longer than a node waits
// by the end of what the stream shows; a request younger than that at the
// stream's end may have been about to return.
func (x *index) gaveUp(s sigSpan) bool {
	if s.answered() {
		return false
	}
	if x.known != nil && !x.known.end.IsZero() {
		return x.known.end.Sub(s.began) >= privvalTimeout
	}
	if x.latest.Sub(s.began) >= privvalTimeout {
		return true
	}
	// Not yet: the stream may go on past the node's wait (finish checks).
	if !x.undecided || s.began.Before(x.undecidedBegan) {
		x.undecided, x.undecidedBegan = true, s.began
	}
	return false
}

// unansweredText is how an unanswered request ended: "never returned"
// (out past the node's wait), or still out when the stream ended.
func (x *index) unansweredText(s sigSpan) string {
	if x.gaveUp(s) {
		return "never returned"
	}
	end := x.latest
	if x.known != nil && !x.known.end.IsZero() {
		end = x.known.end
	}
	return "still unanswered when the run ended, " + formatMS(durationMS(end.Sub(s.began))) + " ms after it was requested"
}

// busyText says what v's signer was doing at t, relative to t, e.g. "the
// h19 precommit r0 signature, requested 200 ms before, took 1504 ms" or
// "…, requested 3 s before, never returned".
func (x *index) busyText(s sigSpan, t time.Time) string {
	out := s.what() + ", requested " + formatMS(durationMS(t.Sub(s.began))) + " ms before"
	if s.answered() {
		return out + ", took " + formatMS(s.latencyMS) + " ms"
	}
	return out + ", " + x.unansweredText(s)
}

// busySince names s as busyText does, relative to the start of a round:
// "the h19 proposal r0 signature (requested 300 ms before the round
// began, took 1501 ms)".
func (x *index) busySince(s sigSpan, roundStart time.Time) string {
	out := s.what() + " ("
	if d := roundStart.Sub(s.began); d >= 0 {
		out += "requested " + formatMS(durationMS(d)) + " ms before the round began"
	} else {
		out += "requested " + formatMS(durationMS(-d)) + " ms into the round"
	}
	if s.answered() {
		return out + ", took " + formatMS(s.latencyMS) + " ms)"
	}
	return out + ", " + x.unansweredText(s) + ")"
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

func durationMS(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
