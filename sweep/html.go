package sweep

import (
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/valnet/valnet/results"
)

// WriteHTML writes sweep.html: the points table and, per shown metric, a
// chart against the first key (one line per combination of the others,
// with min–max bands) and, with exactly two keys, a heat map of both.
func (s *Sweep) WriteHTML(w io.Writer, o *Outcome) error {
	page := htmlPage{Title: "Sweep of " + s.Identity.Scenario, Backend: s.Identity.Backend, Complete: o.Complete(),
		Points: len(o.Points), Repeat: s.Repeat, Seeds: s.seedNote(), Labels: s.Labels}
	for i, a := range s.Axes {
		page.Keys = append(page.Keys, htmlKey{Label: s.Labels[i], Path: a.Path})
	}
	for _, m := range s.Metrics {
		page.Metrics = append(page.Metrics, m.String())
	}
	for _, p := range o.Points {
		st := pointStats(p.Runs)
		row := htmlRow{Runs: strconv.Itoa(finished(p.Runs)) + "/" + strconv.Itoa(len(p.Runs))}
		for _, set := range p.Set {
			row.Values = append(row.Values, set.Value)
		}
		for _, m := range s.Metrics {
			row.Cells = append(row.Cells, formatSpread(st, m.String()))
		}
		page.Rows = append(page.Rows, row)
	}
	for _, m := range s.Metrics {
		sec := htmlMetric{Name: m.String(), Line: s.lineChart(o, m.String())}
		if len(s.Axes) == 2 {
			hm := s.heatmap(o, m.String())
			sec.Heatmap = &hm
		}
		page.Charts = append(page.Charts, sec)
	}
	return sweepTemplate.Execute(w, page)
}

type htmlPage struct {
	Title, Backend, Seeds string
	Complete              bool
	Points, Repeat        int
	Keys                  []htmlKey
	Labels                []string
	Metrics               []string
	Rows                  []htmlRow
	Charts                []htmlMetric
}

type htmlKey struct{ Label, Path string }

type htmlRow struct {
	Values []string
	Runs   string
	Cells  []string
}

type htmlMetric struct {
	Name    string
	Line    results.Chart
	Heatmap *results.Chart
}

// xAxis places an axis' values on a line: durations in ms, numbers as
// they are; anything else at positions 0, 1, ... with its text as labels.
func xAxis(label string, values []string) (xs []float64, title string, labels []string) {
	xs = make([]float64, len(values))
	if ok := parseAll(values, xs, func(v string) (float64, bool) {
		if v == "0" {
			return 0, true
		}
		d, err := time.ParseDuration(v)
		return float64(d) / float64(time.Millisecond), err == nil
	}); ok {
		return xs, label + " (ms)", nil
	}
	if ok := parseAll(values, xs, func(v string) (float64, bool) {
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	}); ok {
		return xs, label, nil
	}
	for i := range xs {
		xs[i] = float64(i)
	}
	return xs, label, values
}

func parseAll(values []string, xs []float64, parse func(string) (float64, bool)) bool {
	for i, v := range values {
		x, ok := parse(v)
		if !ok {
			return false
		}
		xs[i] = x
	}
	return true
}

// lineChart: metric against the first key, one series per combination of
// the other keys' values (points are in cross-product order, the first
// key varying slowest).
func (s *Sweep) lineChart(o *Outcome, metric string) results.Chart {
	series, xTitle, xLabels := s.lineSeries(o, metric)
	return results.SweepLineChart(metric+" against "+s.Labels[0], xTitle, metric, xLabels, series)
}

// lineSeries are lineChart's series, each in x order.
func (s *Sweep) lineSeries(o *Outcome, metric string) (series []results.SweepSeries, xTitle string, xLabels []string) {
	first := s.Axes[0]
	xs, xTitle, xLabels := xAxis(s.Labels[0], first.Values)
	n := len(first.Values)
	// A line joins its points in x order: values given unsorted (1s,
	// 100ms, 500ms) would draw a zig-zag. Values placed by position keep
	// their order.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	if xLabels == nil {
		sort.SliceStable(order, func(a, b int) bool { return xs[order[a]] < xs[order[b]] })
	}
	sortedX := make([]float64, n)
	for at, i := range order {
		sortedX[at] = xs[i]
	}
	rest := len(o.Points) / n // combinations of the other keys
	series = make([]results.SweepSeries, rest)
	for j := range series {
		sr := results.SweepSeries{X: sortedX, Mean: nans(n), Min: nans(n), Max: nans(n)}
		var name []string
		for at, i := range order {
			p := o.Points[i*rest+j]
			if at == 0 {
				for k := 1; k < len(p.Set); k++ {
					name = append(name, s.Labels[k]+"="+p.Set[k].Value)
				}
			}
			st := pointStats(p.Runs)
			if st.n[metric] > 0 {
				sr.Mean[at], sr.Min[at], sr.Max[at] = st.mean[metric], st.min[metric], st.max[metric]
			}
		}
		sr.Name = strings.Join(name, ", ")
		series[j] = sr
	}
	return series, xTitle, xLabels
}

// heatmap: metric over the two keys (first across, second up).
func (s *Sweep) heatmap(o *Outcome, metric string) results.Chart {
	nx, ny := len(s.Axes[0].Values), len(s.Axes[1].Values)
	cells := make([][]float64, ny)
	for y := range cells {
		cells[y] = nans(nx)
		for x := 0; x < nx; x++ {
			st := pointStats(o.Points[x*ny+y].Runs)
			if st.n[metric] > 0 {
				cells[y][x] = st.mean[metric]
			}
		}
	}
	return results.SweepHeatmap(metric+" (mean) by "+s.Labels[0]+" and "+s.Labels[1], s.Labels[0], s.Labels[1], s.Axes[0].Values, s.Axes[1].Values, cells)
}

func nans(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}

var sweepTemplate = template.Must(template.New("sweep").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body{font-family:sans-serif;margin:1.5em auto;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:14px}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}
td.key{text-align:left;font-family:monospace}
.note{color:#666;font-style:italic}
svg.chart{max-width:100%;height:auto;display:block;margin:0.5em 0 1.5em}
.warn{color:#a40}
.wide{overflow-x:auto}
</style></head><body>
<h1>{{.Title}}</h1>
<p>Backend {{.Backend}}; {{.Points}} points × {{.Repeat}} repeats; {{.Seeds}}.
{{if .Complete}}Every run finished.{{else}}<strong class="warn">Incomplete</strong>: rerun the same command to do the rest.{{end}}</p>
<p>Keys: {{range $i, $k := .Keys}}{{if $i}}, {{end}}<b>{{$k.Label}}</b> = <code>{{$k.Path}}</code>{{end}}.
Values are the mean over a point's finished runs, with [min–max] when they differ; – means no value.
The scenario's expectations are in sweep.md and do not set the exit code.</p>
<div class="wide"><table><tr>{{range .Labels}}<th>{{.}}</th>{{end}}<th>runs</th>{{range .Metrics}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .Values}}<td class="key">{{.}}</td>{{end}}<td>{{.Runs}}</td>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table></div>
{{range .Charts}}<h2>{{.Name}}</h2>
{{if .Line.SVG}}{{.Line.SVG}}{{else}}<p class="note">{{.Line.Note}}</p>{{end}}
{{with .Heatmap}}{{if .SVG}}{{.SVG}}{{else}}<p class="note">{{.Note}}</p>{{end}}{{end}}
{{end}}</body></html>
`))
