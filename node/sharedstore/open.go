package sharedstore

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/node/diskbudget"
)

// Open returns the store of a host whose hypervisor is d, with its folders
// under dir, or why this host offers no shared storage: a hypervisor that
// cannot give guests a host folder (no virtio-9p in libvirt's QEMU), or a
// host where svc cannot keep them (not root, tools missing).
func Open(ctx context.Context, d hypervisor.Driver, dir string, disk *diskbudget.Budget, log *slog.Logger) (*Store, error) {
	sd, ok := d.(hypervisor.SharedDirs)
	if !ok {
		return nil, errors.New("the hypervisor gives guests no host folders")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := sd.CanShareDirs(ctx); err != nil {
		return nil, err
	}
	uid, gid := sd.SharedDirOwner()
	s := New(Config{Dir: dir, UID: uid, GID: gid, Disk: disk, Log: log})
	if err := s.Probe(); err != nil {
		return nil, err
	}
	return s, nil
}
