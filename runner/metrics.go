package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/valnet/valnet/results/eventlog"
)

// liveMetrics serves the run's progress as Prometheus metrics while it
// runs (valnet run --metrics ADDR). It is fed the same events as
// events.jsonl, from its own registry: CometBFT's global registry is not
// touched (two in-process nodes could not both register there).
type liveMetrics struct {
	reg    *prometheus.Registry
	srv    *http.Server
	ln     net.Listener
	served chan struct{}

	height     prometheus.Gauge
	round      prometheus.Gauge
	rounds     prometheus.Counter
	missed     *prometheus.CounterVec
	nilVotes   *prometheus.CounterVec
	signErrors *prometheus.CounterVec
	signs      *prometheus.HistogramVec
	faults     *prometheus.GaugeVec

	mu          sync.Mutex
	roundsSeen  map[[2]int64]bool
	lastHeight  int64
	currentHigh int64
}

// signBuckets cover a local key (~0.03 ms) to a post-quantum hardware
// wallet (minutes), in seconds.
var signBuckets = []float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120}

func startMetrics(addr string) (*liveMetrics, error) {
	m := &liveMetrics{reg: prometheus.NewRegistry(), roundsSeen: map[[2]int64]bool{}, served: make(chan struct{})}
	m.height = prometheus.NewGauge(prometheus.GaugeOpts{Name: "valnet_height", Help: "Last committed height."})
	m.round = prometheus.NewGauge(prometheus.GaugeOpts{Name: "valnet_round", Help: "Highest round entered at the height being decided."})
	m.rounds = prometheus.NewCounter(prometheus.CounterOpts{Name: "valnet_round_changes_total", Help: "Rounds entered beyond round 0, over all heights."})
	m.missed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "valnet_missed_precommits_total",
		Help: "Heights whose next block's LastCommit has the validator absent (missed blocks)."}, []string{"validator"})
	m.nilVotes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "valnet_nil_precommits_total",
		Help: "Heights whose next block's LastCommit has the validator voting nil."}, []string{"validator"})
	m.signErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "valnet_sign_errors_total",
		Help: "Signatures the signer refused or failed."}, []string{"validator", "phase"})
	m.signs = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "valnet_sign_latency_seconds",
		Help: "Signing latency; side node = as the node saw it, signer = inside a remote signer.", Buckets: signBuckets},
		[]string{"validator", "phase", "side"})
	m.faults = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "valnet_fault_active", Help: "1 while a scenario fault is active."},
		[]string{"action", "target"})
	m.reg.MustRegister(m.height, m.round, m.rounds, m.missed, m.nilVotes, m.signErrors, m.signs, m.faults)

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics %s: %w", addr, err)
	}
	m.ln = ln
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(m.served)
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the run goes on without live metrics
		}
	}()
	return m, nil
}

// Addr is where the metrics are served.
func (m *liveMetrics) Addr() string { return m.ln.Addr().String() }

// Observe updates the metrics from one event.
func (m *liveMetrics) Observe(e eventlog.Event) {
	switch e.Kind {
	case eventlog.KindBlock:
		m.mu.Lock()
		if e.Height > m.lastHeight {
			m.lastHeight = e.Height
			m.height.Set(float64(e.Height))
			m.round.Set(0)
			m.currentHigh = 0
		}
		m.mu.Unlock()
		for _, v := range e.LastCommitAbsent {
			m.missed.WithLabelValues(v).Inc()
		}
		for _, v := range e.LastCommitNil {
			m.nilVotes.WithLabelValues(v).Inc()
		}
	case eventlog.KindNewRound:
		m.mu.Lock()
		k := [2]int64{e.Height, int64(e.Round)}
		if e.Round > 0 && !m.roundsSeen[k] {
			m.roundsSeen[k] = true
			m.rounds.Inc()
		}
		if e.Height == m.lastHeight+1 && int64(e.Round) > m.currentHigh {
			m.currentHigh = int64(e.Round)
			m.round.Set(float64(e.Round))
		}
		m.mu.Unlock()
	case eventlog.KindSign:
		if e.Error != "" {
			m.signErrors.WithLabelValues(e.Validator, e.Phase).Inc()
			return
		}
		side := "node"
		if e.Side == eventlog.SideSigner {
			side = "signer"
		}
		m.signs.WithLabelValues(e.Validator, e.Phase, side).Observe(e.LatencyMS / 1000)
	case eventlog.KindFault:
		v := 0.0
		if e.State == eventlog.FaultStart {
			v = 1
		}
		m.faults.WithLabelValues(e.Action, e.Validator).Set(v)
	}
}

// Close stops serving.
func (m *liveMetrics) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := m.srv.Shutdown(ctx)
	<-m.served
	return err
}
