package audit

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svc-project/svc/raftfsm"
)

// Proposer writes audit entries through Raft (on the leader, from any
// peer): tokens are the bearer tokens of the entries' requests, one per
// entry ("" for none), which the leader checks against each entry's
// subject and never writes anywhere.
type Proposer interface {
	AppendAudit(ctx context.Context, c raftfsm.AuditAppend, tokens []string) error
}

// pending is an entry waiting for its batch, with the token its request
// carried.
type pending struct {
	e     raftfsm.AuditEntry
	token string
}

// Bounds of a recorder.
const (
	// buffered is how many entries wait for a batch before new ones drop.
	buffered = 10_000
	// flushEvery is the longest an entry waits for its batch.
	flushEvery = 500 * time.Millisecond
	// proposeTimeout bounds one batch's write, lastFlushTimeout the last
	// one as the peer stops.
	proposeTimeout   = 10 * time.Second
	lastFlushTimeout = 2 * time.Second
)

// Recorder batches audit entries into the replicated log.
type Recorder struct {
	in      chan pending
	keep    int
	prop    Proposer
	log     *slog.Logger
	dropped prometheus.Counter
	written prometheus.Counter
}

// New returns a recorder whose batches ask the log to keep its last keep
// entries.
func New(prop Proposer, keep int, log *slog.Logger, reg prometheus.Registerer) *Recorder {
	r := &Recorder{
		in: make(chan pending, buffered), keep: keep, prop: prop, log: log,
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "svc_audit_dropped_total", Help: "Audit entries this peer dropped: its buffer was full, or the cluster refused their batch."}),
		written: prometheus.NewCounter(prometheus.CounterOpts{Name: "svc_audit_written_total", Help: "Audit entries this peer wrote to the replicated audit log."}),
	}
	reg.MustRegister(r.dropped, r.written)
	return r
}

// Keep is how many entries the log keeps, as this peer is configured (the
// leader's bound is the one that counts).
func (r *Recorder) Keep() int { return r.keep }

// Record queues an entry of a request this peer received, with the bearer
// token the request carried ("" for none: the leader then keeps the entry
// with the calls that carried no valid token, unless its subject is this
// peer's root); it never blocks.
func (r *Recorder) Record(e raftfsm.AuditEntry, token string) {
	select {
	case r.in <- pending{e, token}:
	default:
		r.dropped.Inc()
	}
}

// Run writes the queued entries in batches until ctx ends, then writes
// what is left within a bound. A batch goes when it is full, or at the
// tick with every entry queued by then (up to a batch).
func (r *Recorder) Run(ctx context.Context) {
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	var batch []pending
	for {
		select {
		case e := <-r.in:
			batch = append(batch, e)
			if len(batch) < raftfsm.MaxAuditBatch {
				continue
			}
		case <-tick.C:
			batch = r.take(batch)
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lastFlushTimeout)
			r.flush(fctx, r.take(batch))
			cancel()
			return
		}
		batch = r.flush(ctx, batch)
	}
}

// take adds the entries queued now to batch, up to a batch's worth.
func (r *Recorder) take(batch []pending) []pending {
	for len(batch) < raftfsm.MaxAuditBatch {
		select {
		case e := <-r.in:
			batch = append(batch, e)
		default:
			return batch
		}
	}
	return batch
}

// flush writes batch and returns what is left to write: nothing, or the
// batch again when the write failed for a passing reason (no leader), at
// most a batch's worth.
func (r *Recorder) flush(ctx context.Context, batch []pending) []pending {
	if len(batch) == 0 {
		return batch
	}
	pctx, cancel := context.WithTimeout(ctx, proposeTimeout)
	defer cancel()
	c := raftfsm.AuditAppend{Entries: make([]raftfsm.AuditEntry, len(batch)), Keep: r.keep}
	tokens := make([]string, len(batch))
	for i, p := range batch {
		c.Entries[i], tokens[i] = p.e, p.token
	}
	err := r.prop.AppendAudit(pctx, c, tokens)
	if err == nil {
		r.written.Add(float64(len(batch)))
		return batch[:0]
	}
	r.log.Warn("write audit entries; trying again", "entries", len(batch), "err", err)
	if len(batch) >= raftfsm.MaxAuditBatch {
		r.dropped.Add(float64(len(batch)))
		return batch[:0]
	}
	return batch
}
