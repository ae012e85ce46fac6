// Package profiles holds calibrated device MODELS: how long a signing device
// takes per signature, from published figures. It is data and arithmetic
// only (it imports nothing of valnet but the latency leaf), so scenario
// validation can check a profile name without pulling in the signers.
//
// A profile models time only. The simulated signer that uses one signs with
// a real local key (Ed25519 or secp256k1), so a profile of a post-quantum
// scheme gives that scheme's signing time, not its signature or its size.
// Every result built on a profile must say it is a model: use Label.
package profiles

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/valnet/valnet/latency"
)

// Point is one row of a signing-time-by-payload table.
type Point struct {
	Bytes   int
	Latency time.Duration
}

// Profile is a model of one device (or backend) signing with one scheme.
// Exactly one of Latency or ByPayload is set.
type Profile struct {
	Name        string
	Description string        // one line; says it is a model, and of what
	Source      string        // where the numbers come from, plain text
	Latency     *latency.Spec // a time distribution per signature, or:
	// ByPayload is signing time by payload (sign bytes) size, sorted by
	// Bytes ascending: linear between points, linear extrapolation beyond
	// the last two, clamped at the first point below it.
	ByPayload []Point
	// Jitter is an optional relative spread applied to ByPayload values
	// (0.05 = uniform ±5 %); 0 = exact. A device table gives averages, so
	// a little jitter keeps validators from signing in lockstep.
	Jitter float64
}

// Label names the profile as a model, e.g. "model:yubihsm2", so no result
// passes a modelled time off as a measured one.
func (p Profile) Label() string { return "model:" + p.Name }

// At returns the signing time of a payload of n bytes for a ByPayload
// profile, without jitter. A Latency profile has no fixed time: At returns 0
// for it (draw from the distribution instead). Below the first point the
// first point's time applies (a device does not get faster than its
// smallest measured payload); beyond the last point the line through the
// last two points is extended. The result is never negative.
func (p Profile) At(n int) time.Duration {
	pts := p.ByPayload
	if len(pts) == 0 {
		return 0
	}
	if len(pts) == 1 || n <= pts[0].Bytes {
		return pts[0].Latency
	}
	i := sort.Search(len(pts), func(i int) bool { return pts[i].Bytes >= n })
	if i < len(pts) && pts[i].Bytes == n {
		return pts[i].Latency // exact row: no float rounding
	}
	if i == len(pts) {
		i = len(pts) - 1 // beyond the table: extend the last segment
	}
	a, b := pts[i-1], pts[i]
	if b.Bytes == a.Bytes {
		return b.Latency
	}
	frac := float64(n-a.Bytes) / float64(b.Bytes-a.Bytes)
	d := float64(a.Latency) + frac*float64(b.Latency-a.Latency)
	return time.Duration(math.Max(0, math.Round(d)))
}

// Validate checks that p is usable: a name, exactly one of Latency or
// ByPayload, a distribution with sane parameters, a table of at least two
// points strictly ascending in Bytes with non-negative times, and Jitter in
// [0, 1).
func (p Profile) Validate() error {
	if strings.TrimSpace(p.Name) == "" {
		return errors.New("profile has no name")
	}
	if (p.Latency == nil) == (len(p.ByPayload) == 0) {
		return fmt.Errorf("profile %q: set exactly one of a distribution or a by-payload table", p.Name)
	}
	if math.IsNaN(p.Jitter) || p.Jitter < 0 || p.Jitter >= 1 {
		return fmt.Errorf("profile %q: jitter must be in [0, 1), got %v", p.Name, p.Jitter)
	}
	if p.Latency != nil {
		if err := p.Latency.Validate(); err != nil {
			return fmt.Errorf("profile %q: %w", p.Name, err)
		}
		return nil
	}
	if len(p.ByPayload) < 2 {
		return fmt.Errorf("profile %q: a by-payload table needs at least 2 points, got %d", p.Name, len(p.ByPayload))
	}
	for i, pt := range p.ByPayload {
		if pt.Bytes < 0 || pt.Latency < 0 {
			return fmt.Errorf("profile %q: point %d (%d B, %v) is negative", p.Name, i, pt.Bytes, pt.Latency)
		}
		if i > 0 && pt.Bytes <= p.ByPayload[i-1].Bytes {
			return fmt.Errorf("profile %q: by-payload points must ascend strictly in bytes (%d B after %d B)",
				p.Name, pt.Bytes, p.ByPayload[i-1].Bytes)
		}
	}
	return nil
}

// Summary describes the timing in one line, for reports, e.g.
// "lognormal p50=550ms p99=605ms" or "by payload 32B=105ms .. 1024B=353ms".
func (p Profile) Summary() string {
	if p.Latency != nil {
		return p.Latency.String()
	}
	if len(p.ByPayload) == 0 {
		return "no timing"
	}
	first, last := p.ByPayload[0], p.ByPayload[len(p.ByPayload)-1]
	s := fmt.Sprintf("by payload %dB=%v .. %dB=%v", first.Bytes, first.Latency, last.Bytes, last.Latency)
	if p.Jitter > 0 {
		s += fmt.Sprintf(" ±%g%%", p.Jitter*100)
	}
	return s
}

// clone copies the slices, so a caller cannot change the catalog.
func (p Profile) clone() Profile {
	if p.Latency != nil {
		d := *p.Latency
		p.Latency = &d
	}
	p.ByPayload = append([]Point(nil), p.ByPayload...)
	return p
}
