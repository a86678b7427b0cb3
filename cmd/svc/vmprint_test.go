package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/svc-project/svc/api"
)

// TestPrintVM_guest_line: the guest line of a deploy's answer says what is
// true at that moment: a guest whose agent has not answered since it
// started is booting, not an image without an agent.
func TestPrintVM_guest_line(t *testing.T) {
	running := api.VM{Name: "v", Status: api.StatusRunning}
	with := func(vm api.VM, f func(*api.VM)) api.VM { f(&vm); return vm }
	cases := []struct {
		name string
		vm   api.VM
		want string
	}{
		{"just deployed, identity pending", with(running, func(v *api.VM) { v.Identity = &api.GuestIdentity{State: api.IdentityPending} }),
			"guest:        booting: its agent has not answered yet"},
		{"no identity recorded yet", running, "guest:        booting: its agent has not answered yet"},
		{"no answer within the step's wait, still due", with(running, func(v *api.VM) {
			v.Identity = &api.GuestIdentity{State: api.IdentityNone, Message: api.IdentityNoAgentYet + " within 10s: timeout"}
		}), "guest:        booting"},
		{"an agent answers", with(running, func(v *api.VM) { v.GuestAgent, v.GuestOS, v.GuestIPs = true, "Linux", []string{"10.0.2.15"} }),
			"guest:        Linux, 10.0.2.15 (from its agent; svc vm run works)"},
		{"known to have none", with(running, func(v *api.VM) {
			v.Identity = &api.GuestIdentity{State: api.IdentityNone, Message: "the hypervisor has no guest agent"}
		}), "guest:        no agent answers (svc vm run needs QEMU's guest agent in the image)"},
		{"stopped", with(running, func(v *api.VM) { v.Status = api.StatusStopped }), "guest:        stopped"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := printVM(&b, c.vm); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), c.want) {
				t.Fatalf("%q not in:\n%s", c.want, b.String())
			}
		})
	}
}
