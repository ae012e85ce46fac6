package results

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"image/color"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Charts of the HTML report. Every chart is drawn by gonum.org/v1/plot on
// its SVG canvas (vgsvg) and embedded inline in the page; the custom
// plotters below only place rectangles and text through plot's canvas.

const (
	chartWidth = 11 * vg.Inch // 792pt, ~1056 CSS px at natural size

	// cdfPointBudget caps the points of all CDF lines of the latency chart
	// together (each line gets at least cdfMinPoints, at most
	// cdfMaxPoints), which keeps a 25-validator report small.
	cdfPointBudget = 9000
	cdfMinPoints   = 24
	cdfMaxPoints   = 200

	// intervalMaxPoints caps the block-interval line; longer runs are
	// reduced to the min and max of each bucket so spikes survive.
	intervalMaxPoints = 3000
)

// Text sizes, in points of the SVG's own units.
var (
	chartFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

	colPresent = color.NRGBA{R: 0xc7, G: 0xe6, B: 0xc1, A: 0xff}
	colAbsent  = color.NRGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colNil     = color.NRGBA{R: 0xff, G: 0x9f, B: 0x1c, A: 0xff}
	colUnknown = color.NRGBA{R: 0xdd, G: 0xdd, B: 0xdd, A: 0xff}
	colRound   = color.NRGBA{R: 0xe6, G: 0x7e, B: 0x22, A: 0xff}
	colLine    = color.NRGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colGray    = color.NRGBA{R: 0x70, G: 0x70, B: 0x70, A: 0xff}

	// palette: Tableau 10, then 10 darker companions.
	palette = []color.NRGBA{
		{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
		{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
		{0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
		{0x0b, 0x3c, 0x5d, 0xff}, {0xa6, 0x4b, 0x00, 0xff}, {0x16, 0x5c, 0x16, 0xff}, {0x7a, 0x12, 0x12, 0xff},
		{0x4d, 0x2d, 0x6b, 0xff}, {0x4a, 0x2b, 0x24, 0xff}, {0x99, 0x2e, 0x78, 0xff}, {0x33, 0x33, 0x33, 0xff},
		{0x6b, 0x6b, 0x0c, 0xff}, {0x0b, 0x6b, 0x75, 0xff},
	}
	// faultPalette shades fault windows, one colour per action.
	faultPalette = []color.NRGBA{
		{0x94, 0x67, 0xbd, 0x38}, {0xd6, 0x27, 0x28, 0x30}, {0x17, 0xbe, 0xcf, 0x38}, {0xbc, 0xbd, 0x22, 0x40},
		{0x8c, 0x56, 0x4b, 0x38}, {0xe3, 0x77, 0xc2, 0x38},
	}
)

// chartData is what the charts need beyond the Summary, from what the
// Summarizer keeps.
type chartData struct {
	t0 time.Time
	c  *chain
	// latency samples, successful signatures only: validator -> phase
	node, signer map[string]*[3]samples
}

func (z *Summarizer) chartData() *chartData {
	d := &chartData{c: z.c, node: map[string]*[3]samples{}, signer: map[string]*[3]samples{}}
	for id, a := range z.vals {
		d.node[z.names.name(id)], d.signer[z.names.name(id)] = &a.latency, &a.signer
	}
	if z.start != nil {
		d.t0 = z.start.Time
	} else if z.n > 0 {
		d.t0 = z.first
	}
	return d
}

// samplesOf is validator v's samples of phase ph (nil: none).
func samplesOf(m map[string]*[3]samples, v, ph string) *samples {
	a, i := m[v], phaseIndex(ph)
	if a == nil || i < 0 || a[i].len() == 0 {
		return nil
	}
	return &a[i]
}

// sinceStartS is t in seconds since the run started.
func (d *chartData) sinceStartS(t time.Time) float64 {
	return t.Sub(d.t0).Seconds()
}

// chart is one rendered chart, or why there is none.
type chart struct {
	SVG  template.HTML // inline <svg> markup, or "" with Note saying why
	Note string
}

// chartFailed is what a chart that cannot be drawn leaves in the report:
// a note in its place. The tables matter more than any one chart, so no
// chart may fail the report, let alone the run that writes it.
func chartFailed(why any) chart {
	return chart{Note: fmt.Sprintf("chart could not be drawn: %v", why)}
}

// guardChart builds one chart; a panic inside it (gonum panics on some
// degenerate ranges while drawing) becomes that chart's note.
func guardChart(build func() chart) (out chart) {
	defer func() {
		if r := recover(); r != nil {
			out = chartFailed(r)
		}
	}()
	return build()
}

// renderChart draws a w×h chart with fn and returns the cleaned SVG. It
// runs inside guardChart (see newHTMLData).
func renderChart(w, h vg.Length, label string, fn func(dc draw.Canvas)) chart {
	c := vgsvg.NewWith(vgsvg.UseWH(w, h))
	fn(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return chartFailed(err)
	}
	return chart{SVG: template.HTML(cleanSVG(buf.String(), label))}
}

var (
	reFontFamily = regexp.MustCompile(`font-family:[^;"]*`)
	reFontFace   = regexp.MustCompile(`(?s)@font-face\s*\{.*?\}`)
	reSVGWidth   = regexp.MustCompile(`^<svg width="[^"]*" height="[^"]*"`)
)

// cleanSVG turns vgsvg's document into markup to inline in HTML: no XML
// prelude or comment, generic font families only (vgsvg names the
// Liberation family it measured with, which a browser would have to find
// or load), no @font-face, and an accessible label.
func cleanSVG(s, label string) string {
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	s = reFontFace.ReplaceAllString(s, "")
	s = reFontFamily.ReplaceAllString(s, "font-family:sans-serif")
	if m := reSVGWidth.FindString(s); m != "" {
		s = m + ` class="chart" role="img" aria-label="` + html.EscapeString(label) + `"` + s[len(m):]
	}
	return strings.TrimSpace(s)
}

// newPlot returns a plot with the report's fonts and a light grid.
func newPlot(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(chartFont, 11)
	p.Title.Padding = 6
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(chartFont, 10)
		a.Tick.Label.Font = font.From(chartFont, 9)
		a.Tick.Length = 4
		a.Padding = 2
		a.Tick.Marker = niceTicks{}
	}
	p.Legend.TextStyle.Font = font.From(chartFont, 9)
	return p
}

func newGrid() *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 0xe4}
	g.Horizontal.Color = color.Gray{Y: 0xe4}
	g.Vertical.Width, g.Horizontal.Width = 0.5, 0.5
	return g
}

// legend is a plot legend drawn in its own strip right of the plot(s), so
// it never covers data.
type legend struct {
	plot.Legend
	n int
}

func newLegend() *legend {
	l := &legend{Legend: plot.NewLegend()}
	l.TextStyle.Font = font.From(chartFont, 9)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = 18
	l.Padding = 2.5
	return l
}

func (l *legend) add(name string, thumbs ...plot.Thumbnailer) {
	l.Add(name, thumbs...)
	l.n++
}

// split draws the legend at the right of dc and returns the rest of dc.
func (l *legend) split(dc draw.Canvas) draw.Canvas {
	if l == nil || l.n == 0 {
		return dc
	}
	// The text is measured in Liberation Sans; a browser's sans-serif
	// (often DejaVu Sans) is up to ~10% wider, which would clip the labels.
	w := l.Rectangle(dc).Size().X*1.12 + 14
	w = min(w, (dc.Max.X-dc.Min.X)/4)
	strip := draw.Crop(dc, dc.Max.X-dc.Min.X-w+10, 0, 0, -22)
	l.Draw(strip)
	return draw.Crop(dc, 0, -w, 0, 0)
}

// swatch is a legend thumbnail: a filled square.
type swatch struct{ color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(s.Color, rectPoints(c.Min.X, c.Min.Y, c.Max.X, c.Max.Y))
}

// lineThumb is a legend thumbnail: a horizontal line.
type lineThumb struct{ draw.LineStyle }

func (t lineThumb) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(t.LineStyle, c.Min.X, y, c.Max.X, y)
}

// niceTicks labels 5-9 round values (1, 2, 2.5 or 5 times a power of ten).
type niceTicks struct{}

func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: formatTick(lo)}}
	}
	span := hi - lo
	step := math.Pow(10, math.Floor(math.Log10(span/6)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if span/(step*m) <= 8 {
			step *= m
			break
		}
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: formatTick(v)})
		if minor := v + step/2; minor < hi {
			ticks = append(ticks, plot.Tick{Value: minor})
		}
	}
	return ticks
}

// intTicks labels integers only (rounds, heights).
type intTicks struct{}

func (intTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := niceTicks{}.Ticks(lo, hi)
	out := ticks[:0]
	for _, t := range ticks {
		if t.Value == math.Trunc(t.Value) {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		v := math.Round((lo + hi) / 2)
		out = append(out, plot.Tick{Value: v, Label: formatTick(v)})
	}
	return out
}

// logTicks labels powers of ten and marks 2..9 times them as minor ticks.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		base := math.Pow(10, e)
		for i := 1; i < 10; i++ {
			v := base * float64(i)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if i == 1 {
				t.Label = formatTick(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

func formatTick(v float64) string {
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// faultShade shades fault windows across the data area, labelled with the
// action and target at the top; labels of successive windows are staggered.
type faultShade struct {
	windows []shadeWindow
	actions []shadeAction // legend: one colour per action
}

type shadeAction struct {
	action string
	color  color.Color
}

// addLegend lists the fault actions in l.
func (f faultShade) addLegend(l *legend) {
	for _, a := range f.actions {
		l.add("fault: "+truncate(a.action, 28), swatch{a.color})
	}
}

type shadeWindow struct {
	x0, x1 float64
	label  string
	color  color.Color
}

func (f faultShade) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	sty := text.Style{Color: color.Gray{Y: 0x30}, Font: font.From(chartFont, 8), XAlign: draw.XLeft, YAlign: draw.YTop, Handler: p.TextHandler}
	lineH := sty.Rectangle("Xg").Size().Y + 1
	for i, w := range f.windows {
		x0, x1 := max(trX(w.x0), c.Min.X), min(trX(w.x1), c.Max.X)
		if x1 < c.Min.X || x0 > c.Max.X {
			continue
		}
		if x1-x0 < 2 { // a window shorter than a pixel stays visible
			x1 = min(x0+2, c.Max.X)
		}
		c.FillPolygon(w.color, rectPoints(x0, c.Min.Y, x1, c.Max.Y))
		y := c.Max.Y - 2 - vg.Length(i%3)*lineH
		c.FillText(sty, vg.Point{X: x0 + 2, Y: y}, w.label)
	}
}

// faultWindows maps the summary's fault windows to x ranges via toX (ms
// since the run started -> x), one colour per action.
func faultWindows(s *Summary, toX func(ms float64) float64) faultShade {
	var f faultShade
	colors := map[string]color.Color{}
	for _, w := range s.Faults {
		col, ok := colors[w.Action]
		if !ok {
			col = faultPalette[len(colors)%len(faultPalette)]
			colors[w.Action] = col
			f.actions = append(f.actions, shadeAction{w.Action, col})
		}
		end := float64(w.EndMS)
		if w.EndMS == 0 { // still active when the run ended
			end = float64(max(s.DurationMS, w.StartMS))
		}
		label := w.Action
		if w.Target != "" {
			label += " " + w.Target
		}
		f.windows = append(f.windows, shadeWindow{x0: toX(float64(w.StartMS)), x1: toX(end), label: label, color: col})
	}
	return f
}

// roundsChart: the commit round of every committed height (bars merged into
// one step outline), unknown rounds marked, fault windows mapped to the
// heights in progress while they were active.
func roundsChart(s *Summary, d *chartData) chart {
	c := d.c
	if len(c.heights) == 0 {
		return chart{Note: "no committed heights"}
	}
	first, last := c.first(), c.last()
	p := newPlot("Commit round per height")
	p.X.Label.Text = "height"
	p.Y.Label.Text = "commit round"
	p.Add(newGrid())

	// Heights in progress at a time: the first committed height whose
	// block came at or after it.
	commitMS := make([]float64, len(c.heights))
	for i, h := range c.heights {
		commitMS[i] = float64(c.row(h).t.time().Sub(d.t0)) / float64(time.Millisecond)
	}
	heightAt := func(ms float64) float64 {
		i := sort.SearchFloat64s(commitMS, ms)
		if i == len(c.heights) {
			return float64(last + 1)
		}
		return float64(c.heights[i])
	}
	faults := faultWindows(s, heightAt)
	for i := range faults.windows {
		faults.windows[i].x0 -= 0.5
		faults.windows[i].x1 += 0.5
	}
	p.Add(faults)

	maxRound := int32(0)
	var unknown, spikes plotter.XYs
	var segs []plotter.XYs // step outlines of runs of consecutive known heights
	var seg plotter.XYs
	flush := func(endH int64) {
		if len(seg) > 0 {
			seg = append(seg, plotter.XY{X: float64(endH) + 0.5, Y: seg[len(seg)-1].Y}, plotter.XY{X: float64(endH) + 0.5, Y: 0})
			segs = append(segs, seg)
			seg = nil
		}
	}
	prevH := int64(math.MinInt64)
	for _, h := range c.heights {
		r, ok := c.commitRound(h, noRound)
		if !ok {
			flush(prevH)
			unknown = append(unknown, plotter.XY{X: float64(h), Y: 0})
			prevH = h
			continue
		}
		if len(seg) > 0 && h != prevH+1 {
			flush(prevH)
		}
		y := float64(r)
		if len(seg) == 0 {
			seg = plotter.XYs{{X: float64(h) - 0.5, Y: 0}, {X: float64(h) - 0.5, Y: y}}
		} else if seg[len(seg)-1].Y != y {
			seg = append(seg, plotter.XY{X: float64(h) - 0.5, Y: seg[len(seg)-1].Y}, plotter.XY{X: float64(h) - 0.5, Y: y})
		}
		if r > 0 {
			spikes = append(spikes, plotter.XY{X: float64(h), Y: y})
		}
		maxRound = max(maxRound, r)
		prevH = h
	}
	flush(prevH)

	l := newLegend()
	for _, sg := range segs {
		poly, err := plotter.NewPolygon(sg)
		if err != nil {
			return chartFailed(err)
		}
		poly.Color = color.NRGBA{R: colRound.R, G: colRound.G, B: colRound.B, A: 0x90}
		poly.LineStyle = draw.LineStyle{Color: colRound, Width: 0.8}
		p.Add(poly)
	}
	if len(segs) > 0 {
		l.add("commit round", swatch{colRound})
	}
	if len(spikes) > 0 && len(spikes) <= 300 {
		sc, err := plotter.NewScatter(spikes)
		if err != nil {
			return chartFailed(err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: colRound, Radius: 2.2, Shape: draw.CircleGlyph{}}
		p.Add(sc)
	}
	if len(unknown) > 0 {
		sc, err := plotter.NewScatter(unknown)
		if err != nil {
			return chartFailed(err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: colGray, Radius: 2.5, Shape: draw.CrossGlyph{}}
		p.Add(sc)
		l.add("round unknown", sc)
	}
	faults.addLegend(l)
	p.X.Min, p.X.Max = float64(first)-0.5, float64(last)+0.5
	p.Y.Min, p.Y.Max = 0, float64(max(maxRound, 1))+0.3
	p.X.Tick.Marker, p.Y.Tick.Marker = intTicks{}, intTicks{}

	return renderChart(chartWidth, 2.6*vg.Inch, "commit round per height", func(dc draw.Canvas) {
		p.Draw(l.split(dc))
	})
}

// intervalChart: the time between consecutive commits, at the time of the
// later commit, with fault windows shaded and the median as a reference.
func intervalChart(s *Summary, d *chartData) chart {
	c := d.c
	var pts plotter.XYs // (time of the later commit, interval)
	var from float64    // time of the commit before the first interval
	for _, h := range c.heights {
		if ms, ok := c.intervalMS(h); ok {
			if len(pts) == 0 {
				from = d.sinceStartS(c.row(h - 1).t.time())
			}
			pts = append(pts, plotter.XY{X: d.sinceStartS(c.row(h).t.time()), Y: ms})
		}
	}
	if len(pts) == 0 {
		return chart{Note: "fewer than two consecutive committed heights: no block intervals"}
	}
	n := len(pts)
	pts = downsampleMinMax(pts, intervalMaxPoints)
	// Each interval is a horizontal segment over the time it took (from
	// the previous commit to this one): a PreStep line from the first
	// interval's start.
	steps := append(plotter.XYs{{X: from, Y: pts[0].Y}}, pts...)

	p := newPlot("Block interval over time")
	p.X.Label.Text = "seconds since run start"
	p.Y.Label.Text = "interval (ms)"
	p.Add(newGrid())
	l := newLegend()
	faults := faultWindows(s, func(ms float64) float64 { return ms / 1000 })
	p.Add(faults)
	line, err := plotter.NewLine(steps)
	if err != nil {
		return chartFailed(err)
	}
	line.StepStyle = plotter.PreStep
	line.LineStyle = draw.LineStyle{Color: colLine, Width: 1}
	p.Add(line)
	if n <= 150 {
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return chartFailed(err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: colLine, Radius: 1.8, Shape: draw.CircleGlyph{}}
		p.Add(sc)
	}
	l.add("interval", line)

	xMax := max(float64(s.DurationMS)/1000, pts[len(pts)-1].X)
	yMax := 0.0
	for _, pt := range pts {
		yMax = max(yMax, pt.Y)
	}
	if s.BlockIntervalMS.Count > 0 {
		med, err := plotter.NewLine(plotter.XYs{{X: 0, Y: s.BlockIntervalMS.P50}, {X: xMax, Y: s.BlockIntervalMS.P50}})
		if err != nil {
			return chartFailed(err)
		}
		med.LineStyle = draw.LineStyle{Color: colGray, Width: 0.8, Dashes: []vg.Length{4, 3}}
		p.Add(med)
		l.add("p50 "+formatMS(s.BlockIntervalMS.P50)+" ms", med)
	}
	faults.addLegend(l)
	p.X.Min, p.X.Max = 0, max(xMax, 1e-3)
	p.Y.Min, p.Y.Max = 0, max(yMax*1.08, 1)
	return renderChart(chartWidth, 2.6*vg.Inch, "block interval over time", func(dc draw.Canvas) {
		p.Draw(l.split(dc))
	})
}

// downsampleMinMax keeps at most about limit points: the min and the max of
// each bucket of consecutive points, in order.
func downsampleMinMax(pts plotter.XYs, limit int) plotter.XYs {
	if len(pts) <= limit {
		return pts
	}
	buckets := limit / 2
	size := (len(pts) + buckets - 1) / buckets
	out := make(plotter.XYs, 0, limit)
	for i := 0; i < len(pts); i += size {
		b := pts[i:min(i+size, len(pts))]
		lo, hi := 0, 0
		for j := range b {
			if b[j].Y < b[lo].Y {
				lo = j
			}
			if b[j].Y > b[hi].Y {
				hi = j
			}
		}
		if lo > hi {
			lo, hi = hi, lo
		}
		out = append(out, b[lo])
		if hi != lo {
			out = append(out, b[hi])
		}
	}
	return out
}

// Precommit states of the heat map.
type cellState uint8

const (
	cellPresent cellState = iota
	cellAbsent
	cellNil
	cellUnknown
)

var cellColors = [...]color.Color{cellPresent: colPresent, cellAbsent: colAbsent, cellNil: colNil, cellUnknown: colUnknown}

// precommitCells: rows = s.Validators in order, columns = heights first..last.
// A height's cell comes from block H+1's LastCommit; without that block (the
// last height, or a gap) it is unknown.
func precommitCells(s *Summary, c *chain) (first int64, cells [][]cellState, counts [4]int) {
	first, last := c.first(), c.last()
	row := map[string]int{}
	cells = make([][]cellState, len(s.Validators))
	for i, v := range s.Validators {
		row[v.Name] = i
		cells[i] = make([]cellState, last-first+1)
		for j := range cells[i] {
			cells[i][j] = cellUnknown
		}
	}
	for h := first; h <= last; h++ {
		nb := c.lastCommit(h)
		if c.row(h) == nil || nb == nil {
			continue
		}
		j := h - first
		for i := range cells {
			cells[i][j] = cellPresent
		}
		for _, name := range c.namesOf(nb.nils) {
			if i, ok := row[name]; ok {
				cells[i][j] = cellNil
			}
		}
		for _, name := range c.namesOf(nb.absent) {
			if i, ok := row[name]; ok {
				cells[i][j] = cellAbsent
			}
		}
	}
	for _, r := range cells {
		for _, st := range r {
			counts[st]++
		}
	}
	return first, cells, counts
}

// precommitGrid draws the heat map: each row's runs of equal cells as one
// rectangle (so a 25×1000 grid costs a few hundred shapes, not 25,000).
// Absent, nil and unknown runs are drawn last and at least 1.5pt wide so
// that a single miss among a thousand heights stays visible.
type precommitGrid struct {
	first int64
	cells [][]cellState
}

func (g precommitGrid) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	n := len(g.cells)
	for pass := 0; pass < 2; pass++ {
		for i, r := range g.cells {
			yc := float64(n - 1 - i)
			y0, y1 := trY(yc-0.45), trY(yc+0.45)
			for j := 0; j < len(r); {
				k := j
				for k+1 < len(r) && r[k+1] == r[j] {
					k++
				}
				st := r[j]
				anomaly := st != cellPresent
				if anomaly == (pass == 1) {
					x0, x1 := trX(float64(g.first+int64(j))-0.5), trX(float64(g.first+int64(k))+0.5)
					if anomaly && x1-x0 < 1.5 {
						mid := (x0 + x1) / 2
						x0, x1 = mid-0.75, mid+0.75
					}
					c.FillPolygon(cellColors[st], rectPoints(x0, y0, x1, y1))
				}
				j = k + 1
			}
		}
	}
}

// heatmapChart: validators × heights, present/absent/nil/unknown.
func heatmapChart(s *Summary, d *chartData) chart {
	c := d.c
	if len(c.heights) == 0 || len(s.Validators) == 0 {
		return chart{Note: "no committed heights or no validators"}
	}
	first, cells, counts := precommitCells(s, c)
	last := c.last()
	n := len(s.Validators)

	p := newPlot("Precommits per validator and height (from the next block's LastCommit)")
	p.X.Label.Text = "height"
	p.Add(precommitGrid{first: first, cells: cells})
	p.X.Min, p.X.Max = float64(first)-0.5, float64(last)+0.5
	p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5
	p.X.Tick.Marker = intTicks{}

	rowPt := vg.Length(math.Min(16, math.Max(6, 400/float64(n))))
	every := int(math.Ceil(11 / float64(rowPt))) // label every row that has room
	var yt plot.ConstantTicks
	for i, v := range s.Validators {
		t := plot.Tick{Value: float64(n - 1 - i)}
		if i%every == 0 {
			t.Label = truncate(v.Name, 24)
		}
		yt = append(yt, t)
	}
	p.Y.Tick.Marker = yt
	p.Y.Tick.Length = 2

	l := newLegend()
	names := [...]string{cellPresent: "present", cellAbsent: "absent", cellNil: "nil", cellUnknown: "unknown"}
	for st, name := range names {
		l.add(fmt.Sprintf("%s (%d)", name, counts[st]), swatch{cellColors[st]})
	}
	h := rowPt*vg.Length(n) + 72
	return renderChart(chartWidth, h, "precommit heat map", func(dc draw.Canvas) {
		p.Draw(l.split(dc))
	})
}

// latencyChart: the CDF of signing latency per phase (one panel each), one
// line per validator; a remote signer's own view of the same signatures is
// dashed. Up to 10 validators get a colour each, more are coloured by
// signer label. The x axis is logarithmic when samples span > 2 decades.
func latencyChart(s *Summary, d *chartData) (chart, bool) {
	var panels []string
	for _, ph := range phases {
		for _, v := range s.Validators {
			if samplesOf(d.node, v.Name, ph) != nil || samplesOf(d.signer, v.Name, ph) != nil {
				panels = append(panels, ph)
				break
			}
		}
	}
	if len(panels) == 0 {
		return chart{Note: "no successful signatures recorded"}, false
	}

	// x range over every sample shown
	lo, hi, minPos := math.Inf(1), math.Inf(-1), math.Inf(1)
	lines := 0
	remote := false
	for _, v := range s.Validators {
		for _, m := range []map[string]*[3]samples{d.node, d.signer} {
			for _, ph := range panels {
				xs := samplesOf(m, v.Name, ph)
				if xs == nil {
					continue
				}
				lines++
				vals, _ := xs.distinct()
				for _, x := range vals {
					lo, hi = math.Min(lo, x), math.Max(hi, x)
					if x > 0 {
						minPos = math.Min(minPos, x)
					}
				}
			}
		}
		for _, ph := range phases {
			if samplesOf(d.signer, v.Name, ph) != nil {
				remote = true
			}
		}
	}
	logX := !math.IsInf(minPos, 1) && hi/minPos > 100
	xMin, xMax := 0.0, math.Max(hi*1.05, 1e-3)
	if logX {
		xMin = math.Pow(10, math.Floor(math.Log10(minPos)))
		xMax = math.Pow(10, math.Ceil(math.Log10(hi)))
	}
	perLine := min(max(cdfPointBudget/max(lines, 1), cdfMinPoints), cdfMaxPoints)

	// colours
	byLabel := len(s.Validators) > len(palette)/2
	colorOf := map[string]color.Color{}
	l := newLegend()
	if byLabel {
		labels := map[string]color.Color{}
		for _, v := range s.Validators {
			lab := orDash(v.Signer)
			col, ok := labels[lab]
			if !ok {
				col = palette[len(labels)%len(palette)]
				labels[lab] = col
				l.add(truncate(lab, 40), lineThumb{draw.LineStyle{Color: col, Width: 1.5}})
			}
			colorOf[v.Name] = col
		}
	} else {
		for i, v := range s.Validators {
			colorOf[v.Name] = palette[i%len(palette)]
			l.add(truncate(v.Name, 24), lineThumb{draw.LineStyle{Color: colorOf[v.Name], Width: 1.5}})
		}
	}
	if remote {
		l.add("node side", lineThumb{draw.LineStyle{Color: colGray, Width: 1.2}})
		l.add("signer side", lineThumb{draw.LineStyle{Color: colGray, Width: 1.2, Dashes: []vg.Length{3, 2}}})
	}

	var plots []*plot.Plot
	for _, ph := range panels {
		p := newPlot(ph)
		p.X.Label.Text = "signing latency (ms)"
		if len(plots) == 0 {
			p.Y.Label.Text = "fraction of signatures ≤ x"
		}
		p.Add(newGrid())
		for _, v := range s.Validators {
			for side, m := range []map[string]*[3]samples{d.node, d.signer} {
				xs := samplesOf(m, v.Name, ph)
				if xs == nil {
					continue
				}
				pts := cdfPointsOf(xs, perLine)
				if logX {
					for i := range pts {
						pts[i].X = math.Max(pts[i].X, xMin)
					}
				}
				line, err := plotter.NewLine(pts)
				if err != nil {
					return chartFailed(err), false
				}
				line.StepStyle = plotter.PostStep
				line.LineStyle = draw.LineStyle{Color: colorOf[v.Name], Width: 1.2}
				if side == 1 {
					line.LineStyle.Dashes = []vg.Length{3, 2}
				}
				p.Add(line)
			}
		}
		p.X.Min, p.X.Max = xMin, xMax
		p.Y.Min, p.Y.Max = 0, 1.02
		if logX {
			p.X.Scale = plot.LogScale{}
			p.X.Tick.Marker = logTicks{}
		}
		plots = append(plots, p)
	}

	return renderChart(chartWidth, 3*vg.Inch, "signing latency distribution", func(dc draw.Canvas) {
		rest := l.split(dc)
		tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: 10}
		canvases := plot.Align([][]*plot.Plot{plots}, tiles, rest)
		for i, p := range plots {
			p.Draw(canvases[0][i])
		}
	}), logX
}

// cdfPoints is the empirical CDF of xs as PostStep points: (x, fraction of
// samples <= x) at each distinct value, starting from (min, 0), reduced to
// about k points evenly spaced in probability (the last point is kept).
func cdfPoints(xs []float64, k int) plotter.XYs {
	var s samples
	for _, x := range xs {
		s.add(x)
	}
	return cdfPointsOf(&s, k)
}

// cdfPointsOf is cdfPoints of a set of samples (at least one).
func cdfPointsOf(s *samples, k int) plotter.XYs {
	vals, counts := s.distinct()
	n := float64(s.len())
	pts := plotter.XYs{{X: vals[0], Y: 0}}
	seen := 0
	for i, v := range vals {
		seen += int(counts[i])
		pts = append(pts, plotter.XY{X: v, Y: float64(seen) / n})
	}
	if len(pts) <= k {
		return pts
	}
	out := plotter.XYs{pts[0]}
	next := 1.0 / float64(k-1)
	for i, pt := range pts[1:] {
		if pt.Y >= next || i == len(pts)-2 {
			out = append(out, pt)
			for next <= pt.Y {
				next += 1.0 / float64(k-1)
			}
		}
	}
	return out
}

// rectPoints is the corners of an axis-aligned rectangle.
func rectPoints(x0, y0, x1, y1 vg.Length) []vg.Point {
	return []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
