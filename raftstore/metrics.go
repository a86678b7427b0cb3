package raftstore

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type storeMetrics struct {
	applyDuration prometheus.Histogram
	leaderChanges prometheus.Counter
}

func newStoreMetrics() *storeMetrics {
	return &storeMetrics{
		applyDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "svc_raft_apply_duration_seconds",
			Help:    "Time from proposing a command on the leader to its being applied.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "svc_raft_leader_changes_total",
			Help: "Leader changes this peer observed.",
		}),
	}
}

var (
	descState = prometheus.NewDesc("svc_raft_state", "Raft state of this peer (1 for the current one).", []string{"state"}, nil)
	descTerm  = prometheus.NewDesc("svc_raft_term", "Current Raft term.", nil, nil)
	descIndex = prometheus.NewDesc("svc_raft_index", "Raft log indexes.", []string{"kind"}, nil)
	descPeers = prometheus.NewDesc("svc_raft_other_voters", "Voters in the Raft configuration other than this peer.", nil, nil)
	descLast  = prometheus.NewDesc("svc_raft_last_contact_seconds", "Seconds since this follower last heard from the leader (0 on the leader).", nil, nil)
	descFSM   = prometheus.NewDesc("svc_raft_fsm_pending", "Committed entries waiting to be applied.", nil, nil)
)

// Describe implements prometheus.Collector.
func (s *Store) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descState, descTerm, descIndex, descPeers, descLast, descFSM} {
		ch <- d
	}
	s.m.applyDuration.Describe(ch)
	s.m.leaderChanges.Describe(ch)
}

// Collect implements prometheus.Collector from raft's Stats.
func (s *Store) Collect(ch chan<- prometheus.Metric) {
	st := s.raft.Stats()
	num := func(k string) float64 {
		v, _ := strconv.ParseFloat(st[k], 64)
		return v
	}
	for _, name := range []string{"Follower", "Candidate", "Leader", "Shutdown"} {
		v := 0.0
		if st["state"] == name {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descState, prometheus.GaugeValue, v, name)
	}
	ch <- prometheus.MustNewConstMetric(descTerm, prometheus.GaugeValue, num("term"))
	for _, k := range []string{"last_log_index", "commit_index", "applied_index", "last_snapshot_index"} {
		ch <- prometheus.MustNewConstMetric(descIndex, prometheus.GaugeValue, num(k), k)
	}
	ch <- prometheus.MustNewConstMetric(descPeers, prometheus.GaugeValue, num("num_peers"))
	last := 0.0
	if d, err := time.ParseDuration(st["last_contact"]); err == nil {
		last = d.Seconds()
	}
	ch <- prometheus.MustNewConstMetric(descLast, prometheus.GaugeValue, last)
	ch <- prometheus.MustNewConstMetric(descFSM, prometheus.GaugeValue, num("fsm_pending"))
	s.m.applyDuration.Collect(ch)
	s.m.leaderChanges.Collect(ch)
}
