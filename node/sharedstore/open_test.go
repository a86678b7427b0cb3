package sharedstore

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/fake"
)

// A host offers shared storage only when its hypervisor can give guests a
// host folder; Open says why not, and otherwise owns the folders as the
// hypervisor's user.
func TestOpen_cases(t *testing.T) {
	can, cannot := fake.New("p"), fake.New("p")
	cannot.SetShareDirs(false)
	for _, c := range []struct {
		name    string
		driver  hypervisor.Driver
		wantErr string
	}{
		{name: "no hypervisor", driver: nil, wantErr: "gives guests no host folders"},
		{name: "a hypervisor that cannot share", driver: cannot, wantErr: "without shared folders"},
		{name: "one that can", driver: can},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Open(context.Background(), c.driver, filepath.Join(t.TempDir(), "shared"), nil, nil)
			switch {
			case c.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Open: %v, want %q", err, c.wantErr)
				}
			case err != nil && strings.Contains(err.Error(), "not root"):
				t.Skip(err)
			case err != nil:
				t.Fatal(err)
			default:
				uid, gid := can.SharedDirOwner()
				if s.cfg.UID != uid || s.cfg.GID != gid {
					t.Fatalf("owner %d:%d, want the hypervisor's %d:%d", s.cfg.UID, s.cfg.GID, uid, gid)
				}
			}
		})
	}
}
