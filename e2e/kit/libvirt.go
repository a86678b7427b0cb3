package kit

import (
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/httpapi"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/node/host"
	"github.com/svc-project/svc/node/hotpool"
	"github.com/svc-project/svc/node/jobs"
	"github.com/svc-project/svc/node/runnerpool"
	"github.com/svc-project/svc/testkit/githubapi"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// DialConsole opens a VM's console websocket at a peer, with the token as
// a browser sends it (a subprotocol), and returns the HTTP status of a
// refusal.
func DialConsole(ctx context.Context, apiAddr, vm, token string) (*websocket.Conn, int, error) {
	protos := []string{"binary"}
	if token != "" {
		protos = append(protos, httpapi.ConsoleTokenProtocol+base64.RawURLEncoding.EncodeToString([]byte(token)))
	}
	c, resp, err := websocket.Dial(ctx, "ws://"+apiAddr+"/api/v1/namespaces/"+NS+"/vms/"+vm+"/console", &websocket.DialOptions{Subprotocols: protos})
	code := 0
	if resp != nil {
		code = resp.StatusCode
	}
	return c, code, err
}

// Leftovers lists what a member's store holds besides its blobs: staging
// and partial files.
func Leftovers(m *testcluster.Member) []string {
	var out []string
	for _, d := range []string{"tmp", "partial"} {
		es, _ := os.ReadDir(filepath.Join(m.DataDir, "images", d))
		for _, e := range es {
			out = append(out, d+"/"+e.Name())
		}
	}
	return out
}

// LibvirtCluster is a 2-peer cluster on the host's real libvirtd, peer i
// named prefix-i at 127.0.<subnet>.i, with mini-linux uploaded to the
// first peer. Each test binary names its own peers: a make test run
// claims a peer's name and address for the process that first took them
// (testkit/peerclaim), so two packages never share a prefix or a subnet.
func LibvirtCluster(t testing.TB, prefix string, subnet int) (*testcluster.Cluster, string) {
	t.Helper()
	image := guest.RequireLibvirt(t)
	c := testcluster.New(t, 2, testcluster.Options{Libvirt: true, Prefix: prefix, Subnet: subnet})
	c.WaitLeader()
	Upload(t, c.Client(c.Members[0]), "mini-linux", image)
	return c, image
}

func SSHAddr(vm api.VM) string { return net.JoinHostPort(vm.IP, strconv.Itoa(vm.SSH)) }

// GuestRun runs a command in the VM over SSH (password admin), waiting for
// the guest to answer up to the product's own bound on a boot.
func GuestRun(t *testing.T, c *testcluster.Cluster, vm api.VM, cmd string) string {
	t.Helper()
	// The product's own bound on a guest's boot to SSH answering: under a
	// busy make test a guest that was ready took longer than the 90 s this
	// wait once guessed to finish its SSH key exchange.
	ctx, cancel := context.WithTimeout(context.Background(), hypervisor.BootTimeout)
	defer cancel()
	out, err := guest.WaitRun(ctx, SSHAddr(vm), "admin", "admin", cmd)
	if err != nil {
		ShowConsole(t, c, vm)
		t.Fatalf("ssh %s: %v", vm.Name, err)
	}
	return out
}

// ShowConsole logs what vm's console showed, read on its host: what a
// wait for the guest that ran out prints.
func ShowConsole(t testing.TB, c *testcluster.Cluster, vm api.VM) {
	t.Helper()
	for _, m := range c.Members {
		if m.Name == vm.Node && m.Libvirt != nil {
			log, err := m.Libvirt.ConsoleLog(hypervisor.DomainName(m.Name, vm.Namespace, vm.Name))
			t.Logf("console of %s (%v):\n%s", vm.Name, err, log)
		}
	}
}

// RealDeploy deploys a small VM on a node and waits until it answers SSH.
func RealDeploy(t *testing.T, c *testcluster.Cluster, req api.DeployRequest) api.VM {
	t.Helper()
	req.CPU, req.Memory, req.Timeout = Intp(1), Floatp(0.25), Floatp(3)
	vm, err := c.Client(c.Members[0]).DeployVM(Ctx(t), NS, req)
	if err != nil {
		t.Fatalf("deploy %s: %v", req.Name, err)
	}
	GuestRun(t, c, vm, "true")
	return vm
}

// ServeToGuests serves GitHub's stand-in also at a host address the
// guests reach (hostNet tells the tests' addresses apart), where the
// runners in them are sent.
func ServeToGuests(tb testing.TB, gh *githubapi.Server, hostNet int) {
	tb.Helper()
	l, err := net.Listen("tcp", guest.HostAddr(tb, hostNet)+":0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: gh.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	tb.Cleanup(func() { _ = srv.Close() })
	gh.SetRunnerURL("http://" + l.Addr().String())
}

// The bounds of the real-VM tests' waits: each is the product's own bound
// on what is waited for, not a guess of how fast this machine is (a guest
// under TCG on two busy cores takes what it takes, up to the bound the
// product gives it). Where a step has no bound of the product's, the
// allowance is sized by what the step moves, and says so. A wait for a
// guest shows its console when it runs out (waitGuestAgent, waitImageOp).
const (
	// GuestBootWait: a guest's boot, up to its agent or SSH.
	GuestBootWait = hypervisor.BootTimeout
	// GuestRunWait: a short command run in a booted guest (a typed line, a
	// shell command through the agent).
	GuestRunWait = hypervisor.MaxShortRun
	// SaveMemoryWait: a template's memory written to its file: at most
	// 512 MiB in these tests, seconds at disk speed.
	SaveMemoryWait = time.Minute
	// TemplateWait: a booted template built: its boot, then its memory
	// saved (node/templates bounds the boot by hypervisor.BootTimeout).
	TemplateWait = GuestBootWait + SaveMemoryWait
	// HotFillWait: one hot guest restored from its template and through its
	// identity step. A pool fills one guest at a time, so n guests take n.
	HotFillWait = hotpool.DefaultFillTimeout
	// DomainGoneWait: a deleted VM's domain removed from its host.
	DomainGoneWait = host.RemoveTimeout
	// ImageOpWait: a commit or save of a real VM: the ACPI shutdown
	// (host.StopGrace, then forced off) and the boot on the result. The
	// disk written between them is a test guest's (at most 1 GiB, mostly
	// sparse): seconds.
	ImageOpWait = host.StopGrace + GuestBootWait
	// PushWait: a push or pull job of a real VM's disk: the VM's stop
	// before its disk is read (jobs.PushStopTimeout), and a minute for the
	// export and the transfer: about 20 MB to a registry on this machine,
	// 10 s at the slowest rate these tests set (4 uploads at 512 KiB/s).
	PushWait = jobs.PushStopTimeout + time.Minute
	// RunnerJobWait: a runner pool's job on a real VM: the VM restored from
	// its warm config's template and made its own (the identity step,
	// hypervisor.IdentityRunTimeout), then its runner reporting within the
	// pool's agent wait (runnerpool.DefaultAgentWait); the job itself is a
	// few shell lines. Jobs under a quota of q VMs wait on each other:
	// n of them take ceil(n/q) of these.
	RunnerJobWait = hypervisor.IdentityRunTimeout + runnerpool.DefaultAgentWait
)
