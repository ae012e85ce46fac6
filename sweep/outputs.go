package sweep

import (
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/valnet/valnet/internal/atomicfile"
)

// fileJSON is sweep.json (the contract is in docs/sweep.md): the sweep's
// identity, then per point its settings, its runs with every metric, and
// the mean, min and max of each metric over the point's finished runs.
type fileJSON struct {
	Identity
	Repeat   int         `json:"repeat"`
	Complete bool        `json:"complete"`
	Plotted  []string    `json:"plotted_metrics"`
	Points   []pointJSON `json:"points"`
}

type pointJSON struct {
	Set  map[string]string `json:"set"`
	Dir  string            `json:"dir"`
	Runs []RunRecord       `json:"runs"`
	// Finished counts the runs that ran to their end; mean, min and max
	// are over them. ExpectationsHeld counts those whose every expect: held.
	Finished         int                `json:"finished"`
	ExpectationsHeld int                `json:"expectations_held"`
	Mean             map[string]float64 `json:"mean"`
	Min              map[string]float64 `json:"min"`
	Max              map[string]float64 `json:"max"`
}

// stats is the spread of each metric over a point's finished runs.
type stats struct {
	mean, min, max map[string]float64
	n              map[string]int // runs that have the metric
}

func pointStats(runs []RunRecord) stats {
	st := stats{mean: map[string]float64{}, min: map[string]float64{}, max: map[string]float64{}, n: map[string]int{}}
	for _, r := range runs {
		if !r.Finished() {
			continue
		}
		for k, v := range r.Metrics {
			if st.n[k] == 0 {
				st.min[k], st.max[k] = v, v
			}
			st.min[k], st.max[k] = math.Min(st.min[k], v), math.Max(st.max[k], v)
			st.mean[k] += v
			st.n[k]++
		}
	}
	for k := range st.mean {
		st.mean[k] /= float64(st.n[k])
	}
	return st
}

// MetricMeans is the mean of each metric over the finished runs that
// have it (what sweep.json's mean is per point).
func MetricMeans(runs []RunRecord) map[string]float64 { return pointStats(runs).mean }

// attempted is the runs that ran or failed (not those still to do).
func attempted(runs []RunRecord) []RunRecord {
	return slices.DeleteFunc(slices.Clone(runs), func(r RunRecord) bool { return r.StopReason == "" && r.Error == "" })
}

func (s *Sweep) fileJSON(o *Outcome) fileJSON {
	f := fileJSON{Identity: s.Identity, Repeat: s.Repeat, Complete: o.Complete(), Points: []pointJSON{}}
	for _, m := range s.Metrics {
		f.Plotted = append(f.Plotted, m.String())
	}
	for _, p := range o.Points {
		st := pointStats(p.Runs)
		pj := pointJSON{Set: map[string]string{}, Dir: p.Name, Runs: attempted(p.Runs), Finished: finished(p.Runs),
			Mean: st.mean, Min: st.min, Max: st.max}
		for _, set := range p.Set {
			pj.Set[set.Path] = set.Value
		}
		for _, r := range p.Runs {
			if r.Finished() && r.ExpectationsOK {
				pj.ExpectationsHeld++
			}
		}
		f.Points = append(f.Points, pj)
	}
	return f
}

func (s *Sweep) writeJSON(o *Outcome) error {
	return atomicfile.WriteJSON(filepath.Join(s.OutDir, JSONFile), 0o644, s.fileJSON(o))
}

// WriteFiles writes sweep.json, sweep.csv, sweep.md and sweep.html for
// what the outcome holds (finished or not).
func (s *Sweep) WriteFiles(o *Outcome) error {
	if err := s.writeJSON(o); err != nil {
		return err
	}
	for _, f := range []struct {
		name  string
		write func(io.Writer, *Outcome) error
	}{
		{CSVFile, s.WriteCSV}, {MarkdownFile, s.WriteMarkdown}, {HTMLFile, s.WriteHTML},
	} {
		err := atomicfile.WriteWith(filepath.Join(s.OutDir, f.name), 0o644, func(w io.Writer) error { return f.write(w, o) })
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return nil
}

// WriteCSV writes one row per run done: the point's values, the repeat,
// seed, directory, stop reason, whether its expectations held, why it
// failed, then every metric any run has (sorted; empty where a run has
// no value).
func (s *Sweep) WriteCSV(w io.Writer, o *Outcome) error {
	names := map[string]bool{}
	for _, p := range o.Points {
		for _, r := range p.Runs {
			for k := range r.Metrics {
				names[k] = true
			}
		}
	}
	metricCols := slices.Sorted(maps.Keys(names))
	cw := csv.NewWriter(w)
	header := append(s.Keys(), "repeat", "seed", "dir", "stop_reason", "expectations_ok", "error")
	if err := cw.Write(append(header, metricCols...)); err != nil {
		return err
	}
	for _, p := range o.Points {
		for _, r := range attempted(p.Runs) {
			row := make([]string, 0, len(header)+len(metricCols))
			for _, set := range p.Set {
				row = append(row, set.Value)
			}
			row = append(row, strconv.Itoa(r.Repeat), strconv.FormatInt(r.Seed, 10), r.Dir, r.StopReason,
				strconv.FormatBool(r.Finished() && r.ExpectationsOK), r.Error)
			for _, m := range metricCols {
				if v, ok := r.Metrics[m]; ok {
					row = append(row, strconv.FormatFloat(v, 'g', -1, 64))
				} else {
					row = append(row, "")
				}
			}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteMarkdown writes sweep.md: one row per point with the shown
// metrics as mean and [min–max] over its finished runs.
func (s *Sweep) WriteMarkdown(w io.Writer, o *Outcome) error {
	var b strings.Builder
	total, done := 0, 0
	for _, p := range o.Points {
		total += len(p.Runs)
		done += finished(p.Runs)
	}
	fmt.Fprintf(&b, "# Sweep of %s\n\n", s.Identity.Scenario)
	fmt.Fprintf(&b, "Backend %s; %d points × %d repeats; %s.\n", s.Identity.Backend, len(o.Points), s.Repeat, s.seedNote())
	if o.Complete() {
		fmt.Fprintf(&b, "All %d runs finished.\n", total)
	} else {
		fmt.Fprintf(&b, "**Incomplete: %d of %d runs finished**; rerun the same command to do the rest.\n", done, total)
	}
	b.WriteString("\nEach value is the mean over the point's finished runs, with [min–max] when they differ; – means no finished run has a value (no run, or no samples).\n")
	b.WriteString("Expectations (the scenario's `expect:`) are reported per point and do not set the exit code: a sweep explores where they hold.\n\n")

	header := append(slices.Clone(s.Labels), "runs", "expectations held")
	for _, m := range s.Metrics {
		header = append(header, m.String())
	}
	b.WriteString("| " + strings.Join(header, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat(" --- |", len(header)) + "\n")
	for _, p := range o.Points {
		st := pointStats(p.Runs)
		row := make([]string, 0, len(header))
		for _, set := range p.Set {
			row = append(row, "`"+set.Value+"`")
		}
		held := 0
		for _, r := range p.Runs {
			if r.Finished() && r.ExpectationsOK {
				held++
			}
		}
		n := finished(p.Runs)
		row = append(row, fmt.Sprintf("%d/%d", n, len(p.Runs)), fmt.Sprintf("%d/%d", held, n))
		for _, m := range s.Metrics {
			row = append(row, formatSpread(st, m.String()))
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	b.WriteString("\nKeys:\n\n")
	for i, a := range s.Axes {
		fmt.Fprintf(&b, "- %s: `%s`\n", s.Labels[i], a.Path)
	}
	var absent []string
	for _, m := range s.Metrics {
		if pts := s.Absent[m.String()]; len(pts) > 0 {
			absent = append(absent, fmt.Sprintf("- %s is not a metric of the scenario at %s", m, strings.Join(pts, "; ")))
		}
	}
	if len(absent) > 0 {
		b.WriteString("\nMetrics some points do not have (their cells there are –):\n\n" + strings.Join(absent, "\n") + "\n")
	}
	if len(o.Failed) > 0 {
		b.WriteString("\nRuns that could not be done:\n\n")
		for _, err := range o.Failed {
			fmt.Fprintf(&b, "- %s\n", err)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// seedNote says which seeds the repeats ran with.
func (s *Sweep) seedNote() string {
	base := "the scenario's run.seed"
	if s.Config.Seed != nil {
		base = strconv.FormatInt(*s.Config.Seed, 10)
	}
	if s.Repeat == 1 {
		return "seed " + base + " at every point"
	}
	return fmt.Sprintf("repeat r runs with seed S + r − 1 at every point (S = %s)", base)
}

// formatSpread is "mean [min–max]", "mean" when they agree, "–" for none.
func formatSpread(st stats, key string) string {
	if st.n[key] == 0 {
		return "–"
	}
	mean := formatValue(st.mean[key])
	if st.min[key] == st.max[key] {
		return mean
	}
	return fmt.Sprintf("%s [%s–%s]", mean, formatValue(st.min[key]), formatValue(st.max[key]))
}

// formatValue shows 4 significant digits, whole numbers from 1000 up.
func formatValue(v float64) string {
	if math.Abs(v) >= 1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
