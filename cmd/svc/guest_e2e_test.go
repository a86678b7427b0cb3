package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/poll"
	"github.com/svc-project/svc/testkit/testcluster"
)

var forwardAddrRE = regexp.MustCompile(` is at (\S+);`)

// Inside real guests through the binary and the API, always through the
// peer that does not host the VM: the agent's report, svc vm run (output,
// exit status, the 1 MiB bound of a 10 MiB output), svc vm port-forward
// carrying two SSH sessions at once, svc vm resize seen by the guest and
// kept by a commit, and a guest without an agent.
func TestBinary_guest_tools(t *testing.T) {
	if testing.Short() {
		t.Skip("boots VMs")
	}
	image := guest.RequireLibvirt(t)
	bin := buildBinary(t)
	c := testcluster.New(t, 2, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: "gtool", Subnet: 8})
	c.WaitLeader()
	host, via := c.Members[0], c.Members[1]
	cl := c.Client(via)
	apiURL := "http://" + via.Peer.APIAddr()
	t.Setenv("SVC_TOKEN", c.Token("admin", true))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	f, err := os.Open(image)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	if _, err := cl.UploadImage(ctx, api.DefaultNamespace, "mini-linux", f, st.Size()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	mem, one := 0.5, 1
	deploy := func(name string, legacy bool) api.VM {
		t.Helper()
		vm, err := cl.DeployVM(ctx, api.DefaultNamespace, api.DeployRequest{Name: name, Image: "mini-linux", CPU: &one, Memory: &mem, Node: host.Name, LegacyIO: &legacy})
		if err != nil {
			t.Fatal(err)
		}
		return vm
	}
	vm := deploy("vm1", false)

	// The record shows what the agent says, and that the image's identity
	// step, run through it, named the guest after its VM.
	if err := poll.Until(ctx, 3*time.Minute, func() error {
		got, err := cl.GetVM(ctx, api.DefaultNamespace, "vm1")
		if err != nil || !got.GuestAgent || !strings.Contains(got.GuestOS, "mini-linux") || !slices.Contains(got.GuestIPs, "10.0.2.15") ||
			got.Identity == nil || got.Identity.State != api.IdentitySet {
			return fmt.Errorf("vm1 %+v %v", got, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// svc vm run: the output, the guest's exit status.
	if out, err := cli(t, bin, apiURL, "vm", "run", "vm1", "--", "uname", "-n"); err != nil || strings.TrimSpace(out) != "vm1" {
		t.Fatalf("svc vm run uname: %q %v", out, err)
	}
	_, err = cli(t, bin, apiURL, "vm", "run", "vm1", "--", "sh", "-c", "echo failing >&2; exit 5")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 5 || !strings.Contains(err.Error(), "failing") {
		t.Fatalf("svc vm run exit 5: %v", err)
	}
	// 10 MiB of output is cut at the bound, and says so.
	r, err := cl.RunVM(ctx, api.DefaultNamespace, "vm1", api.RunRequest{Command: []string{"head", "-c", strconv.Itoa(10 << 20), "/dev/zero"}})
	if err != nil || len(r.Stdout) != api.MaxRunOutput || !r.StdoutTruncated || r.ExitCode != 0 {
		t.Fatalf("10 MiB: %d bytes, truncated %v, exit %d, %v", len(r.Stdout), r.StdoutTruncated, r.ExitCode, err)
	}

	// svc vm port-forward: the guest's SSH, two sessions at once.
	checkPortForward(ctx, t, bin, apiURL, "vm1")

	// svc vm resize: the guest sees its disk grow; a commit keeps the size.
	grown := vm.DiskBytes + 64<<20
	if out, err := cli(t, bin, apiURL, "vm", "resize", "vm1", strconv.FormatInt(grown, 10)); err != nil || !strings.Contains(out, "disk") {
		t.Fatalf("svc vm resize: %q %v", out, err)
	}
	sectors := func(vm string) string {
		t.Helper()
		r, err := cl.RunVM(ctx, api.DefaultNamespace, vm, api.RunRequest{Command: []string{"cat", "/sys/block/vda/size"}})
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(r.Stdout)
	}
	want := strconv.FormatInt(grown/512, 10)
	if got := sectors("vm1"); got != want {
		t.Fatalf("the guest sees %s sectors, want %s", got, want)
	}
	if _, err := cl.CommitVM(ctx, api.DefaultNamespace, "vm1", api.CommitRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := poll.Until(ctx, 5*time.Minute, func() error {
		img, err := cl.GetImage(ctx, api.DefaultNamespace, "mini-linux")
		if err != nil || img.State != api.ImageReady {
			return fmt.Errorf("image %+v %v", img, err)
		}
		got, err := cl.GetVM(ctx, api.DefaultNamespace, "vm1")
		if err != nil || got.Status != "Running" {
			return fmt.Errorf("vm1 %+v %v", got, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	vm2 := deploy("vm2", false)
	if vm2.DiskBytes != grown {
		t.Fatalf("vm2 deployed after the commit has a disk of %d, want %d", vm2.DiskBytes, grown)
	}
	if err := poll.Until(ctx, 3*time.Minute, func() error {
		got, err := cl.GetVM(ctx, api.DefaultNamespace, "vm2")
		if err != nil || !got.GuestAgent {
			return fmt.Errorf("vm2 agent %v %v", got.GuestAgent, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := sectors("vm2"); got != want {
		t.Fatalf("vm2 sees %s sectors, want %s", got, want)
	}

	// A guest without an agent (legacy devices have no agent channel):
	// it deploys and runs, and a run says plainly why it cannot.
	bare := deploy("bare", true)
	if bare.Status != "Running" || bare.GuestAgent {
		t.Fatalf("bare %+v", bare)
	}
	thirty := 30
	_, err = cl.RunVM(ctx, api.DefaultNamespace, "bare", api.RunRequest{Command: []string{"true"}, TimeoutSeconds: &thirty})
	if api.CodeOf(err) != http.StatusConflict || !strings.Contains(err.Error(), "guest agent") {
		t.Fatalf("run without an agent: %v", err)
	}
}

// checkPortForward runs 'svc vm port-forward VM 22' as a user would and
// holds two SSH sessions at once through the port it prints; Ctrl-C then
// ends it with status 0.
func checkPortForward(ctx context.Context, t *testing.T, bin, apiURL, vm string) {
	t.Helper()
	cmd, addr, stderr := startListener(ctx, t, bin, apiURL, forwardAddrRE, "vm", "port-forward", vm, "22")
	m := []string{"", addr}
	// Each session waits for the other to have started: they overlap.
	var wg sync.WaitGroup
	outs, errs := make([]string, 2), make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			cmd := fmt.Sprintf("touch /tmp/s%d; while [ ! -e /tmp/s%d ]; do sleep 0.1; done; echo session %d", i, 1-i, i)
			outs[i], errs[i] = guest.WaitRun(ctx, m[1], "admin", "admin", cmd)
		})
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil || strings.TrimSpace(outs[i]) != fmt.Sprintf("session %d", i) {
			t.Fatalf("SSH session %d through the forward: %q %v; stderr: %s", i, outs[i], errs[i], stderr.String())
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("svc vm port-forward after Ctrl-C: %v; stderr: %s", err, stderr.String())
	}
}
