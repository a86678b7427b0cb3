package jobs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/auth"
	"github.com/svc-project/svc/imagestore/ocidisk"
	"github.com/svc-project/svc/internal/netgate"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/scheduler"
)

// Jobs (pushes and pulls) are recorded by the leader with the peer that
// carries them out; that peer's job loop runs them and reports progress
// through the leader. A job of a peer that restarts is run again (a push
// sends only the chunks the registry lacks); one whose peer is NOT READY is
// marked Failed by the leader; ended jobs are forgotten after jobRetention.

const (
	// jobRetention is how long an ended job stays listed.
	jobRetention = time.Hour
	// jobTimeout bounds one run of a job.
	jobTimeout = 2 * time.Hour
	// jobReportEvery spaces progress reports.
	jobReportEvery = 2 * time.Second
)

// CreateJob names a job, picks its peer and records it (on the leader).
func (m *Manager) CreateJob(ctx context.Context, j raftfsm.Job) (raftfsm.Job, error) {
	f := m.cfg.FSM
	prefix := ""
	switch {
	case j.Type == raftfsm.JobCache:
		return m.recordJob(ctx, j, j.Type+"-"+truncate(j.Image, 40))
	case j.Type == raftfsm.JobPull:
		// This peer (the leader) pulls, unless it is not READY.
		var names []string
		for _, n := range f.Nodes() {
			names = append(names, n.Name)
		}
		var ok bool
		if j.Node, ok = scheduler.JobPeer(m.cfg.Name, names, m.ready); !ok {
			return raftfsm.Job{}, fmt.Errorf("no peer is READY to pull: %w", raftfsm.ErrConflict)
		}
		prefix = j.Type + "-" + truncate(j.Image, 40)
	case j.VM != "":
		vm, ok := f.VM(j.Namespace, j.VM)
		if !ok {
			return raftfsm.Job{}, fmt.Errorf("vm %q not found: %w", j.VM, raftfsm.ErrNotFound)
		}
		j.Node, j.Kind = vm.Node, raftfsm.KindImage
		prefix = j.Type + "-" + truncate(j.VM, 40)
	case j.Image != "":
		img, ok := f.Image(j.Namespace, j.Image)
		if !ok {
			return raftfsm.Job{}, fmt.Errorf("image %q not found: %w", j.Image, raftfsm.ErrNotFound)
		}
		if !img.Usable() {
			return raftfsm.Job{}, fmt.Errorf("image %q has no content (%s): %w", j.Image, img.State, raftfsm.ErrConflict)
		}
		b, _ := f.Blob(img.Digest)
		if j.Node, ok = scheduler.JobPeer("", b.Holders, m.ready); !ok {
			return raftfsm.Job{}, fmt.Errorf("no READY peer holds image %q: %w", j.Image, raftfsm.ErrConflict)
		}
		prefix = j.Type + "-" + truncate(j.Image, 40)
	}
	// A registry this cluster may not contact is refused now (403), before
	// any connection, not when the job runs.
	if _, err := m.registryFor(ctx, j.Namespace, j.Reference, j.Type == raftfsm.JobPush); err != nil {
		return raftfsm.Job{}, err
	}
	return m.recordJob(ctx, j, prefix)
}

// nameTries bounds the names a job create tries: a generated name (five
// random characters) may, rarely, be one a job of the namespace has.
const nameTries = 8

// recordJob names j after prefix and records it, with another name while the
// one drawn is taken.
func (m *Manager) recordJob(ctx context.Context, j raftfsm.Job, prefix string) (raftfsm.Job, error) {
	j.StartTime = time.Now().UTC().Truncate(time.Second)
	var err error
	for range nameTries {
		j.Name = api.GenerateName(prefix)
		var v any
		if v, err = m.cfg.Proposer.Apply(ctx, raftfsm.TypeJobCreate, raftfsm.JobCreate{Job: j}); err == nil {
			return *v.(*raftfsm.Job), nil
		}
		if !errors.Is(err, raftfsm.ErrAlreadyExists) {
			return raftfsm.Job{}, err
		}
	}
	return raftfsm.Job{}, err
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// jobLoop runs this peer's jobs, at most MaxJobs at once; the others wait
// (Pending), oldest first, so that a flood of jobs costs a queue, not a
// goroutine and buffers each.
func (m *Manager) jobLoop() {
	running := map[string]bool{}
	ended := make(chan string)
	tick := time.NewTicker(m.cfg.Interval)
	defer tick.Stop()
	for {
		changed := m.cfg.FSM.Watch(raftfsm.ResourceTopic(raftfsm.ResourceJob))
		if m.cfg.Ready.CaughtUp() && len(running) < m.cfg.MaxJobs {
			for _, j := range m.queuedJobs(running) {
				if len(running) >= m.cfg.MaxJobs {
					break
				}
				k := j.Namespace + "/" + j.Name
				running[k] = true
				m.wg.Go(func() {
					m.runJob(j)
					select {
					case ended <- k:
					case <-m.ctx.Done():
					}
				})
			}
		}
		select {
		case <-m.ctx.Done():
			return
		case k := <-ended:
			delete(running, k)
		case <-changed:
		case <-tick.C:
		}
	}
}

// queuedJobs are this peer's jobs that have not ended and do not run here,
// those that ran before a restart first, then oldest first.
func (m *Manager) queuedJobs(running map[string]bool) []raftfsm.Job {
	var out []raftfsm.Job
	for _, j := range m.cfg.FSM.Jobs("") {
		if j.Ended() || running[j.Namespace+"/"+j.Name] {
			continue
		}
		if t, ok := m.myTarget(j); j.Node == m.cfg.Name || (ok && !t.Ended()) {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b raftfsm.Job) int {
		if ra, rb := a.State == raftfsm.JobRunning, b.State == raftfsm.JobRunning; ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.CreateIndex, b.CreateIndex), a.StartTime.Compare(b.StartTime),
			strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name))
	})
	return out
}

// runJob carries a job out and reports how it ended.
func (m *Manager) runJob(j raftfsm.Job) {
	log := m.cfg.Log.With("job", j.Namespace+"/"+j.Name, "type", j.Type, "reference", j.Reference)
	ctx, cancel := context.WithTimeout(m.ctx, jobTimeout)
	defer cancel()
	rep := &jobReporter{m: m, j: j, state: raftfsm.JobRunning}
	if j.Type == raftfsm.JobCache {
		rep.target = m.cfg.Name
	}
	rep.send(ctx, true)
	msg, err := m.doJob(ctx, j, rep)
	if m.ctx.Err() != nil {
		return // the peer stops: the job runs again when it is back
	}
	rep.state, rep.message = raftfsm.JobSucceeded, msg
	if err != nil {
		rep.state, rep.message = raftfsm.JobFailed, ocidisk.Reason(err)
		log.Warn("job failed", "err", err)
	} else {
		log.Info("job done", "message", msg)
	}
	rctx, rcancel := context.WithTimeout(m.ctx, 30*time.Second)
	defer rcancel()
	rep.send(rctx, true)
}

func (m *Manager) doJob(ctx context.Context, j raftfsm.Job, rep *jobReporter) (string, error) {
	switch j.Type {
	case raftfsm.JobPush:
		return m.push(ctx, j, rep)
	case raftfsm.JobPull:
		return m.pullJob(ctx, j, rep.progress(ctx))
	case raftfsm.JobCache:
		return m.cache(ctx, j, rep)
	}
	return "", fmt.Errorf("job type %q is not carried out by this version", j.Type)
}

// jobReporter sends a job's progress through the leader, at most every
// jobReportEvery.
type jobReporter struct {
	m              *Manager
	j              raftfsm.Job
	state, message string
	done, total    int64
	stoppedVM      bool
	last           time.Time
	target         string // a cache job's node whose part this reports
}

func (r *jobReporter) progress(ctx context.Context) ocidisk.Progress {
	return func(done, total int64) {
		r.done, r.total = done, total
		r.send(ctx, false)
	}
}

func (r *jobReporter) send(ctx context.Context, always bool) {
	if !always && time.Since(r.last) < jobReportEvery {
		return
	}
	if err := r.apply(ctx); err != nil && !errors.Is(err, raftfsm.ErrConflict) {
		r.m.cfg.Log.Warn("report job progress", "job", r.j.Name, "err", err)
	}
}

func (r *jobReporter) apply(ctx context.Context) error {
	r.last = time.Now()
	_, err := r.m.cfg.Proposer.Apply(ctx, raftfsm.TypeJobUpdate, raftfsm.JobUpdate{
		Namespace: r.j.Namespace, Name: r.j.Name, State: r.state, BytesDone: r.done, BytesTotal: r.total,
		Message: r.message, Time: time.Now().UTC().Truncate(time.Second), StoppedVM: r.stoppedVM, Target: r.target,
	})
	return err
}

// markStoppedVM records on the job, before the push stops its VM, that it
// does: a run after a crash then knows to start the VM again.
func (r *jobReporter) markStoppedVM(ctx context.Context) error {
	r.stoppedVM = true
	if err := r.apply(ctx); err != nil {
		return fmt.Errorf("record that the push stops the VM: %w", err)
	}
	return nil
}

// registryFor returns how to reach a reference's registry with the
// namespace's credential for it (none: anonymous).
func (m *Manager) registryFor(ctx context.Context, ns, reference string, latest bool) (ocidisk.Registry, error) {
	ref, err := ocidisk.ParseReference(reference, false, latest)
	if err != nil {
		return ocidisk.Registry{}, err
	}
	server := ref.Context().RegistryStr()
	if netgate.Check(m.cfg.Gate, server) != nil {
		return ocidisk.Registry{}, fmt.Errorf("%w: this peer may not reach registry %s", ocidisk.ErrUnreachable, server)
	}
	if err := m.cfg.Egress.CheckRegistry(ctx, server); err != nil {
		return ocidisk.Registry{}, err
	}
	reg := ocidisk.Registry{Egress: m.cfg.Egress}
	c, ok := m.cfg.FSM.RegistryCredential(ns, server)
	if !ok {
		return reg, nil
	}
	pw, err := auth.Unseal(m.cfg.Keys.SealKey(), c.SealedPassword, auth.RegistryCredentialAAD(ns, server))
	if err != nil {
		return ocidisk.Registry{}, fmt.Errorf("the credential for %s: %w", server, err)
	}
	reg.Username, reg.Password, reg.Insecure = c.Username, string(pw), c.AllowInsecure
	return reg, nil
}

// ready says whether node is READY.
func (m *Manager) ready(node string) bool {
	ready, _ := m.cfg.FSM.NodeReady(node)
	return ready
}

// lostNode says whether work on node can no longer go on: the node is NOT
// READY, or gone (it left the cluster).
func (m *Manager) lostNode(node string) (lost, gone bool) {
	ready, known := m.cfg.FSM.NodeReady(node)
	return !ready, !known
}

// failPart records a job failed, or (for a cache job) its target on node,
// with what it had done and why.
func (m *Manager) failPart(ctx context.Context, j raftfsm.Job, target string, done, total int64, why string, now time.Time) error {
	_, err := m.cfg.Proposer.Apply(ctx, raftfsm.TypeJobUpdate, raftfsm.JobUpdate{
		Namespace: j.Namespace, Name: j.Name, Target: target, State: raftfsm.JobFailed, BytesDone: done, BytesTotal: total,
		Message: why, Time: now.UTC().Truncate(time.Second),
	})
	return err
}

// ReconcileJobs (leader) fails the unended jobs of peers that are NOT READY
// or gone and forgets jobs that ended over jobRetention ago.
func (m *Manager) ReconcileJobs(ctx context.Context) error {
	var errs []error
	now := time.Now()
	for _, j := range m.cfg.FSM.Jobs("") {
		switch {
		case j.Ended() && j.CompletionTime != nil && now.Sub(*j.CompletionTime) > jobRetention:
			_, err := m.cfg.Proposer.Apply(ctx, raftfsm.TypeJobDelete, raftfsm.JobDelete{Namespace: j.Namespace, Name: j.Name})
			errs = append(errs, err)
		case !j.Ended() && j.Type == raftfsm.JobCache:
			errs = append(errs, m.failLostTargets(ctx, j, now))
		case !j.Ended():
			lost, gone := m.lostNode(j.Node)
			if !lost {
				continue
			}
			why := fmt.Sprintf("peer %s, which carried the job out, is NOT READY", j.Node)
			if gone {
				why = fmt.Sprintf("peer %s, which carried the job out, left the cluster", j.Node)
			}
			errs = append(errs, m.failPart(ctx, j, "", j.BytesDone, j.BytesTotal, why, now))
		}
	}
	return errors.Join(slices.DeleteFunc(errs, func(e error) bool {
		return e == nil || errors.Is(e, raftfsm.ErrConflict) || errors.Is(e, raftfsm.ErrNotFound)
	})...)
}
