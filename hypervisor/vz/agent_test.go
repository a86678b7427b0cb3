package vz

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/testkit/qgatest"
)

// A VM's guest agent through its runner's agent socket and the machine's
// agent port, here QEMU's own qemu-ga behind the fake machine's port:
// short and streamed programs, what the guest is; a port with no agent
// behind it is ErrNoAgent, soon.
func TestDriver_guest_agent(t *testing.T) {
	t.Setenv(agentEnv, qgatest.Start(t))
	td := newTestDriver(t)
	ctx := ctxT(t)
	s := td.spec("ns.agent", "")
	if err := td.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	ag := td.Driver.(hypervisor.GuestAgent)
	var out bytes.Buffer
	r, err := ag.RunShort(ctx, s.Name, hypervisor.ExecCommand{Argv: []string{"sh", "-c", "cat; exit 5"}, Stdin: []byte("through the port\n"), Stdout: &out})
	if err != nil || r.ExitCode != 5 || out.String() != "through the port\n" {
		t.Fatalf("short: %+v %q %v", r, out.String(), err)
	}
	out.Reset()
	if r, err := ag.Exec(ctx, s.Name, hypervisor.ExecCommand{Argv: []string{"sh", "-c", "echo streamed"}, Stdout: &out}); err != nil || r.ExitCode != 0 || out.String() != "streamed\n" {
		t.Fatalf("exec: %+v %q %v", r, out.String(), err)
	}
	if info, err := ag.GuestInfo(ctx, s.Name); err != nil || info.OS == "" {
		t.Fatalf("guest info: %+v %v", info, err)
	}

	t.Setenv(agentEnv, "")
	none := td.spec("ns.noagent", "")
	if err := td.Create(ctx, none); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = ag.RunShort(ctx, none.Name, hypervisor.ExecCommand{Argv: []string{"true"}})
	if !errors.Is(err, hypervisor.ErrNoAgent) || time.Since(start) > 10*time.Second {
		t.Fatalf("a port with no agent: %v after %v, want ErrNoAgent", err, time.Since(start))
	}
	if !strings.Contains(err.Error(), "does not answer") {
		t.Fatalf("error %q does not say the agent does not answer", err)
	}
}
