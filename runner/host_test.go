package runner

import (
	"context"
	"math"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/valnet/valnet/results/eventlog"
)

func TestParseProcStatCPU(t *testing.T) {
	tests := []struct {
		name        string
		data        string
		busy, total uint64
		wantErr     bool
	}{
		{"idle and iowait are not busy; guest is in user already",
			"cpu  100 5 50 800 40 3 2 0 7 1\ncpu0 50 2 25 400 20 1 1 0 0 0\n", 160, 1000, false},
		{"short kernel line", "cpu  10 0 10 80\n", 20, 100, false},
		{"no cpu line", "intr 1 2 3\n", 0, 0, true},
		{"garbage", "cpu  x 0 0 0\n", 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			busy, total, err := parseProcStatCPU([]byte(tt.data))
			if (err != nil) != tt.wantErr || busy != tt.busy || total != tt.total {
				t.Fatalf("got busy %d total %d err %v; want %d %d err %v", busy, total, err, tt.busy, tt.total, tt.wantErr)
			}
		})
	}
}

func TestHistogramDeltaQuantile(t *testing.T) {
	buckets := []float64{0, 0.001, 0.01, 0.1, math.Inf(1)}
	h := func(c ...uint64) *metrics.Float64Histogram {
		return &metrics.Float64Histogram{Counts: c, Buckets: buckets}
	}
	tests := []struct {
		name      string
		prev, cur *metrics.Float64Histogram
		q, want   float64
	}{
		{"nothing new", h(5, 5, 5, 0), h(5, 5, 5, 0), 0.99, 0},
		{"only what was added counts (upper bound of its bucket)", h(100, 0, 0, 0), h(100, 99, 1, 0), 0.99, 0.01},
		{"the slow tail decides p99", h(0, 0, 0, 0), h(0, 98, 0, 2), 0.99, 0.1},
		{"no previous reading", nil, h(10, 0, 0, 0), 0.5, 0.001},
		{"nil current", h(1, 1, 1, 1), nil, 0.99, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := histogramDeltaQuantile(tt.prev, tt.cur, tt.q); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
	inf := &metrics.Float64Histogram{Counts: []uint64{0, 0, 0, 3}, Buckets: buckets}
	if got := histogramDeltaQuantile(nil, inf, 0.99); got != 0.1 {
		t.Fatalf("open bucket: got %v, want its lower bound 0.1", got)
	}
}

// The monitor emits one host event a second with this machine's cores,
// and stops when asked.
func TestHostMonitorEmitsSamples(t *testing.T) {
	var mu sync.Mutex
	var got []eventlog.Event
	two := make(chan struct{})
	stop := startHostMonitor(context.Background(), func(e eventlog.Event) {
		mu.Lock()
		defer mu.Unlock()
		if got = append(got, e); len(got) == 2 {
			close(two)
		}
	})
	select {
	case <-two:
	case <-time.After(30 * time.Second):
		mu.Lock()
		n := len(got)
		mu.Unlock()
		t.Fatalf("%d host events in 30 s", n)
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	for _, e := range got {
		if e.Kind != eventlog.KindHost || e.Host == nil || e.Host.Cores < 1 || e.Host.RSSMB <= 0 || e.Host.CPUBusy < 0 || e.Host.CPUBusy > 1 {
			t.Fatalf("bad host event %+v %+v", e, e.Host)
		}
	}
}
