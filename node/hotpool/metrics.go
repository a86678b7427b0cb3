package hotpool

import (
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	claims      *prometheus.CounterVec
	fills       *prometheus.CounterVec
	fillSeconds prometheus.Histogram
	yielded     prometheus.Counter
}

// newMetrics registers the pool's metrics; the pool's size is read from p
// at each scrape.
func newMetrics(r prometheus.Registerer, p *Pool) *metrics {
	m := &metrics{
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_hot_claims_total",
			Help: "Deploys that claimed a hot guest of this node, by result: claimed (handed over), missed (the guest was gone: the VM started without it) or failed (the hand-over failed: the guest was destroyed and the VM started without it).",
		}, []string{"result"}),
		fills: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_hot_fills_total",
			Help: "Hot guests this node restored for its pools, by result: ready or failed.",
		}, []string{"result"}),
		fillSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "svc_hot_fill_seconds",
			Help:    "How long restoring a hot guest took, from its template to ready (its identity made).",
			Buckets: []float64{0.5, 1, 2, 4, 8, 16, 32, 64},
		}),
		yielded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "svc_hot_yielded_total",
			Help: "Free hot guests this node destroyed to give their disk back: to work that needed the room, or because the disk or the namespace's disk quota was past its bound.",
		}),
	}
	size := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "svc_hot_guests",
		Help: "Hot guests this node holds ready (free, or claimed and not yet handed over).",
	}, func() float64 {
		p.mu.Lock()
		defer p.mu.Unlock()
		return float64(len(p.ready))
	})
	r.MustRegister(m.claims, m.fills, m.fillSeconds, m.yielded, size)
	return m
}
