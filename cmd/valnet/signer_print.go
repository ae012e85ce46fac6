package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/internal/stats"
	"github.com/valnet/valnet/signers"
)

// signPrinter prints one line per signature of `valnet signer serve` and,
// at the end, a latency summary per phase. Lines are printed from a queue:
// a write to a slow or blocked stdout must not hold up the node, which
// waits for each signature.
type signPrinter struct {
	out     io.Writer
	records chan signers.SignRecord
	closed  chan struct{} // by close: print what is queued, then the summary
	drained chan struct{}
	stats   map[string]*phaseStats // drain's own until drained
}

var _ signers.Observer = (*signPrinter)(nil)

type phaseStats struct {
	ok     []time.Duration
	errors int
}

func newSignPrinter(out io.Writer) *signPrinter {
	p := &signPrinter{out: out, records: make(chan signers.SignRecord, 4096),
		closed: make(chan struct{}), drained: make(chan struct{}), stats: map[string]*phaseStats{}}
	go p.drain()
	return p
}

// SignDone queues one finished signature. A full queue makes the signer
// wait rather than lose a line; after close the record is dropped.
func (p *signPrinter) SignDone(r signers.SignRecord) {
	select {
	case <-p.closed:
	case p.records <- r:
	}
}

// close prints what is queued and the summary of a signer that ran for ran.
func (p *signPrinter) close(ran time.Duration) {
	close(p.closed)
	<-p.drained
	p.writeSummary(ran)
}

func (p *signPrinter) drain() {
	defer close(p.drained)
	for {
		select {
		case r := <-p.records:
			p.print(r)
		case <-p.closed:
			for {
				select {
				case r := <-p.records:
					p.print(r)
				default:
					return
				}
			}
		}
	}
}

// print writes one signature's line and counts it for the summary.
func (p *signPrinter) print(r signers.SignRecord) {
	st := p.stats[r.Phase]
	if st == nil {
		st = &phaseStats{}
		p.stats[r.Phase] = st
	}
	if r.Err != nil {
		st.errors++
		fmt.Fprintf(p.out, "%s h=%d r=%d ERROR %v\n", r.Phase, r.Height, r.Round, r.Err)
		return
	}
	st.ok = append(st.ok, r.Latency)
	fmt.Fprintf(p.out, "%s h=%d r=%d %s\n", r.Phase, r.Height, r.Round, fmtMS(r.Latency))
}

func fmtMS(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + "ms"
}

// writeSummary prints count, errors, p50, p99 and max of each phase: the
// percentiles of valnet's run results (stats.Percentile) over the
// signatures made (refused ones have no signing time).
func (p *signPrinter) writeSummary(ran time.Duration) {
	total, errs := 0, 0
	for _, st := range p.stats {
		total += len(st.ok) + st.errors
		errs += st.errors
	}
	fmt.Fprintf(p.out, "summary: %d signature requests, %d refused, in %s\n", total, errs, ran.Round(time.Millisecond))
	fmt.Fprintf(p.out, "%-10s %6s %6s %10s %10s %10s\n", "phase", "count", "errors", "p50", "p99", "max")
	phases := phase.All()
	for ph := range p.stats {
		if !slices.Contains(phases, ph) {
			phases = append(phases, ph)
		}
	}
	for _, ph := range phases {
		st := p.stats[ph]
		if st == nil {
			st = &phaseStats{}
		}
		p50, p99, top := "-", "-", "-"
		if n := len(st.ok); n > 0 {
			sorted := slices.Clone(st.ok)
			slices.Sort(sorted)
			p50, p99, top = fmtMS(stats.Percentile(sorted, 50)), fmtMS(stats.Percentile(sorted, 99)), fmtMS(sorted[n-1])
		}
		fmt.Fprintf(p.out, "%-10s %6d %6d %10s %10s %10s\n", ph, len(st.ok), st.errors, p50, p99, top)
	}
}
