package leader

import (
	"context"
	"errors"
	"time"

	"github.com/svc-project/svc/raftfsm"
)

// ExpiryInterval is how often the leader looks for VMs past their
// time-to-live: a VM is deleted at most this long (and a Raft write) after
// it expired, and a new leader picks up where the last one was.
const ExpiryInterval = time.Second

// expireVMs deletes, every ExpiryInterval until ctx (the term) ends, the
// VMs past their expiry and those whose deploy gave up on them before they
// ran (a deploy removes its own failed VM; this is for one whose leader was
// deposed while it waited, and could not).
func (l *Leader) expireVMs(ctx context.Context) {
	tick := time.NewTicker(ExpiryInterval)
	defer tick.Stop()
	for {
		now := time.Now()
		for _, vm := range l.cfg.FSM.ExpiredVMs(now) {
			l.deleteVM(ctx, vm, false, "vm expired: deleted", "expiredAt", vm.ExpiresAt)
		}
		for _, vm := range l.cfg.FSM.StaleDeploys(now) {
			l.deleteVM(ctx, vm, true, "vm of a failed deploy: deleted", "deployBy", vm.DeployBy)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// deleteVM deletes vm (this very VM: its UID; with unrun only if it has not
// run since) and logs why.
func (l *Leader) deleteVM(ctx context.Context, vm raftfsm.VM, unrun bool, why, key string, at *time.Time) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err := l.cfg.Raft.ApplyCommand(dctx, raftfsm.TypeVMDelete, raftfsm.VMDelete{Namespace: vm.Namespace, Name: vm.Name, UID: vm.UID, Unrun: unrun})
	cancel()
	switch {
	case err == nil:
		l.cfg.Log.Info(why, "vm", vm.Namespace+"/"+vm.Name, key, at, "owner", vm.Owner)
	case errors.Is(err, raftfsm.ErrNotFound), unrun && errors.Is(err, raftfsm.ErrConflict): // gone, or it ran meanwhile
	case ctx.Err() == nil:
		l.cfg.Log.Warn("delete a vm: "+why, "vm", vm.Namespace+"/"+vm.Name, "err", err)
	}
}
