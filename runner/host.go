package runner

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valnet/valnet/results"
	"github.com/valnet/valnet/results/eventlog"
)

// The host monitor measures the machine a run runs on, once a second:
// whole-machine CPU busy against its cores (/proc/stat, so nodes in other
// processes or containers count), how long the runner's goroutines wait
// to be scheduled (Go's /sched/latencies histogram, and the lateness of a
// 10 ms ticker), and the runner's resident memory. Every node of a run
// shares this machine: when it is saturated, late votes are the host's
// doing, not the network's or the signer's.

const (
	hostEvery = time.Second
	lagTick   = 10 * time.Millisecond
)

const schedLatencies = "/sched/latencies:seconds"

// hostReading is what the monitor reads at one instant; a sample is the
// difference of two readings.
type hostReading struct {
	cpuBusy, cpuTotal uint64 // jiffies since boot, all CPUs (0: unknown)
	sched             *metrics.Float64Histogram
	rssKB             int64
}

// startHostMonitor emits a host event every second until the returned stop
// is called (or ctx ends); stop waits for the monitor to finish.
func startHostMonitor(ctx context.Context, emit func(eventlog.Event)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var worstLag atomic.Int64 // ns, reset by every sample
	var lastTick atomic.Int64 // unix ns when the lag ticker last ran
	lastTick.Store(time.Now().UnixNano())
	wg.Add(2)
	go func() {
		defer wg.Done()
		t := time.NewTicker(lagTick)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				// The time it ran, not the tick's: a tick ready on time
				// whose goroutine waits to be scheduled is late too.
				now := time.Now().UnixNano()
				if lag := now - lastTick.Swap(now) - int64(lagTick); lag > worstLag.Load() {
					worstLag.Store(lag)
				}
			}
		}
	}()
	go func() {
		defer wg.Done()
		cores := runtime.NumCPU()
		prev, prevAt := readHost(), time.Now()
		t := time.NewTicker(hostEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				now := time.Now()
				if now.Sub(prevAt) < hostEvery/2 {
					// The tick queued while this goroutine was late: the
					// next sample covers the whole stretch (a sample of a
					// few ms would read 0 % CPU).
					continue
				}
				cur := readHost()
				s := hostSample(prev, cur, cores, sampleTickLag(time.Duration(worstLag.Swap(0)), now.Sub(time.Unix(0, lastTick.Load()))))
				prev, prevAt = cur, now
				emit(eventlog.Event{Time: now, Kind: eventlog.KindHost, Host: &s})
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// sampleTickLag is a second's ticker lateness: the worst gap the ticker
// saw, or, when it has not run for longer, the gap still open. A ticker
// starved through the whole second records its gap only when it runs
// again; counting the open gap puts a stall in every second it spans.
func sampleTickLag(worst, sinceLastTick time.Duration) time.Duration {
	return max(worst, sinceLastTick-lagTick)
}

func readHost() hostReading {
	r := hostReading{sched: readSchedLatencies(), rssKB: selfRSSKB()}
	if data, err := os.ReadFile("/proc/stat"); err == nil {
		r.cpuBusy, r.cpuTotal, _ = parseProcStatCPU(data)
	}
	return r
}

// hostSample is the second between two readings.
func hostSample(prev, cur hostReading, cores int, tickLag time.Duration) eventlog.HostSample {
	s := eventlog.HostSample{Cores: cores, TickLagMS: ms(max(tickLag, 0)), RSSMB: math.Round(float64(cur.rssKB)/1024*10) / 10}
	if dt := cur.cpuTotal - prev.cpuTotal; cur.cpuTotal > prev.cpuTotal && dt > 0 {
		s.CPUBusy = math.Round(float64(cur.cpuBusy-prev.cpuBusy)/float64(dt)*1000) / 1000
	}
	s.SchedLagP99MS = math.Round(histogramDeltaQuantile(prev.sched, cur.sched, 0.99)*1e6) / 1e3
	s.Overloaded = results.Saturated(s)
	return s
}

// parseProcStatCPU reads the aggregate "cpu" line of /proc/stat: busy and
// total jiffies. Idle and iowait are not busy; guest time is already in
// user and nice.
func parseProcStatCPU(data []byte) (busy, total uint64, err error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || fields[0] != "cpu" {
			continue
		}
		var idle uint64
		for i, f := range fields[1:] {
			if i >= 8 { // guest, guest_nice: counted in user, nice
				break
			}
			v, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("/proc/stat: %q: %w", f, err)
			}
			total += v
			if i == 3 || i == 4 { // idle, iowait
				idle += v
			}
		}
		return total - idle, total, nil
	}
	return 0, 0, fmt.Errorf("/proc/stat: no cpu line")
}

func readSchedLatencies() *metrics.Float64Histogram {
	sample := []metrics.Sample{{Name: schedLatencies}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	h := sample[0].Value.Float64Histogram()
	return &metrics.Float64Histogram{Counts: append([]uint64(nil), h.Counts...), Buckets: h.Buckets}
}

// histogramDeltaQuantile is the q-quantile (in seconds, the upper bound of
// its bucket) of what was added to a cumulative histogram between prev
// and cur; 0 when nothing was.
func histogramDeltaQuantile(prev, cur *metrics.Float64Histogram, q float64) float64 {
	if cur == nil {
		return 0
	}
	var n uint64
	delta := make([]uint64, len(cur.Counts))
	for i, c := range cur.Counts {
		if prev != nil && i < len(prev.Counts) {
			c -= min(c, prev.Counts[i])
		}
		delta[i] = c
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	var seen uint64
	for i, c := range delta {
		seen += c
		if seen >= rank {
			upper := cur.Buckets[i+1]
			if math.IsInf(upper, 1) {
				upper = cur.Buckets[i]
			}
			return upper
		}
	}
	return 0
}

// selfRSSKB is this process's resident set (VmRSS), 0 when unknown.
func selfRSSKB() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb
			}
		}
	}
	return 0
}
