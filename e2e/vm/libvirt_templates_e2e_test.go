package vm

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/internal/rfb"
	"github.com/svc-project/svc/peer"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// On real libvirt: a warm config's node builds its template in the
// background; VMs deployed from the config then start from it (the
// template's boot, answering SSH), each on a disk of its own (a file one
// writes is in neither the other nor the next one restored) with its own
// ports and screen password, identity (host name, machine id, SSH host keys)
// and clock; deleting the config removes the template.
func TestLibvirtCluster_warm_config(t *testing.T) {
	image := guest.RequireLibvirt(t)
	c := testcluster.New(t, 1, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: "warm", Subnet: 5, Templates: 2,
		Capacity: raftfsm.Capacity{CPU: 8, MemoryBytes: 8 << 30}})
	m := c.Members[0]
	cl := c.Client(m)
	kit.Upload(t, cl, "mini-linux", image)
	if _, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "ci", Image: "mini-linux", CPU: 1, Memory: 0.25, Warm: true}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	kit.WaitWarmFor(t, c, cl, kit.TemplateWait, "ci", m.Name)
	warm := time.Now() // the template was saved before this
	t.Logf("template ready %v after the config", time.Since(start).Round(time.Millisecond))

	// A VM started from the template runs on the template's boot: the
	// directory /dev/shm, which mini-linux's init makes in its first lines
	// (long before the SSH server, which the template waits for, starts)
	// and nothing writes to, bears the time of that boot to the nanosecond
	// in every VM restored from the template; a guest booted by its deploy
	// made its own. (The guest agent's pid file, tried first, is written
	// after the SSH server starts: a template saved in between has none,
	// and each restored copy writes its own.)
	bootMark := ""
	deploy := func(name string) api.VM {
		t.Helper()
		start := time.Now()
		vm, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{VMConfig: "ci", Name: name, Timeout: kit.Floatp(3)})
		if err != nil {
			t.Fatal(err)
		}
		mark := strings.TrimSpace(kit.GuestRun(t, c, vm, "stat -c %y /dev/shm"))
		t.Logf("%s: Running and answering SSH %v after the deploy call (booted %s)", name, time.Since(start).Round(time.Millisecond), mark)
		got, err := cl.GetVM(kit.Ctx(t), kit.NS, name)
		if err != nil || got.StartedFrom != "template" {
			t.Fatalf("%s started from %q (%v), not the template", name, got.StartedFrom, err)
		}
		if bootMark == "" {
			bootMark = mark
		} else if mark != bootMark {
			t.Fatalf("%s's boot made /dev/shm at %s, the template's VMs' before it at %s: it booted instead of starting from the template", name, mark, bootMark)
		}
		if got.Identity == nil || got.Identity.State != api.IdentitySet {
			t.Fatalf("%s is Running with identity %+v, not set", name, got.Identity)
		}
		return vm
	}
	a, b := deploy("warm-a"), deploy("warm-b")
	// Each is its own: its host name is its VM's name, and its machine id
	// and SSH host keys (made at the template's boot) are new, as a client
	// sees them.
	seen := map[string]string{}
	for _, vm := range []api.VM{a, b} {
		if got := strings.TrimSpace(kit.GuestRun(t, c, vm, "hostname; cat /etc/hostname")); got != vm.Name+"\n"+vm.Name {
			t.Errorf("%s's host name: %q", vm.Name, got)
		}
		id := "machine id " + strings.TrimSpace(kit.GuestRun(t, c, vm, "cat /etc/machine-id"))
		keys := []string{id}
		for _, algo := range []string{ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256} {
			fp, err := guest.HostKey(kit.Ctx(t), kit.SSHAddr(vm), algo)
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, algo+" "+fp)
		}
		for _, k := range keys {
			if other, ok := seen[k]; ok {
				t.Errorf("%s and %s share %s", other, vm.Name, k)
			}
			seen[k] = vm.Name
		}
	}
	if a.SSH == b.SSH || a.VNC == b.VNC || a.VNCPassword == b.VNCPassword {
		t.Fatalf("the two VMs share ports or a password: %+v %+v", a, b)
	}
	vnc := net.JoinHostPort(a.IP, strconv.Itoa(a.VNC))
	if _, err := rfb.Authenticate(vnc, a.VNCPassword, 10*time.Second); err != nil {
		t.Fatalf("a's screen with a's password: %v", err)
	}
	if _, err := rfb.Authenticate(vnc, b.VNCPassword, 10*time.Second); !errors.Is(err, rfb.ErrAuthFailed) {
		t.Fatalf("a's screen with b's password: %v", err)
	}
	kit.GuestRun(t, c, a, "echo only-a > /data/mark && sync")
	const probe = "cat /data/mark 2>/dev/null || echo absent"
	if got := strings.TrimSpace(kit.GuestRun(t, c, b, probe)); got != "absent" {
		t.Fatalf("b reads %q: the VMs share a disk", got)
	}
	// The guest agent set the restored guest's clock to the host's: the
	// template is older than the tolerance when it is restored, so a clock
	// left as the template's would be behind by more.
	const tolerance = 3 * time.Second
	if young := 3*tolerance - time.Since(warm); young > 0 {
		time.Sleep(young) // not a settle: the template must be this old
	}
	cvm := deploy("warm-c")
	if got := strings.TrimSpace(kit.GuestRun(t, c, cvm, probe)); got != "absent" {
		t.Fatalf("the next restore reads %q: a VM's writes reached the template", got)
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(kit.GuestRun(t, c, cvm, "date +%s")), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if lag := time.Since(time.Unix(secs, 0)); lag > tolerance || lag < -tolerance {
		t.Fatalf("c's clock is off by %v (its template was saved %v before)", lag, time.Since(warm).Round(time.Second))
	}

	templateFiles := func() []string {
		entries, _ := os.ReadDir(peer.VMDir(m.DataDir))
		var out []string
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), hypervisor.TemplatePrefix(m.Name)) {
				out = append(out, e.Name())
			}
		}
		return out
	}
	if files := templateFiles(); len(files) == 0 {
		t.Fatal("no template files on the node")
	}
	if err := cl.DeleteVMConfig(kit.Ctx(t), kit.NS, "ci"); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the template's files removed", 30*time.Second, func() error {
		if files := templateFiles(); len(files) > 0 {
			return fmt.Errorf("left: %v", files)
		}
		doms, err := m.Libvirt.List(kit.Ctx(t))
		if err != nil {
			return err
		}
		for _, d := range doms {
			if strings.HasPrefix(d.Name, hypervisor.TemplatePrefix(m.Name)) {
				return fmt.Errorf("domain %s left", d.Name)
			}
		}
		return nil
	})
}
