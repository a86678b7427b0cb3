package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/testkit/testcluster"
)

// Run and resize go to the VM's host from any peer, with the same
// authorization as the console, bounded outputs and clear refusals.
func TestGuest_run_and_resize_through_another_peer(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{GuestAgent: true})
	c.WaitLeader()
	host, via := c.Members[0], c.Members[2]
	admin := c.Client(via)
	kit.TinyVM(t, admin, "vm1", host.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	runs := []struct {
		name      string
		req       api.RunRequest
		wantCode  int // HTTP status of a refusal; 0: ran
		exit      int
		stdout    string
		truncated bool
	}{
		{name: "output", req: api.RunRequest{Command: []string{"echo", "hello", "guest"}}, stdout: "hello guest\n"},
		{name: "stdin", req: api.RunRequest{Command: []string{"cat"}, Stdin: "fed in\n"}, stdout: "fed in\n"},
		{name: "exit status", req: api.RunRequest{Command: []string{"exit", "3"}}, exit: 3},
		{name: "not found", req: api.RunRequest{Command: []string{"nosuch"}}, exit: 127},
		{name: "output bound", req: api.RunRequest{Command: []string{"yes"}}, truncated: true},
		{name: "timeout", req: api.RunRequest{Command: []string{"sleep"}, TimeoutSeconds: kit.Intp(1)}, wantCode: http.StatusGatewayTimeout},
		{name: "no command", req: api.RunRequest{}, wantCode: http.StatusBadRequest},
		{name: "empty program", req: api.RunRequest{Command: []string{""}}, wantCode: http.StatusBadRequest},
		{name: "zero timeout", req: api.RunRequest{Command: []string{"echo"}, TimeoutSeconds: kit.Intp(0)}, wantCode: http.StatusBadRequest},
		{name: "negative timeout", req: api.RunRequest{Command: []string{"echo"}, TimeoutSeconds: kit.Intp(-1)}, wantCode: http.StatusBadRequest},
		{name: "timeout too long", req: api.RunRequest{Command: []string{"echo"}, TimeoutSeconds: kit.Intp(api.MaxRunTimeout + 1)}, wantCode: http.StatusBadRequest},
		{name: "too many arguments", req: api.RunRequest{Command: make([]string, api.MaxRunArgs+1)}, wantCode: http.StatusBadRequest},
		{name: "NUL in an argument", req: api.RunRequest{Command: []string{"echo", "a\x00b"}}, wantCode: http.StatusBadRequest},
		{name: "stdin too large", req: api.RunRequest{Command: []string{"cat"}, Stdin: strings.Repeat("x", api.MaxRunStdin+1)}, wantCode: http.StatusRequestEntityTooLarge},
	}
	for _, tc := range runs {
		t.Run("run_"+tc.name, func(t *testing.T) {
			if tc.name == "too many arguments" {
				tc.req.Command[0] = "echo"
			}
			r, err := admin.RunVM(ctx, kit.NS, "vm1", tc.req)
			if tc.wantCode != 0 {
				if api.CodeOf(err) != tc.wantCode {
					t.Fatalf("%v, want %d", err, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.ExitCode != tc.exit || r.StdoutTruncated != tc.truncated || (!tc.truncated && r.Stdout != tc.stdout) {
				t.Fatalf("%+v", r)
			}
			if tc.truncated && len(r.Stdout) != api.MaxRunOutput {
				t.Fatalf("stdout %d bytes, want the bound %d", len(r.Stdout), api.MaxRunOutput)
			}
		})
	}

	// A key given twice is refused, not read as its last value.
	dup := json.RawMessage(`{"command":["echo"],"command":["id"]}`)
	if err := admin.Do(ctx, http.MethodPost, "/api/v1/namespaces/"+kit.NS+"/vms/vm1/run", dup, nil); api.CodeOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("a command given twice: %v", err)
	}

	// The websocket form streams the same outputs and ends with the result.
	var out, errs bytes.Buffer
	r, err := admin.RunVMStream(ctx, kit.NS, "vm1", api.RunRequest{Command: []string{"echo", "streamed"}}, &out, &errs)
	if err != nil || r.ExitCode != 0 || out.String() != "streamed\n" {
		t.Fatalf("stream: %+v %q %v", r, out.String(), err)
	}
	if _, err := admin.RunVMStream(ctx, kit.NS, "vm1", api.RunRequest{Command: []string{"nosuch"}}, &out, &errs); err != nil || !strings.Contains(errs.String(), "not found") {
		t.Fatalf("stream stderr %q %v", errs.String(), err)
	}
	if _, err := admin.RunVMStream(ctx, kit.NS, "vm1", api.RunRequest{}, nil, nil); api.CodeOf(err) != http.StatusBadRequest {
		t.Fatalf("stream without a command: %v", err)
	}

	// Another namespace's token is refused (403), on POST and the websocket.
	other := otherNamespaceClient(t, c, admin, via)
	if _, err := other.RunVM(ctx, kit.NS, "vm1", api.RunRequest{Command: []string{"echo"}}); api.CodeOf(err) != http.StatusForbidden {
		t.Fatalf("another namespace runs: %v", err)
	}
	if _, err := other.RunVMStream(ctx, kit.NS, "vm1", api.RunRequest{Command: []string{"echo"}}, nil, nil); api.CodeOf(err) != http.StatusForbidden {
		t.Fatalf("another namespace streams: %v", err)
	}
	if _, err := other.ResizeVM(ctx, kit.NS, "vm1", "2G"); api.CodeOf(err) != http.StatusForbidden {
		t.Fatalf("another namespace resizes: %v", err)
	}

	// Resize grows the disk, shows it, never shrinks, and says what is wrong.
	vm, err := admin.ResizeVM(ctx, kit.NS, "vm1", "3G")
	if err != nil || vm.DiskBytes != 3<<30 {
		t.Fatalf("resize: %d %v", vm.DiskBytes, err)
	}
	for _, size := range []string{"2G", "", "0", "lots", "-1G", "100T"} {
		_, err := admin.ResizeVM(ctx, kit.NS, "vm1", size)
		if api.CodeOf(err) != http.StatusBadRequest || strings.Contains(err.Error(), "nil") {
			t.Errorf("resize to %q: %v", size, err)
		}
	}
	if got, _ := admin.GetVM(ctx, kit.NS, "vm1"); got.DiskBytes != 3<<30 {
		t.Fatalf("after the refusals the disk is %d", got.DiskBytes)
	}
	// Growth beyond the host's free disk (64 TiB here) is refused (409)
	// and the namespace's disk quota holds (403); neither leaves a trace.
	if _, err := admin.ResizeVM(ctx, kit.NS, "vm1", "64T"); api.CodeOf(err) != http.StatusConflict || !strings.Contains(err.Error(), "free") {
		t.Fatalf("resize past the host's free space: %v", err)
	}
	if _, err := admin.SetQuota(ctx, kit.NS, api.Quota{Disk: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.ResizeVM(ctx, kit.NS, "vm1", "5G"); api.CodeOf(err) != http.StatusForbidden || !strings.Contains(err.Error(), "quota of disk") {
		t.Fatalf("resize past the disk quota: %v", err)
	}
	if got, _ := admin.GetVM(ctx, kit.NS, "vm1"); got.DiskBytes != 3<<30 {
		t.Fatalf("after the refused growth the disk is %d", got.DiskBytes)
	}
	if vm, err := admin.ResizeVM(ctx, kit.NS, "vm1", "4G"); err != nil || vm.DiskBytes != 4<<30 {
		t.Fatalf("resize within the quota: %d %v", vm.DiskBytes, err)
	}
	if _, err := admin.SetQuota(ctx, kit.NS, api.Quota{}); err != nil {
		t.Fatal(err)
	}

	// A stopped VM runs nothing (409).
	if _, err := admin.ExecVM(ctx, kit.NS, "vm1", "stop"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RunVM(ctx, kit.NS, "vm1", api.RunRequest{Command: []string{"echo"}}); api.CodeOf(err) != http.StatusConflict {
		t.Fatalf("run in a stopped VM: %v", err)
	}
}

// Without a guest agent a run is refused plainly, and deploys work as ever.
func TestGuest_without_agent(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	cl := c.Client(c.Members[0])
	vm := kit.TinyVM(t, cl, "vm1", "")
	if vm.Status != "Running" || vm.GuestAgent {
		t.Fatalf("deployed %+v", vm)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := cl.RunVM(ctx, kit.NS, "vm1", api.RunRequest{Command: []string{"echo"}})
	if api.CodeOf(err) != http.StatusConflict || !strings.Contains(err.Error(), "guest agent") {
		t.Fatalf("run without an agent: %v", err)
	}
	if _, err := cl.DialVMPort(ctx, kit.NS, "vm1", 22); api.CodeOf(err) != http.StatusConflict {
		t.Fatalf("port forward on a hypervisor without forwards: %v", err)
	}
}

// otherNamespaceClient returns a client, through m, of a service account
// of another namespace.
func otherNamespaceClient(t *testing.T, c *testcluster.Cluster, admin *api.Client, m *testcluster.Member) *api.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := admin.CreateNamespace(ctx, "team-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateServiceAccount(ctx, "team-b", "bot"); err != nil {
		t.Fatal(err)
	}
	tok, err := admin.ServiceAccountToken(ctx, "team-b", "bot", api.TokenRequest{Duration: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	return api.NewClient("http://"+m.Peer.APIAddr(), tok.Token)
}

// TestGuest_remade_domain_is_not_ready_until_its_agent_answers: a VM whose
// domain went (as after a restore of a snapshot taken before its delete)
// loses its identity and guest facts before its domain is made again, and
// gets them back from the new guest's agent.
func TestGuest_remade_domain_is_not_ready_until_its_agent_answers(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{GuestAgent: true})
	c.WaitLeader()
	m := c.Members[0]
	cl := c.Client(m)
	kit.TinyVM(t, cl, "again", m.Name)
	settled := func(want string) func() error {
		return func() error {
			got, err := cl.GetVM(kit.Ctx(t), kit.NS, "again")
			switch {
			case err != nil:
				return err
			case got.Identity == nil || got.Identity.State != want:
				return fmt.Errorf("identity %+v, want %s", got.Identity, want)
			case want == api.IdentitySet && !got.GuestAgent:
				return errors.New("no guest agent reported")
			case want == api.IdentityPending && (got.GuestAgent || got.GuestOS != ""):
				return fmt.Errorf("the gone guest's facts are still reported: agent %v, OS %q", got.GuestAgent, got.GuestOS)
			}
			return nil
		}
	}
	c.WaitFor("the identity step ran", 30*time.Second, settled(api.IdentitySet))
	release := make(chan struct{})
	m.Fake.HoldCreatesUntil(release)
	m.Fake.Vanish(hypervisor.DomainName(m.Name, kit.NS, "again"))
	c.WaitFor("the record cleared while the domain is made again", 30*time.Second, settled(api.IdentityPending))
	if err := cl.WaitGuestReady(kit.Ctx(t), kit.NS, "again", 200*time.Millisecond); err == nil {
		t.Fatal("a guest whose domain is still being made was called ready")
	}
	close(release)
	c.WaitFor("the new guest's identity step ran", 30*time.Second, settled(api.IdentitySet))
	if err := cl.WaitGuestReady(kit.Ctx(t), kit.NS, "again", 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestGuest_run_waits_for_a_booting_guests_agent: `svc vm run` right after
// the deploy, while the guest boots and its agent has not answered yet.
// Before, that was a 409 saying the image needs QEMU's guest agent; now
// the run waits for the agent within its own timeout and runs, the VM's
// guest line says the agent answers, and a run whose timeout ends first
// is a 504 saying the guest is still booting.
func TestGuest_run_waits_for_a_booting_guests_agent(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{Prefix: "bootrun", GuestAgent: true})
	m := c.WaitLeader()
	cl := c.Client(m)
	m.FakeAgent.SetAnswerFrom(time.Now().Add(2 * time.Second)) // its guests' agents are up 2 s from now
	vm := kit.TinyVM(t, cl, "early", m.Name)
	if vm.GuestAgent {
		t.Fatalf("deployed with its agent up already: %+v", vm)
	}
	res, err := cl.RunVM(kit.Ctx(t), kit.NS, "early", api.RunRequest{Command: []string{"echo", "hi"}, TimeoutSeconds: kit.Intp(30)})
	if err != nil || res.Stdout != "hi\n" {
		t.Fatalf("a run while the guest boots: %+v %v", res, err)
	}
	c.WaitFor("the guest line says the agent answers", 10*time.Second, func() error {
		if got, err := cl.GetVM(kit.Ctx(t), kit.NS, "early"); err != nil || !got.GuestAgent {
			return fmt.Errorf("guestAgent %v %v", got.GuestAgent, err)
		}
		return nil
	})

	m.FakeAgent.SetAnswerFrom(time.Now().Add(time.Hour))
	kit.TinyVM(t, cl, "late", m.Name)
	_, err = cl.RunVM(kit.Ctx(t), kit.NS, "late", api.RunRequest{Command: []string{"true"}, TimeoutSeconds: kit.Intp(1)})
	if api.CodeOf(err) != http.StatusGatewayTimeout || !strings.Contains(err.Error(), "still booting") {
		t.Fatalf("a run whose timeout ends while the guest boots: %v, want 504 saying it is still booting", err)
	}
}
