package runnerpool

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svc-project/svc/raftfsm"
)

// Metrics are the pools' figures on /metrics, set at each pass of the
// leader (the other peers report none).
type Metrics struct {
	jobs   *prometheus.GaugeVec
	starts *prometheus.GaugeVec
}

// NewMetrics registers the pools' metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		jobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "svc_runnerpool_jobs", Help: "Jobs of a runner pool by state (queued, starting, running, completed, done)."},
			[]string{"namespace", "pool", "state"}),
		starts: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "svc_runnerpool_start_seconds", Help: "Seconds from a job's queued event to its runner starting, at the quantile, over the jobs the pool keeps."},
			[]string{"namespace", "pool", "quantile"}),
	}
	reg.MustRegister(m.jobs, m.starts)
	return m
}

func (m *Metrics) observe(f *raftfsm.FSM) {
	m.jobs.Reset()
	m.starts.Reset()
	for _, p := range f.RunnerPools("") {
		jobs := f.RunnerJobs(p.Namespace, p.Name)
		for _, st := range []string{raftfsm.RunnerJobQueued, raftfsm.RunnerJobStarting, raftfsm.RunnerJobRunning, raftfsm.RunnerJobCompleted, raftfsm.RunnerJobDone} {
			n := 0
			for _, j := range jobs {
				if j.State == st {
					n++
				}
			}
			m.jobs.WithLabelValues(p.Namespace, p.Name, st).Set(float64(n))
		}
		p50, p95 := raftfsm.RunnerStarts(jobs)
		m.starts.WithLabelValues(p.Namespace, p.Name, "0.5").Set(p50)
		m.starts.WithLabelValues(p.Namespace, p.Name, "0.95").Set(p95)
	}
}
