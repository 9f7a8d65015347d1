package dashboard

import (
	"math"
	"strconv"

	"github.com/reapergw/reaper/reaper"
)

// The chart of an app's recent wakes: one horizontal bar per wake, newest on
// top, split into its phases (start accepted, platform up, first answer). The
// geometry is computed here; wakechart (app.templ) draws it as inline SVG.

const (
	chartWidth  = 640.0
	chartLeft   = 78.0 // room for the labels
	chartRight  = 16.0
	chartRow    = 24.0
	barHeight   = 14.0
	chartTop    = 8.0
	chartBottom = 28.0 // room for the axis
)

type chartSeg struct {
	X, W  float64
	Class string
	Title string
}

type chartBar struct {
	Y     float64 // top of the row
	Label string
	Total string
	TextX float64 // where the total is written
	Segs  []chartSeg
}

type chartTick struct {
	X     float64
	Label string
}

type wakeChart struct {
	Width, Height float64
	AxisY         float64
	Bars          []chartBar
	Ticks         []chartTick
}

// newWakeChart lays out the wakes (newest first, as the API gives them).
func newWakeChart(wakes []reaper.WakeView) wakeChart {
	c := wakeChart{Width: chartWidth}
	longest := 0.0
	for _, w := range wakes {
		longest = max(longest, w.Seconds)
	}
	step := tickStep(longest)
	top := math.Max(step, math.Ceil(longest/step)*step)
	plot := chartWidth - chartLeft - chartRight
	x := func(s float64) float64 { return chartLeft + s/top*plot }
	for i, w := range wakes {
		b := chartBar{Y: chartTop + float64(i)*chartRow, Label: w.AskedAt.UTC().Format("15:04:05"), Total: seconds(w.Seconds)}
		at := 0.0
		for _, p := range w.Phases {
			seg := chartSeg{X: x(at), W: math.Max(1, x(at+p.Seconds)-x(at)), Class: phaseClass(p.Phase),
				Title: phaseLabel(p.Phase) + ": " + seconds(p.Seconds)}
			b.Segs = append(b.Segs, seg)
			at += p.Seconds
		}
		b.TextX = x(at) + 6
		c.Bars = append(c.Bars, b)
	}
	c.AxisY = chartTop + float64(len(wakes))*chartRow + 2
	c.Height = c.AxisY + chartBottom
	for i := 0; float64(i)*step <= top+step/2; i++ {
		v := float64(i) * step
		c.Ticks = append(c.Ticks, chartTick{X: x(v), Label: tickLabel(v, step)})
	}
	return c
}

// tickStep is a round step that splits [0, longest] into at most 5 parts.
func tickStep(longest float64) float64 {
	for _, s := range []float64{0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600} {
		if longest/s <= 5 {
			return s
		}
	}
	return math.Ceil(longest/5/3600) * 3600
}

// tickLabel writes a tick of the axis, with a decimal when the step has one.
func tickLabel(v, step float64) string {
	switch {
	case v == 0:
		return "0"
	case step < 1:
		return strconv.FormatFloat(v, 'f', 1, 64) + " s"
	case step < 60:
		return strconv.FormatFloat(v, 'f', 0, 64) + " s"
	default:
		return strconv.FormatFloat(v/60, 'f', -1, 64) + " min"
	}
}

// f writes an SVG coordinate.
func f(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
