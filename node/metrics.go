package node

import "github.com/prometheus/client_golang/prometheus"

// peerMetrics are the peer's own figures, beside Raft's, the API's and the
// host agent's.
type peerMetrics struct {
	caughtUp     prometheus.GaugeFunc
	pulledChunks *prometheus.CounterVec
}

func newPeerMetrics(p *Peer) *peerMetrics {
	m := &peerMetrics{
		caughtUp: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "svc_replica_caught_up",
			Help: "1 once this peer's replica has caught up with the cluster since its start (it serves and runs VMs from then on).",
		}, func() float64 {
			if p.CaughtUp() {
				return 1
			}
			return 0
		}),
		pulledChunks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_pull_chunks_total",
			Help: "Chunks of the svc disks this peer pulled, by where each came from: registry, local (a disk this peer holds) or resumed (written by an earlier, interrupted pull).",
		}, []string{"from"}),
	}
	p.reg.MustRegister(m.caughtUp, m.pulledChunks)
	return m
}
