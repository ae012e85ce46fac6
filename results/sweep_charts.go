package results

import (
	"fmt"
	"html/template"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Charts of valnet sweep (sweep.html), drawn with the report's plot
// helpers above: the sweep package computes the numbers, these draw them.

// Chart is one rendered chart: inline SVG, or a note saying why there is
// none (a chart never fails the page that holds it).
type Chart struct {
	SVG  template.HTML
	Note string
}

func exported(c chart) Chart { return Chart{SVG: c.SVG, Note: c.Note} }

// SweepSeries is one line of a sweep line chart: at each X the mean of a
// metric over a point's runs and its min and max (the band). NaN marks an
// X with no value; the line breaks there.
type SweepSeries struct {
	Name           string
	X              []float64
	Mean, Min, Max []float64
}

// SweepLineChart draws metric against a varied key: one line per series
// with a shaded min–max band. xLabels, when given, name the X positions
// 0, 1, ... (values that are not numbers); else X is numeric.
func SweepLineChart(title, xLabel, yLabel string, xLabels []string, series []SweepSeries) Chart {
	return exported(guardChart(func() chart {
		p := newPlot(title)
		p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
		p.Add(newGrid())
		l := newLegend()
		any := false
		yMin, yMax := math.Inf(1), math.Inf(-1)
		for i, s := range series {
			col := palette[i%len(palette)]
			for _, seg := range segments(s) {
				if len(seg) > 1 {
					band := make(plotter.XYs, 0, 2*len(seg))
					for _, k := range seg {
						band = append(band, plotter.XY{X: s.X[k], Y: s.Max[k]})
					}
					for j := len(seg) - 1; j >= 0; j-- {
						band = append(band, plotter.XY{X: s.X[seg[j]], Y: s.Min[seg[j]]})
					}
					poly, err := plotter.NewPolygon(band)
					if err != nil {
						return chartFailed(err)
					}
					fill := col
					fill.A = 0x30
					poly.Color, poly.LineStyle.Width = fill, 0
					p.Add(poly)
				}
				pts := make(plotter.XYs, len(seg))
				for j, k := range seg {
					pts[j] = plotter.XY{X: s.X[k], Y: s.Mean[k]}
					yMin, yMax = math.Min(yMin, s.Min[k]), math.Max(yMax, s.Max[k])
				}
				line, sc, err := plotter.NewLinePoints(pts)
				if err != nil {
					return chartFailed(err)
				}
				line.LineStyle = draw.LineStyle{Color: col, Width: 1.2}
				sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: 2, Shape: draw.CircleGlyph{}}
				p.Add(line, sc)
				any = true
			}
			if s.Name != "" {
				l.add(s.Name, lineThumb{draw.LineStyle{Color: col, Width: 1.2}})
			}
		}
		if !any {
			return chart{Note: "no finished run has a value of this metric"}
		}
		if xLabels != nil {
			var ticks plot.ConstantTicks
			for i, lab := range xLabels {
				ticks = append(ticks, plot.Tick{Value: float64(i), Label: truncate(lab, 16)})
			}
			p.X.Tick.Marker = ticks
			p.X.Min, p.X.Max = -0.3, float64(len(xLabels))-0.7
		}
		pad := math.Max((yMax-yMin)*0.08, 0.5)
		p.Y.Min, p.Y.Max = math.Min(0, yMin), yMax+pad
		return renderChart(chartWidth*0.8, 2.8*vg.Inch, title, func(dc draw.Canvas) {
			p.Draw(l.split(dc))
		})
	}))
}

// segments splits a series' indexes at NaN means.
func segments(s SweepSeries) [][]int {
	var out [][]int
	var cur []int
	for k := range s.X {
		if math.IsNaN(s.Mean[k]) {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, k)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// SweepHeatmap draws a metric over two varied keys: cells[y][x] is the
// mean at xLabels[x], yLabels[y] (NaN: no value), each cell labelled with
// its value and shaded from light (the smallest) to dark (the largest).
func SweepHeatmap(title, xLabel, yLabel string, xLabels, yLabels []string, cells [][]float64) Chart {
	return exported(guardChart(func() chart {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, row := range cells {
			for _, v := range row {
				if !math.IsNaN(v) {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
		if math.IsInf(lo, 1) {
			return chart{Note: "no finished run has a value of this metric"}
		}
		p := newPlot(title)
		p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
		p.Add(valueGrid{cells: cells, lo: lo, hi: hi})
		var xt, yt plot.ConstantTicks
		for i, lab := range xLabels {
			xt = append(xt, plot.Tick{Value: float64(i), Label: truncate(lab, 16)})
		}
		for i, lab := range yLabels {
			yt = append(yt, plot.Tick{Value: float64(i), Label: truncate(lab, 16)})
		}
		p.X.Tick.Marker, p.Y.Tick.Marker = xt, yt
		p.X.Min, p.X.Max = -0.5, float64(len(xLabels))-0.5
		p.Y.Min, p.Y.Max = -0.5, float64(len(yLabels))-0.5
		h := vg.Length(math.Min(40, math.Max(18, 300/float64(len(yLabels)))))*vg.Length(len(yLabels)) + 80
		return renderChart(chartWidth*0.8, h, title, func(dc draw.Canvas) { p.Draw(dc) })
	}))
}

// valueGrid fills one cell per value, shaded between lo and hi.
type valueGrid struct {
	cells  [][]float64
	lo, hi float64
}

var (
	heatLow  = color.NRGBA{R: 0xf7, G: 0xfb, B: 0xff, A: 0xff}
	heatHigh = color.NRGBA{R: 0x08, G: 0x30, B: 0x6b, A: 0xff}
)

func (g valueGrid) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	style := draw.TextStyle{Font: font.From(chartFont, 9), XAlign: draw.XCenter, YAlign: draw.YCenter, Handler: plot.DefaultTextHandler}
	for y, row := range g.cells {
		for x, v := range row {
			x0, x1 := trX(float64(x)-0.48), trX(float64(x)+0.48)
			y0, y1 := trY(float64(y)-0.48), trY(float64(y)+0.48)
			col, label := color.Color(colUnknown), "–"
			f := 0.0
			if !math.IsNaN(v) {
				if g.hi > g.lo {
					f = (v - g.lo) / (g.hi - g.lo)
				}
				col, label = mix(heatLow, heatHigh, f), fmt.Sprintf("%.4g", v)
			}
			c.FillPolygon(col, rectPoints(x0, y0, x1, y1))
			style.Color = color.Black
			if f > 0.55 {
				style.Color = color.White
			}
			c.FillText(style, vg.Point{X: (x0 + x1) / 2, Y: (y0 + y1) / 2}, label)
		}
	}
}

// mix is the colour a fraction f of the way from a to b.
func mix(a, b color.NRGBA, f float64) color.NRGBA {
	at := func(x, y uint8) uint8 { return uint8(math.Round(float64(x) + f*(float64(y)-float64(x)))) }
	return color.NRGBA{R: at(a.R, b.R), G: at(a.G, b.G), B: at(a.B, b.B), A: 0xff}
}
