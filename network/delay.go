package network

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Fixed is a constant delay.
type Fixed time.Duration

func (d Fixed) Draw() time.Duration { return time.Duration(d) }
func (d Fixed) String() string      { return "fixed " + time.Duration(d).String() }

// normal draws from a normal distribution clamped at zero, as netem's
// "delay MEAN JITTER distribution normal" does.
type normal struct {
	mean, stddev time.Duration
	mu           sync.Mutex // Draw is called from every connection of a link
	rng          *rand.Rand
}

// Normal returns a normally distributed delay, seeded by (seed, stream) so
// a run is repeatable per link.
func Normal(mean, stddev time.Duration, seed int64, stream string) Delay {
	h := fnv.New64a()
	h.Write([]byte(stream))
	return &normal{mean: mean, stddev: stddev, rng: rand.New(rand.NewPCG(uint64(seed), h.Sum64()))}
}

func (n *normal) Draw() time.Duration {
	n.mu.Lock()
	z := n.rng.NormFloat64()
	n.mu.Unlock()
	return time.Duration(math.Max(0, float64(n.mean)+z*float64(n.stddev)))
}

func (n *normal) String() string {
	return fmt.Sprintf("normal mean=%v stddev=%v", n.mean, n.stddev)
}
