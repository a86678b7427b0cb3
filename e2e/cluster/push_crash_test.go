package cluster

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/raftfsm"
)

// A push whose host is killed while it reads the VM's disk runs again when
// the host is back, and leaves the VM as its user had it: a running VM
// (which the push stopped) runs again, a VM its user had stopped stays
// stopped.
func TestPushVM_host_crash_leaves_the_vm_as_its_user_had_it(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop bool
		want string
	}{
		{"running", false, raftfsm.VMRunning},
		{"stopped by its user", true, raftfsm.VMStopped},
	} {
		t.Run(tc.name, func(t *testing.T) { pushThroughCrash(t, tc.stop, tc.want) })
	}
}

func pushThroughCrash(t *testing.T, stop bool, want string) {
	reg, c, host, other := crashScene(t)
	cl := c.Client(other)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	data := make([]byte, 2<<20)
	_, _ = rand.Read(data[:1<<20])
	disk := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(disk, data, 0o600); err != nil {
		t.Fatal(err)
	}
	kit.Upload(t, cl, "disk", disk)
	if _, err := cl.SetRegistryCredential(ctx, kit.NS, api.RegistryCredentialRequest{Server: reg.Host, Username: reg.Username, Password: reg.Password, AllowInsecure: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.DeployVM(ctx, kit.NS, api.DeployRequest{Name: "quiet", Image: "disk", Node: host.Name, CPU: kit.Intp(1), Memory: kit.Floatp(0.5)}); err != nil {
		t.Fatal(err)
	}
	if stop {
		if vm, err := cl.ExecVM(ctx, kit.NS, "quiet", "stop"); err != nil || vm.Status != api.StatusStopped {
			t.Fatalf("stop: %+v %v", vm, err)
		}
	}

	release := make(chan struct{})
	host.Fake.HoldExports(release)
	// Counted before the push is asked for: a push of a stopped VM starts its
	// export at once, maybe before the call that made it has answered.
	exports := host.Fake.Exports()
	job, err := cl.PushVM(ctx, kit.NS, "quiet", reg.Host+"/team/quiet:v1")
	if err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the push reads the disk", time.Minute, func() error {
		if j, err := cl.GetJob(ctx, kit.NS, job.JobName); err != nil || j.State != api.JobRunning || host.Fake.Exports() == exports {
			return fmt.Errorf("job %+v %v", j, err)
		}
		return nil
	})
	c.Crash(host)
	close(release)
	c.Restart(host)
	c.WaitCaughtUp(host)
	if j := kit.WaitJob(t, c, cl, job.JobName); j.State != api.JobSucceeded {
		t.Fatalf("the push run again after the crash: %+v", j)
	}
	if vm, _ := other.Peer.FSM().VM(kit.NS, "quiet"); vm.Desired != want {
		t.Fatalf("the push left the VM %s, want %s", vm.Desired, want)
	}
}
