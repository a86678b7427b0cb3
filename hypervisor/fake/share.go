package fake

import (
	"context"
	"errors"
	"os"

	"github.com/svc-project/svc/hypervisor"
)

var _ hypervisor.SharedDirs = (*Driver)(nil)

// errFakeNoShare is what a fake set without shared folders answers.
var errFakeNoShare = errors.New("the fake hypervisor was set without shared folders")

// CanShareDirs answers nil unless SetShareDirs(false) was called. A domain's
// shared folder is its spec's SharedDir (Spec).
func (f *Driver) CanShareDirs(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noShare {
		return errFakeNoShare
	}
	return nil
}

// SharedDirOwner is this process's user.
func (f *Driver) SharedDirOwner() (uid, gid int) { return os.Getuid(), os.Getgid() }

// SetShareDirs says whether the fake can give guests host folders.
func (f *Driver) SetShareDirs(can bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noShare = !can
}
