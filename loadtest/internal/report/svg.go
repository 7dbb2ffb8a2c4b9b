package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// Point is one measurement on the chart.
type Point struct {
	Pipeline   int           `json:"pipeline"`
	Throughput float64       `json:"throughput"`
	P99        time.Duration `json:"p99_ns"`
}

// Series is one system's line on the chart.
type Series struct {
	Name   string  `json:"name"`
	Points []Point `json:"points"`
}

// SeriesFrom collects the results of runs into one line.
func SeriesFrom(name string, rs []*Result) Series {
	s := Series{Name: name}
	for _, r := range rs {
		if r != nil {
			s.Points = append(s.Points, Point{Pipeline: r.Pipeline, Throughput: r.Throughput, P99: r.Latency.P99})
		}
	}
	return s
}

// panel geometry, in SVG user units.
const (
	panelW, panelH = 440, 330
	padL, padR     = 70, 20
	padT, padB     = 40, 50
	legendH        = 30
)

// palette gives each series a colour that survives greyscale printing.
func palette(i int) string {
	colors := []string{"#1f77b4", "#d62728", "#7f7f7f", "#2ca02c", "#9467bd"}
	return colors[i%len(colors)]
}

// WriteSVG draws throughput and p99 against pipeline depth, one line per
// series, on log scales, as a self-contained SVG.
func WriteSVG(w io.Writer, title string, series []Series) error {
	var b strings.Builder
	width, height := 2*panelW, panelH+legendH+30
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="20" text-anchor="middle" font-size="15" font-weight="bold">%s</text>`+"\n", width/2, html.EscapeString(title))
	depths := allDepths(series)
	drawPanel(&b, 0, 30, "throughput (requests/s, log scale)", depths, series, func(p Point) float64 { return p.Throughput }, tickCount)
	drawPanel(&b, panelW, 30, "p99 latency (log scale)", depths, series, func(p Point) float64 { return float64(p.P99) },
		func(v float64) string { return Dur(time.Duration(v)) })
	drawLegend(&b, 30+panelH+10, series)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func allDepths(series []Series) []int {
	var ds []int
	for _, s := range series {
		for _, p := range s.Points {
			ds = append(ds, p.Pipeline)
		}
	}
	slices.Sort(ds)
	return slices.Compact(ds)
}

// logRange returns whole decades around every positive value.
func logRange(series []Series, val func(Point) float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, p := range s.Points {
			if v := val(p); v > 0 {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 1) {
		return 1, 10
	}
	lo, hi = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
	if lo == hi {
		hi *= 10
	}
	return lo, hi
}

func drawPanel(b *strings.Builder, x0, y0 int, title string, depths []int, series []Series, val func(Point) float64, label func(float64) string) {
	lo, hi := logRange(series, val)
	plotW, plotH := float64(panelW-padL-padR), float64(panelH-padT-padB)
	px := func(i int) float64 {
		if len(depths) == 1 {
			return float64(x0+padL) + plotW/2
		}
		return float64(x0+padL) + plotW*float64(i)/float64(len(depths)-1)
	}
	py := func(v float64) float64 {
		return float64(y0+padT) + plotH*(1-math.Log10(v/lo)/math.Log10(hi/lo))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" font-weight="bold">%s</text>`+"\n", x0+panelW/2, y0+padT-15, title)
	drawYAxis(b, x0, plotW, lo, hi, py, label)
	drawXAxis(b, y0, plotH, depths, px)
	for i, s := range series {
		drawLine(b, s, palette(i), depths, px, py, val)
	}
}

func drawYAxis(b *strings.Builder, x0 int, plotW, lo, hi float64, py func(float64) float64, label func(float64) string) {
	for dec := lo; dec <= hi*1.0001; dec *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := dec * m
			if v > hi*1.0001 {
				break
			}
			y := py(v)
			fmt.Fprintf(b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x0+padL, float64(x0+padL)+plotW, y, y)
			fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", x0+padL-6, y, label(v))
		}
	}
}

func drawXAxis(b *strings.Builder, y0 int, plotH float64, depths []int, px func(int) float64) {
	base := float64(y0+padT) + plotH
	for i, d := range depths {
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%.1f" stroke="#eee"/>`+"\n", px(i), px(i), y0+padT, base)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%d</text>`+"\n", px(i), base+16, d)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">pipeline depth (-P)</text>`+"\n", (px(0)+px(len(depths)-1))/2, base+34)
}

func drawLine(b *strings.Builder, s Series, color string, depths []int, px func(int) float64, py func(float64) float64, val func(Point) float64) {
	var pts []string
	for _, p := range s.Points {
		v := val(p)
		if v <= 0 {
			continue
		}
		x, y := px(slices.Index(depths, p.Pipeline)), py(v)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", x, y, color)
	}
	if len(pts) > 1 {
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), color)
	}
}

func drawLegend(b *strings.Builder, y int, series []Series) {
	x := padL
	for i, s := range series {
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="14" height="14" fill="%s"/>`+"\n", x, y, palette(i))
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", x+20, y+11, html.EscapeString(s.Name))
		x += 40 + 8*len(s.Name)
	}
}

// tickCount labels a 1-2-5 tick: 500, 2k, 1M.
func tickCount(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}
