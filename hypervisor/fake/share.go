package fake

import (
	"context"
	"errors"
	"os"
	"sync"

	"github.com/svc-project/svc/hypervisor"
)

var _ hypervisor.SharedDirs = (*Driver)(nil)

// errFakeNoShare is what a fake set without shared folders answers.
var errFakeNoShare = errors.New("the fake hypervisor was set without shared folders")

// sharing is the fake's SharedDirs role: whether it gives guests host
// folders (a domain's shared folder is its spec's SharedDir).
type sharing struct {
	mu      sync.Mutex
	noShare bool
}

// CanShareDirs answers nil unless SetShareDirs(false) was called.
func (f *sharing) CanShareDirs(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noShare {
		return errFakeNoShare
	}
	return nil
}

// SharedDirOwner is this process's user.
func (f *sharing) SharedDirOwner() (uid, gid int) { return os.Getuid(), os.Getgid() }

// SetShareDirs says whether the fake can give guests host folders.
func (f *sharing) SetShareDirs(can bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noShare = !can
}
