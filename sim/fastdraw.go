package sim

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"

	"github.com/valnet/valnet/internal/links"
	"github.com/valnet/valnet/latency"
)

// In-place link delays. Every message draws its link's delay, and over a
// random topology a run sends hundreds of millions of messages. A zone
// link's delay is a latency model (a normal of 5 % jitter, links.Resolve
// via network.ZoneDelay) whose state is four objects of four sizes on
// the heap: model, latency.Rand, rand.Rand, PCG; a draw missed the cache
// on each, a third of a 1,000-node run's time. fastNormal draws the
// same numbers from the same stream (latency.New's: a PCG seeded by the
// run seed and the FNV-1a hash of "link:FROM->TO") with its state in an
// array beside the links (netModel.fast). newNet checks a sample of links against a fresh
// resolve, draw by draw, and keeps the models if one differs.

// fastNormal is a normal delay, clamped at zero, as latency.New's model
// of Dist normal draws it (and links.Delay adds nothing to it).
type fastNormal struct {
	mean, sd time.Duration
	rnd      rand.Rand // over pcg
	pcg      rand.PCG
}

var _ latency.Model = (*fastNormal)(nil)

// Draw is latency's model.Draw for Normal, through links.Delay.Draw.
func (f *fastNormal) Draw() time.Duration {
	ns := float64(f.mean) + f.rnd.NormFloat64()*float64(f.sd)
	switch { // latency.duration
	case !(ns > 0):
		return 0
	case ns >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(ns)
}

func (f *fastNormal) Median() time.Duration { return f.mean }

func (f *fastNormal) String() string {
	return latency.Spec{Dist: latency.Normal, Mean: f.mean, Stddev: f.sd}.String()
}

// fastNormalOf is the spec of m when m is a link's normal delay with no
// jitter added (links.Delay{Base: normal}); false for any other model.
func fastNormalOf(m latency.Model) (mean, sd time.Duration, ok bool) {
	d, isDelay := m.(links.Delay)
	if !isDelay || d.Base == nil || d.Jitter != nil {
		return 0, 0, false
	}
	// Only a model of latency.New says its spec, and only its draws are
	// the stream init reproduces.
	sp, ok := d.Base.(latency.Specer)
	if !ok {
		return 0, 0, false
	}
	spec := sp.Spec()
	return spec.Mean, spec.Stddev, spec.Dist == latency.Normal
}

// init seeds f for the link from -> to of a run of seed: the stream
// latency.New(spec, seed, "link:FROM->TO") draws from.
func (f *fastNormal) init(mean, sd time.Duration, seed int64, from, to string) {
	h := fnv.New64a()
	h.Write([]byte("link:" + from + "->" + to))
	f.mean, f.sd = mean, sd
	f.pcg = *rand.NewPCG(uint64(seed), h.Sum64())
	f.rnd = *rand.New(&f.pcg)
}

// fastDrawsMatch: for each sampled link, a fastNormal draws what the
// model of a fresh resolve of the link draws (resolve returns it).
func fastDrawsMatch(sample [][2]string, seed int64, resolve func(from, to string) latency.Model) bool {
	for _, p := range sample {
		m := resolve(p[0], p[1])
		mean, sd, ok := fastNormalOf(m)
		if !ok {
			continue // not drawn in place
		}
		var f fastNormal
		f.init(mean, sd, seed, p[0], p[1])
		for range 32 {
			if f.Draw() != m.Draw() {
				return false
			}
		}
	}
	return true
}
