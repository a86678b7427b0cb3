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

// expireVMs deletes the VMs past their expiry, every ExpiryInterval, until
// ctx (the term) ends.
func (l *Leader) expireVMs(ctx context.Context) {
	tick := time.NewTicker(ExpiryInterval)
	defer tick.Stop()
	for {
		for _, vm := range l.cfg.FSM.ExpiredVMs(time.Now()) {
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := l.cfg.Raft.ApplyCommand(dctx, raftfsm.TypeVMDelete, raftfsm.VMDelete{Namespace: vm.Namespace, Name: vm.Name, UID: vm.UID})
			cancel()
			switch {
			case err == nil:
				l.cfg.Log.Info("vm expired: deleted", "vm", vm.Namespace+"/"+vm.Name, "expiredAt", vm.ExpiresAt, "owner", vm.Owner)
			case errors.Is(err, raftfsm.ErrNotFound):
			case ctx.Err() == nil:
				l.cfg.Log.Warn("delete an expired vm", "vm", vm.Namespace+"/"+vm.Name, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
