package soak

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/valnet/valnet/internal/atomicfile"
	"github.com/valnet/valnet/internal/stats"
)

// Report is soak.json.
type Report struct {
	Scenario   string  `json:"scenario"`
	Backend    string  `json:"backend"`
	Seed       int64   `json:"seed"`
	DurationS  float64 `json:"duration_s"` // planned
	RanS       float64 `json:"ran_s"`      // from the soak's start to the run's end
	Validators int     `json:"validators"`
	// FaultsEndS: every fault has ended this long after the network
	// started; the rest of the run is fault-free.
	FaultsEndS float64               `json:"faults_end_s"`
	Faults     map[Family]FaultCount `json:"faults"`
	// Missing are the families this soak could not draw, and why.
	Missing map[Family]string `json:"missing_families,omitempty"`

	Heights int `json:"heights_committed"`
	// LongestStallS is the longest block interval, faults included, and
	// Halts the run summary's halts (stretches past the halt threshold).
	LongestStallS float64 `json:"longest_stall_s"`
	Halts         int     `json:"halts"`
	StopReason    string  `json:"stop_reason"`
	StoppedBy     string  `json:"stopped_by,omitempty"` // the violation that stopped the run early
	DoubleSigns   int     `json:"double_signs"`
	// Forks are heights at which two sources (a node's RPC, events.jsonl)
	// hold different blocks; HashesCompared how many (source, height)
	// hashes were compared with the first one of their height.
	Forks          []Fork `json:"forks"`
	HashesCompared int    `json:"hashes_compared"`
	Resume         Resume `json:"resume"`
	Heap           Slope  `json:"heap_mb"`
	// HeapTail and Goroutines.OwnTail: the same over the fault-free tail,
	// every node up and no fault coming or going.
	HeapTail   Slope `json:"heap_mb_tail"`
	Goroutines struct {
		Slope
		// BeforeRun and AfterRun leave out the process's singletons
		// (run.go singletons).
		BeforeRun int `json:"before_run"`
		AfterRun  int `json:"after_run"`
		// Upstream: of AfterRun, those CometBFT v1.0.1 leaves per stopped
		// node (soak/run.go upstreamLeak).
		Upstream int `json:"upstream_cometbft"`
		// Own: the goroutines without Upstream's, sampled.
		Own     Slope `json:"own"`
		OwnTail Slope `json:"own_tail"`
	} `json:"goroutines"`
	FDs struct {
		Before int      `json:"before"`
		After  int      `json:"after"`
		Leaked []string `json:"leaked,omitempty"`
	} `json:"fds"`
	Samples    []Sample `json:"samples"`
	Violations []string `json:"violations"`
	OK         bool     `json:"ok"`
	RunDir     string   `json:"run_dir"`
	Command    string   `json:"command"`
	Schedule   []Fault  `json:"schedule"`
}

// FaultCount is one family: scheduled, applied (a start event), and not
// applied (the runner said why).
type FaultCount struct {
	Scheduled  int      `json:"scheduled"`
	Injected   int      `json:"injected"`
	NotApplied []string `json:"not_applied,omitempty"`
}

// Resume is how the chain came back after faults: at each moment no
// fault was open any more, the time to the next committed block
// (MaxS the longest; Unmeasured: a new fault began first), and after the
// last fault the time until every node was past the height of that
// moment (Final, judged against its bound).
type Resume struct {
	Measured   int     `json:"measured"`
	Unmeasured int     `json:"unmeasured"`
	MaxS       float64 `json:"max_s"`
	Final      *Final  `json:"final"`
}

// stopMargin: samples this close to the run's end may see nodes stopping.
const stopMargin = 5 * time.Second

// Slope is a sampled quantity over the run after the warm-up: a least
// squares line's slope per hour, and its first and last sample.
type Slope struct {
	First     float64 `json:"first"`
	Last      float64 `json:"last"`
	PerHour   float64 `json:"per_hour"`
	Samples   int     `json:"samples"`
	FromS     float64 `json:"from_s"`
	ToS       float64 `json:"to_s"`
	Undefined bool    `json:"undefined,omitempty"` // fewer than two samples
}

func slopeOf(samples []Sample, from, to float64, v func(Sample) float64) Slope {
	var xs, ys []float64
	for _, s := range samples {
		if s.T >= from && s.T <= to {
			xs = append(xs, s.T/3600)
			ys = append(ys, v(s))
		}
	}
	out := Slope{Samples: len(xs), FromS: from, ToS: to}
	if len(ys) > 0 {
		out.First, out.Last = ys[0], ys[len(ys)-1]
	}
	sl, ok := stats.Slope(xs, ys)
	out.PerHour, out.Undefined = sl, !ok
	return out
}

func (p *Prepared) report(m *monitor, opts Options, runDir string) *Report {
	r := &Report{Scenario: p.Plan.Name, Backend: p.Plan.Run.Backend, Seed: p.Seed, DurationS: p.Duration.Seconds(),
		RanS: time.Since(m.t0).Seconds(), Validators: len(p.Plan.Validators), FaultsEndS: p.FaultsEnd.Seconds(),
		Faults: map[Family]FaultCount{}, Missing: p.Missing, DoubleSigns: len(m.doubleSigns), Forks: m.forks,
		HashesCompared: m.checks, Samples: m.samples, RunDir: runDir, Command: opts.Command, Schedule: p.Schedule}
	if r.Forks == nil {
		r.Forks = []Fork{}
	}
	for _, f := range p.Schedule {
		c := r.Faults[f.Action]
		c.Scheduled++
		r.Faults[f.Action] = c
	}
	for fam, n := range m.injected {
		c := r.Faults[fam]
		c.Injected = n
		r.Faults[fam] = c
	}
	for fam, why := range m.skipped {
		c := r.Faults[fam]
		c.NotApplied = why
		r.Faults[fam] = c
	}
	r.Resume = Resume{Measured: len(m.resumes), Unmeasured: m.unmeasured, Final: m.final}
	for _, d := range m.resumes {
		r.Resume.MaxS = max(r.Resume.MaxS, d.Seconds())
	}
	// From the first fault to before the nodes are stopped: the nodes'
	// start and stop are no trend.
	from, to := p.Warmup.Seconds(), (p.Duration - stopMargin).Seconds()
	r.Heap = slopeOf(m.samples, from, to, func(s Sample) float64 { return s.HeapMB })
	r.Goroutines.Slope = slopeOf(m.samples, from, to, func(s Sample) float64 { return float64(s.Goroutines) })
	own := func(s Sample) float64 { return float64(s.Goroutines - s.Upstream) }
	r.Goroutines.Own = slopeOf(m.samples, from, to, own)
	tail := (p.FaultsEnd + startSlack).Seconds()
	r.HeapTail = slopeOf(m.samples, tail, to, func(s Sample) float64 { return s.HeapMB })
	r.Goroutines.OwnTail = slopeOf(m.samples, tail, to, own)
	return r
}

// write writes soak.json and soak.txt.
func (r *Report) write(dir string) error {
	if err := atomicfile.WriteJSON(filepath.Join(dir, JSONFile), 0o644, r); err != nil {
		return err
	}
	return atomicfile.WriteWith(filepath.Join(dir, TextFile), 0o644, r.WriteText)
}

// Injected is the number of faults applied, all families.
func (r *Report) Injected() int {
	n := 0
	for _, c := range r.Faults {
		n += c.Injected
	}
	return n
}

// WriteText is the text summary: what ran, each invariant, and on a
// failure the seed and schedule that reproduce it.
func (r *Report) WriteText(w io.Writer) error {
	verdict := "PASS"
	if !r.OK {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "soak %s: %s, backend %s, seed %d: %s × %d validators × %d faults injected (ran %s)\n",
		verdict, r.Scenario, r.Backend, r.Seed, time.Duration(r.DurationS*float64(time.Second)), r.Validators, r.Injected(),
		(time.Duration(r.RanS) * time.Second).Round(time.Second))
	tw := tabwriter.NewWriter(w, 2, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  family\tscheduled\tinjected\tnot applied\n")
	for _, fam := range Families {
		c, ok := r.Faults[fam]
		if why, missing := r.Missing[fam]; missing {
			fmt.Fprintf(tw, "  %s\t-\t-\tnot drawn: %s\n", fam, why)
			continue
		}
		if !ok {
			c = FaultCount{}
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\n", fam, c.Scheduled, c.Injected, notApplied(c.NotApplied))
	}
	tw.Flush()
	fmt.Fprintf(w, "  heights committed: %d (stop: %s); longest block interval %.1fs, %d halts (summary.json: their causes)\n",
		r.Heights, r.StopReason, r.LongestStallS, r.Halts)
	fmt.Fprintf(w, "  double signs: %d\n", r.DoubleSigns)
	fmt.Fprintf(w, "  forks: %d (%d block hashes compared across nodes' RPC and events.jsonl)\n", len(r.Forks), r.HashesCompared)
	fmt.Fprintf(w, "  time to resume after faults: max %.1fs over %d quiet moments (%d not measured: a new fault came first)\n",
		r.Resume.MaxS, r.Resume.Measured, r.Resume.Unmeasured)
	if f := r.Resume.Final; f != nil {
		fmt.Fprintf(w, "  after the last fault (height %d): chain committed again in %s, every node past it in %s (bound %.0fs)\n",
			f.Height, secs(f.ChainResumedS), secs(f.AllNodesS), f.BoundS)
		if len(f.NodesBehind) > 0 {
			fmt.Fprintf(w, "    nodes behind: %s\n", strings.Join(f.NodesBehind, ", "))
		}
		if f.Unjudged != "" {
			fmt.Fprintf(w, "    not judged: %s\n", f.Unjudged)
		}
	} else {
		fmt.Fprintf(w, "  after the last fault: not reached (the run ended before every fault had ended)\n")
	}
	fmt.Fprintf(w, "  heap (live, MB): %s\n", r.Heap.text("%.1f"))
	fmt.Fprintf(w, "    fault-free tail: %s\n", r.HeapTail.text("%.1f"))
	fmt.Fprintf(w, "  goroutines: %s; %d before the run, %d after it", r.Goroutines.text("%.0f"), r.Goroutines.BeforeRun, r.Goroutines.AfterRun)
	if r.Goroutines.Upstream > 0 {
		fmt.Fprintf(w, " (%d of them CometBFT v1.0.1's own: a stopped node's WAL autofile routines)", r.Goroutines.Upstream)
	}
	fmt.Fprintf(w, "\n  goroutines without CometBFT's autofile leak: %s\n", r.Goroutines.Own.text("%.0f"))
	fmt.Fprintf(w, "    fault-free tail: %s\n", r.Goroutines.OwnTail.text("%.0f"))
	fmt.Fprintf(w, "  file descriptors: %d before, %d after", r.FDs.Before, r.FDs.After)
	if len(r.FDs.Leaked) > 0 {
		fmt.Fprintf(w, "; leaked: %s", strings.Join(r.FDs.Leaked, ", "))
	}
	fmt.Fprintf(w, "\n  run directory: %s\n", r.RunDir)
	if len(r.Violations) > 0 {
		fmt.Fprintf(w, "\nINVARIANTS VIOLATED:\n")
		for _, v := range r.Violations {
			fmt.Fprintf(w, "  - %s\n", v)
		}
		fmt.Fprintf(w, "\nReproduce with seed %d: %s\nThe fault schedule (paste into a scenario):\n%s", r.Seed, r.Command, ScheduleYAML(r.Schedule))
	}
	return nil
}

func (s Slope) text(format string) string {
	if s.Undefined {
		return fmt.Sprintf("slope undefined (%d samples)", s.Samples)
	}
	return fmt.Sprintf("slope %+"+format[1:]+"/h (least squares over %d samples, %.0fs to %.0fs; first "+format+", last "+format+")",
		s.PerHour, s.Samples, s.FromS, s.ToS, s.First, s.Last)
}

func secs(s *float64) string {
	if s == nil {
		return "never"
	}
	return fmt.Sprintf("%.1fs", *s)
}

func notApplied(why []string) string {
	if len(why) == 0 {
		return "0"
	}
	u := slices.Compact(slices.Sorted(slices.Values(why)))
	return fmt.Sprintf("%d (%s)", len(why), strings.Join(u, "; "))
}
