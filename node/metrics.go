package node

import "github.com/prometheus/client_golang/prometheus"

// peerMetrics are the peer's own figures, beside Raft's and the API's.
type peerMetrics struct {
	reconcilePasses *prometheus.CounterVec
	vmRuns          *prometheus.CounterVec
	caughtUp        prometheus.GaugeFunc
	pulledChunks    *prometheus.CounterVec
}

func newPeerMetrics(p *Peer) *peerMetrics {
	m := &peerMetrics{
		reconcilePasses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_vm_reconcile_passes_total",
			Help: "Passes of the VM reconciler, by result: done, failed, or waiting (the replica has not caught up since the start, so it touched nothing).",
		}, []string{"result"}),
		vmRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_vm_worker_runs_total",
			Help: "Runs of the per-VM workers that converge domains, by result: ok, retry (tried again on the next pass) or failed (the VM is Failed).",
		}, []string{"result"}),
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
	p.reg.MustRegister(m.reconcilePasses, m.vmRuns, m.caughtUp, m.pulledChunks)
	return m
}
