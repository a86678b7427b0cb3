package fleet

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func TestFit_lines(t *testing.T) {
	for _, tc := range []struct {
		name   string
		xs, ys []float64
		want   line
	}{
		{"none", nil, nil, line{}},
		{"one point: flat", []float64{3}, []float64{7}, line{a: 7}},
		{"exact", []float64{3, 25, 50}, []float64{1 + 0.5*3, 1 + 0.5*25, 1 + 0.5*50}, line{a: 1, b: 0.5}},
		{"same x: the mean", []float64{4, 4}, []float64{1, 3}, line{a: 2}},
		{"falling: the mean, not a line to nothing", []float64{3, 15, 35}, []float64{0.38, 0.74, 0.2}, line{a: 0.44}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fit(tc.xs, tc.ys)
			if math.Abs(got.a-tc.want.a) > 1e-9 || math.Abs(got.b-tc.want.b) > 1e-9 {
				t.Fatalf("fit = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The model of the write rate: the cost of a write (1/rate) is the line,
// so a rate that halves from 3 to 25 peers keeps falling as 1/n, not
// below zero; the other figures are lines, cut at zero.
func TestModel_extrapolates_cost_not_rate(t *testing.T) {
	points := []Point{
		{Peers: 3, WritesPerSec: 1000, LeaderIdleCores: 0.03, PeerRSSMedian: 40 << 20, NotReady: 2 * time.Second},
		{Peers: 25, WritesPerSec: 500, LeaderIdleCores: 0.14, PeerRSSMedian: 62 << 20, NotReady: 2 * time.Second},
	}
	m := NewModel(points)
	for _, tc := range []struct {
		n                int
		rate, cores, rss float64
	}{
		{3, 1000, 0.03, 40},
		{25, 500, 0.14, 62},
		{1000, 1 / (0.001 + 0.001/22*997), 0.03 + 0.005*997, 40 + 997},
	} {
		p := m.At(tc.n)
		if math.Abs(p.WritesPerSec-tc.rate)/tc.rate > 1e-6 || math.Abs(p.LeaderIdleCores-tc.cores) > 1e-6 || math.Abs(float64(p.PeerRSSMedian>>20)-tc.rss) > 1 {
			t.Errorf("At(%d) = %.3f writes/s, %.4f cores, %d MB; want %.3f, %.4f, %.0f", tc.n, p.WritesPerSec, p.LeaderIdleCores, p.PeerRSSMedian>>20, tc.rate, tc.cores, tc.rss)
		}
		if p.NotReady != 2*time.Second {
			t.Errorf("At(%d): not ready %s, want the flat 2s", tc.n, p.NotReady)
		}
	}
}

func TestTable_marks_the_model(t *testing.T) {
	points := []Point{{Peers: 3, WritesPerSec: 1000, DeployP99: time.Second}, {Peers: 25, WritesPerSec: 800, DeployP99: 2 * time.Second}}
	var b strings.Builder
	Table(&b, points, []int{1000})
	out := b.String()
	for _, want := range []string{fmt.Sprintf("%-9s %6d", "measured", 3), fmt.Sprintf("%-9s %6d", "measured", 25), fmt.Sprintf("%-9s %6d", "model", 1000), "(0.80)", "(2.00)", "not what a fleet that large does"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	Table(&b, points[:1], []int{1000})
	if strings.Contains(b.String(), "model") {
		t.Errorf("one point makes no model:\n%s", b.String())
	}
}
