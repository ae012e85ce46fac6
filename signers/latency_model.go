package signers

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Model draws injected signing delays. Draws are repeatable: a model is
// seeded from the run seed and the validator's name, so the same scenario
// and seed give the same sequence of delays.
type Model interface {
	Draw() time.Duration
	String() string // e.g. "fixed 200ms", "lognormal p50=200ms p99=800ms"
}

// z99 is the 99th percentile of the standard normal distribution; it turns
// a (p50, p99) pair into a lognormal's sigma.
const z99 = 2.3263478740408408

// ModelSpec describes a latency model; only the fields of Dist are used.
type ModelSpec struct {
	Dist            string // fixed | uniform | normal | lognormal
	Value, Min, Max time.Duration
	Mean, Stddev    time.Duration
	P50, P99        time.Duration
}

// NewModel builds the model spec describes, drawing from a generator seeded
// by (seed, stream). stream is usually the validator name.
func NewModel(spec ModelSpec, seed int64, stream string) (Model, error) {
	rng := newRand(seed, stream)
	switch spec.Dist {
	case "fixed", "":
		if spec.Value < 0 {
			return nil, fmt.Errorf("fixed latency must be >= 0, got %v", spec.Value)
		}
		return fixedModel{spec.Value}, nil
	case "uniform":
		if spec.Min < 0 || spec.Max < spec.Min {
			return nil, fmt.Errorf("uniform latency needs 0 <= min <= max, got min=%v max=%v", spec.Min, spec.Max)
		}
		return &uniformModel{min: spec.Min, max: spec.Max, rng: rng}, nil
	case "normal":
		if spec.Mean < 0 || spec.Stddev < 0 {
			return nil, fmt.Errorf("normal latency needs mean, stddev >= 0, got mean=%v stddev=%v", spec.Mean, spec.Stddev)
		}
		return &normalModel{mean: spec.Mean, stddev: spec.Stddev, rng: rng}, nil
	case "lognormal":
		if spec.P50 <= 0 || spec.P99 < spec.P50 {
			return nil, fmt.Errorf("lognormal latency needs 0 < p50 <= p99, got p50=%v p99=%v", spec.P50, spec.P99)
		}
		mu := math.Log(float64(spec.P50))
		sigma := (math.Log(float64(spec.P99)) - mu) / z99
		return &lognormalModel{p50: spec.P50, p99: spec.P99, mu: mu, sigma: sigma, rng: rng}, nil
	default:
		return nil, fmt.Errorf("unknown latency distribution %q (allowed: fixed, uniform, normal, lognormal)", spec.Dist)
	}
}

func newRand(seed int64, stream string) *lockedRand {
	h := fnv.New64a()
	h.Write([]byte(stream))
	return &lockedRand{r: rand.New(rand.NewPCG(uint64(seed), h.Sum64()))}
}

// lockedRand lets one model be drawn from concurrently (a validator signs
// one message at a time, but SignBytes may come from elsewhere).
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRand) float64() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Float64()
}

func (l *lockedRand) normFloat64() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.NormFloat64()
}

type fixedModel struct{ d time.Duration }

func (m fixedModel) Draw() time.Duration { return m.d }
func (m fixedModel) String() string      { return "fixed " + m.d.String() }

type uniformModel struct {
	min, max time.Duration
	rng      *lockedRand
}

func (m *uniformModel) Draw() time.Duration {
	return m.min + time.Duration(m.rng.float64()*float64(m.max-m.min))
}
func (m *uniformModel) String() string { return fmt.Sprintf("uniform %v..%v", m.min, m.max) }

type normalModel struct {
	mean, stddev time.Duration
	rng          *lockedRand
}

// Draw clamps at zero: a delay cannot be negative.
func (m *normalModel) Draw() time.Duration {
	d := float64(m.mean) + m.rng.normFloat64()*float64(m.stddev)
	return time.Duration(math.Max(0, d))
}
func (m *normalModel) String() string {
	return fmt.Sprintf("normal mean=%v stddev=%v", m.mean, m.stddev)
}

type lognormalModel struct {
	p50, p99  time.Duration
	mu, sigma float64
	rng       *lockedRand
}

func (m *lognormalModel) Draw() time.Duration {
	return time.Duration(math.Exp(m.mu + m.sigma*m.rng.normFloat64()))
}
func (m *lognormalModel) String() string {
	return fmt.Sprintf("lognormal p50=%v p99=%v", m.p50, m.p99)
}
