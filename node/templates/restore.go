package templates

import (
	"context"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
)

// clockWait bounds the wait for a restored guest's agent to set its clock.
const clockWait = 3 * time.Second

// Restore starts the new VM vm as domain spec from a ready template of its
// shape, and reports whether it did. false with no template of the shape,
// or when the restore failed: the template is then dropped (a later pass
// builds it again) and the caller boots the VM. A restore never fails the
// VM; only a canceled ctx is an error.
func (m *Manager) Restore(ctx context.Context, vm raftfsm.VM, spec hypervisor.Spec) (bool, error) {
	sh, ok := vm.Shape()
	if !ok {
		return false, nil
	}
	return m.RestoreShape(ctx, sh.Key(), spec, vm.Namespace+"/"+vm.Name)
}

// RestoreShape starts domain spec from the ready template of shape key (a
// VM, or a hot guest: who names it in the log), as Restore does.
func (m *Manager) RestoreShape(ctx context.Context, key string, spec hypervisor.Spec, who string) (bool, error) {
	if m == nil || m.mem == nil {
		return false, nil
	}
	m.mu.Lock()
	e := m.ready[key]
	if e == nil || e.broken {
		m.mu.Unlock()
		return false, nil
	}
	e.users++
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		e.users--
		m.mu.Unlock()
	}()
	start := time.Now()
	err := m.checkMemory(e)
	if err == nil {
		err = m.mem.RestoreAs(ctx, m.domain(key), spec)
	}
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		m.metrics.restores.WithLabelValues("failed").Inc()
		m.cfg.Log.Warn("a template failed to restore; dropping it, the VM boots", "key", key, "vm", who, "err", err)
		m.mu.Lock()
		e.broken = true
		m.mu.Unlock()
		m.fail(key, err) // built again after a wait, not at once
		m.kick()
		return false, nil
	}
	m.metrics.restores.WithLabelValues("restored").Inc()
	// The guest's clock ran on from the template's save: its agent sets it.
	clock, restored := "set", time.Since(start)
	if err := hypervisor.SyncGuestClock(ctx, m.cfg.Driver, spec.Name, clockWait); err != nil {
		clock = "not set: " + err.Error()
	}
	m.cfg.Log.Info("restored from a template", "vm", who, "key", key, "took", time.Since(start).Round(time.Millisecond),
		"restore", restored.Round(time.Millisecond), "clock", clock)
	return true, nil
}
