package main

// A minimal SVG grouped bar chart, enough for the report's figures.

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// barChart is a chart of groups of bars: Values[g][s] is the bar of
// series s in group g (NaN: no bar).
type barChart struct {
	Title    string
	Subtitle string
	YLabel   string
	Groups   []string
	Series   []string
	Colors   []string // per series; default: the palette in order
	Values   [][]float64
	Format   func(float64) string // a bar's label
	RefLine  float64              // a dashed line at this value when > 0
	RefLabel string
}

var palette = []string{
	"#4e79a7", "#a0cbe8", "#f28e2b", "#ffbe7d", "#59a14f", "#8cd17d", "#b6992d", "#f1ce63",
	"#499894", "#86bcb6", "#e15759", "#ff9d9a",
}

func (c barChart) color(s int) string {
	if s < len(c.Colors) {
		return c.Colors[s]
	}
	return palette[s%len(palette)]
}

// svg renders the chart.
func (c barChart) svg() string {
	const (
		barW, barGap, groupGap = 28.0, 4.0, 36.0
		left, right, top       = 70.0, 20.0, 64.0
		plotH                  = 300.0
	)
	nS := float64(len(c.Series))
	groupW := nS*barW + (nS-1)*barGap
	plotW := float64(len(c.Groups))*groupW + float64(len(c.Groups)+1)*groupGap
	legendRows := (len(c.Series) + 3) / 4
	width := left + plotW + right
	height := top + plotH + 40 + float64(legendRows)*20 + 16

	maxV := c.RefLine
	for _, g := range c.Values {
		for _, v := range g {
			if !math.IsNaN(v) && v > maxV {
				maxV = v
			}
		}
	}
	step := niceStep(maxV * 1.15 / 5)
	if step <= 0 {
		step = 1
	}
	top1 := math.Ceil(maxV*1.15/step) * step
	y := func(v float64) float64 { return top + plotH - v/top1*plotH }

	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%.0f" y="22" font-size="16" font-weight="bold">%s</text>`+"\n", left, esc(c.Title))
	if c.Subtitle != "" {
		p(`<text x="%.0f" y="42" fill="#555">%s</text>`+"\n", left, esc(c.Subtitle))
	}
	// Axes and grid.
	for v := 0.0; v <= top1+step/2; v += step {
		p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`+"\n", left, y(v), left+plotW, y(v))
		p(`<text x="%.1f" y="%.1f" text-anchor="end" fill="#333">%s</text>`+"\n", left-6, y(v)+4, esc(trimFloat(v)))
	}
	p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`+"\n", left, top, left, top+plotH)
	p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`+"\n", left, top+plotH, left+plotW, top+plotH)
	p(`<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle" fill="#333">%s</text>`+"\n", top+plotH/2, esc(c.YLabel))
	// Bars.
	for g, name := range c.Groups {
		gx := left + groupGap + float64(g)*(groupW+groupGap)
		for s := range c.Series {
			v := math.NaN()
			if g < len(c.Values) && s < len(c.Values[g]) {
				v = c.Values[g][s]
			}
			if math.IsNaN(v) {
				continue
			}
			x := gx + float64(s)*(barW+barGap)
			p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s, %s: %s</title></rect>`+"\n",
				x, y(v), barW, top+plotH-y(v), c.color(s), esc(name), esc(c.Series[s]), esc(c.Format(v)))
			p(`<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10" fill="#222">%s</text>`+"\n",
				x+barW/2, y(v)-4, esc(c.Format(v)))
		}
		p(`<text x="%.1f" y="%.1f" text-anchor="middle" font-weight="bold">%s</text>`+"\n",
			gx+groupW/2, top+plotH+20, esc(name))
	}
	if c.RefLine > 0 {
		p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#d62728" stroke-width="1.5" stroke-dasharray="6 4"/>`+"\n",
			left, y(c.RefLine), left+plotW, y(c.RefLine))
		p(`<text x="%.1f" y="%.1f" text-anchor="end" fill="#d62728">%s</text>`+"\n", left+plotW, y(c.RefLine)-5, esc(c.RefLabel))
	}
	// Legend.
	ly := top + plotH + 44
	for s, name := range c.Series {
		lx := left + float64(s%4)*((plotW)/4)
		yy := ly + float64(s/4)*20
		p(`<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/>`+"\n", lx, yy-10, c.color(s))
		p(`<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+16, yy, esc(name))
	}
	p("</svg>\n")
	return b.String()
}

// niceStep rounds x up to 1, 2, 2.5 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	pow := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*pow >= x {
			return m * pow
		}
	}
	return 10 * pow
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

func esc(s string) string { return html.EscapeString(s) }
