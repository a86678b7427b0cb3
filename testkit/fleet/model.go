package fleet

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// line is y = a + b·x, fitted by least squares.
type line struct{ a, b float64 }

func fit(xs, ys []float64) line {
	n := float64(len(xs))
	if n == 0 {
		return line{}
	}
	if n == 1 {
		return line{a: ys[0]}
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return line{a: sy / n}
	}
	b := (n*sxy - sx*sy) / d
	if b < 0 {
		// Every figure here is a cost that more peers do not lower: a
		// falling line is noise between the points, and the model holds
		// their mean rather than extrapolate it to nothing.
		return line{a: sy / n}
	}
	return line{a: (sy - b*sx) / n, b: b}
}

func (l line) at(x float64) float64 { return l.a + l.b*x }

// Model extrapolates the measured points to larger fleets: each figure a
// straight line in the number of peers (the leader's idle work and a
// peer's memory grow with the members it tracks), but the write rate,
// whose cost a write grows with the peers it goes to: 1/rate is the
// line. It is a model of the points measured, no more: it says where the
// measured trend leads, not what a fleet that large does.
type Model struct {
	writeCost, cores, rss, notReady, failover, join, deployP99 line
}

// NewModel fits the model to points.
func NewModel(points []Point) Model {
	var xs, wc, co, rs, nr, fo, jo, dp []float64
	for _, p := range points {
		xs = append(xs, float64(p.Peers))
		wc = append(wc, 1/max(p.WritesPerSec, 1e-9))
		co = append(co, p.LeaderIdleCores)
		rs = append(rs, float64(p.PeerRSSMedian))
		nr = append(nr, p.NotReady.Seconds())
		fo = append(fo, p.Failover.Seconds())
		jo = append(jo, p.Join.Seconds())
		dp = append(dp, p.DeployP99.Seconds())
	}
	return Model{fit(xs, wc), fit(xs, co), fit(xs, rs), fit(xs, nr), fit(xs, fo), fit(xs, jo), fit(xs, dp)}
}

func secs(s float64) time.Duration { return time.Duration(max(s, 0) * float64(time.Second)) }

// At is the model's point for a fleet of n peers.
func (m Model) At(n int) Point {
	x := float64(n)
	p := Point{Peers: n, LeaderIdleCores: max(m.cores.at(x), 0), PeerRSSMedian: int64(max(m.rss.at(x), 0)),
		NotReady: secs(m.notReady.at(x)), Failover: secs(m.failover.at(x)), Join: secs(m.join.at(x)), DeployP99: secs(m.deployP99.at(x))}
	if c := m.writeCost.at(x); c > 0 {
		p.WritesPerSec = 1 / c
	}
	p.PeerRSSMax = p.PeerRSSMedian
	return p
}

// Table writes the measured points, then the model's at the sizes of
// extrapolate, each figure's ratio to the first point (the smallest
// fleet) beside the write rate and the deploy p99.
func Table(w io.Writer, points []Point, extrapolate []int) {
	if len(points) == 0 {
		return
	}
	base := points[0]
	fmt.Fprintf(w, "%-9s %6s %16s %12s %14s %14s %12s %10s %10s %10s\n",
		"", "peers", "writes/s (×)", "leader idle", "peer RSS med", "deploy p99 (×)", "not ready", "failover", "join", "formed")
	row := func(kind string, p Point) {
		ratio := func(v, b float64) string {
			if b == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", v/b)
		}
		formed := "-"
		if p.Formed > 0 {
			formed = p.Formed.Round(time.Second).String()
		}
		fmt.Fprintf(w, "%-9s %6d %9.0f (%s) %9.3f c %11d MB %7s (%s) %12s %10s %10s %10s\n", kind, p.Peers,
			p.WritesPerSec, ratio(p.WritesPerSec, base.WritesPerSec), p.LeaderIdleCores, p.PeerRSSMedian>>20,
			p.DeployP99.Round(time.Millisecond), ratio(p.DeployP99.Seconds(), base.DeployP99.Seconds()),
			p.NotReady.Round(100*time.Millisecond), p.Failover.Round(10*time.Millisecond), p.Join.Round(100*time.Millisecond), formed)
	}
	for _, p := range points {
		row("measured", p)
	}
	if len(points) < 2 {
		return
	}
	m := NewModel(points)
	for _, n := range extrapolate {
		row("model", m.At(n))
	}
	fmt.Fprintln(w, strings.TrimSpace(`
model: each figure a straight line in the peers through the measured points (1/writes per second for the
write rate); it says where the measured trend leads, not what a fleet that large does.`))
}
