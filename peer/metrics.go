package peer

import "github.com/prometheus/client_golang/prometheus"

// peerMetrics are the peer's own figures, beside Raft's, the API's, the host
// agent's and the job manager's.
type peerMetrics struct {
	caughtUp     prometheus.GaugeFunc
	blobsFetched prometheus.CounterFunc
}

func newPeerMetrics(p *Peer) *peerMetrics {
	m := &peerMetrics{
		caughtUp: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "svc_replica_caught_up",
			Help: "1 once this peer's replica has caught up with the cluster since its start (it serves and runs VMs from then on).",
		}, func() float64 {
			if p.caught.CaughtUp() {
				return 1
			}
			return 0
		}),
		blobsFetched: prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "svc_image_fetched_bytes_total",
			Help: "Bytes of image blobs this peer received from other peers (a first deploy of an image here, a cache job's copy).",
		}, func() float64 { return float64(p.images.FetchedBytes() + p.swarm.FetchedBytes()) }),
	}
	p.reg.MustRegister(m.caughtUp, m.blobsFetched)
	return m
}
