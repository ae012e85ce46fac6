package latency

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Model draws delays. Draw is safe to call from many goroutines at once
// (a link's connections, a signer's requests).
type Model interface {
	Draw() time.Duration
	String() string // the Spec's description, e.g. "fixed 200ms"
}

// z99 is the 99th percentile of the standard normal distribution; it turns
// a (p50, p99) pair into a lognormal's sigma.
const z99 = 2.3263478740408408

// New validates spec and returns its model, drawing from NewRand(seed,
// stream): the same spec, seed and stream give the same delays.
func New(spec Spec, seed int64, stream string) (Model, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.Dist == Fixed {
		return Constant(spec.Value), nil
	}
	m := &model{spec: spec, rng: NewRand(seed, stream)}
	if spec.Dist == Lognormal {
		m.mu = math.Log(float64(spec.P50))
		m.sigma = (math.Log(float64(spec.P99)) - m.mu) / z99
	}
	return m, nil
}

// Constant is a fixed delay d, with no random stream.
func Constant(d time.Duration) Model { return constant(d) }

type constant time.Duration

func (c constant) Draw() time.Duration   { return time.Duration(c) }
func (c constant) String() string        { return Spec{Dist: Fixed, Value: time.Duration(c)}.String() }
func (c constant) Median() time.Duration { return time.Duration(c) }

type model struct {
	spec      Spec
	rng       *Rand
	mu, sigma float64 // lognormal
}

func (m *model) Draw() time.Duration {
	s := m.spec
	switch s.Dist {
	case Uniform:
		// float64 rounds a range near the top of int64 up: never past Max.
		return min(s.Max, s.Min+duration(m.rng.Float64()*float64(s.Max-s.Min)))
	case Normal:
		// Clamped at zero, as netem's "distribution normal" is: a delay
		// cannot be negative.
		return duration(float64(s.Mean) + m.rng.NormFloat64()*float64(s.Stddev))
	default: // Lognormal; New admits nothing else
		return duration(math.Exp(m.mu + m.sigma*m.rng.NormFloat64()))
	}
}

// duration converts a drawn delay in nanoseconds, clamped to [0, the
// longest time.Duration]: converting a float beyond int64 is undefined in
// Go (on amd64 it gives the most negative Duration), and a huge mean or
// p99 (2562047h is the longest Duration) draws there.
func duration(ns float64) time.Duration {
	switch {
	case !(ns > 0): // also NaN
		return 0
	case ns >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(ns)
}

func (m *model) String() string { return m.spec.String() }

func (m *model) Median() time.Duration { return m.spec.Median() }

// Medianer is a model that knows its median (Spec.Median).
type Medianer interface{ Median() time.Duration }

// Specer is a model that says the spec it draws from (every model New
// makes).
type Specer interface{ Spec() Spec }

func (m *model) Spec() Spec { return m.spec }

var _ Specer = (*model)(nil)

// Typical is m's median delay when m knows it (every model New and
// Constant make does), else 0: the delay a message typically takes, for
// a model that needs one figure rather than a draw (the sim's view of
// how late a peer's state reaches a node).
func Typical(m Model) time.Duration {
	if md, ok := m.(Medianer); ok {
		return md.Median()
	}
	return 0
}

// Serialer is a model that can stop locking its draws.
type Serialer interface{ Serial() }

func (m *model) Serial() { m.rng.serial = true }

// MakeSerial tells m (nil, or any model) that from now on one goroutine
// alone draws from it (the sim's event loop), so its draws skip their
// lock: the same draws, without the cost of a lock per message. A model
// shared with other goroutines must not be given to it.
func MakeSerial(m Model) {
	if s, ok := m.(Serialer); ok {
		s.Serial()
	}
}

// Rand is a random stream with valnet's one seeding rule: PCG seeded by
// the run seed and the FNV-1a hash of a name (a validator, a link, a
// fault), so each named thing draws its own repeatable sequence. It is
// safe for concurrent use.
type Rand struct {
	mu     sync.Mutex
	r      *rand.Rand
	serial bool // one goroutine draws: no lock (MakeSerial)
}

// NewRand is the stream of name under seed.
func NewRand(seed int64, name string) *Rand { return &Rand{r: NewStream(seed, name)} }

// NewStream is the stream of name under seed without NewRand's lock, for
// a caller that draws from one goroutine only (the sim's event loop, where
// a lock per message was a fifth of its time). It draws exactly what
// NewRand(seed, name) draws.
func NewStream(seed int64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

// Float64 draws from [0, 1).
func (r *Rand) Float64() float64 {
	if r.serial {
		return r.r.Float64()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.Float64()
}

// NormFloat64 draws from the standard normal distribution.
func (r *Rand) NormFloat64() float64 {
	if r.serial {
		return r.r.NormFloat64()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r.NormFloat64()
}
