package hypervisor

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// FakeAgent is a Fake whose guests have an agent: Exec knows a few
// programs (echo, cat, exit N, yes, sleep) and the rest are not found.
// It is for tests of the API around a guest's agent (routing, limits,
// authorization); the libvirt driver's agent has its own tests.
type FakeAgent struct {
	*Fake
	mu     sync.Mutex
	frozen map[string]bool
}

var _ GuestAgent = (*FakeAgent)(nil)

// NewFakeAgent wraps f with a guest agent.
func NewFakeAgent(f *Fake) *FakeAgent { return &FakeAgent{Fake: f, frozen: map[string]bool{}} }

func (f *FakeAgent) running(name string) error {
	doms, err := f.List(context.Background())
	if err != nil {
		return err
	}
	for _, d := range doms {
		if d.Name == name && d.State == StateRunning {
			return nil
		}
	}
	return fmt.Errorf("%s: %w (not running)", name, ErrNoAgent)
}

// SetGuestTime succeeds for a running domain.
func (f *FakeAgent) SetGuestTime(_ context.Context, name string) error { return f.running(name) }

// GuestInfo says the guest is "fake" at 10.0.2.15.
func (f *FakeAgent) GuestInfo(_ context.Context, name string) (GuestInfo, error) {
	if err := f.running(name); err != nil {
		return GuestInfo{}, err
	}
	return GuestInfo{OS: "fake", IPs: []string{"10.0.2.15"}}, nil
}

// Exec runs one of the fake's programs.
func (f *FakeAgent) Exec(ctx context.Context, name string, c ExecCommand) (ExecResult, error) {
	if err := f.running(name); err != nil {
		return ExecResult{}, err
	}
	if len(c.Argv) == 0 {
		return ExecResult{}, fmt.Errorf("exec: no program")
	}
	max := c.MaxOutput
	if max <= 0 {
		max = MaxExecOutput
	}
	var out, errs []byte
	code := 0
	switch c.Argv[0] {
	case "echo":
		out = []byte(strings.Join(c.Argv[1:], " ") + "\n")
	case "cat":
		out = c.Stdin
	case "exit":
		if len(c.Argv) > 1 {
			code, _ = strconv.Atoi(c.Argv[1])
		}
	case "yes":
		out = []byte(strings.Repeat("y\n", int(max/2)+1))
	case "sleep":
		<-ctx.Done()
		return ExecResult{}, fmt.Errorf("run %q in %s: %w", c.Argv[0], name, ErrExecTimeout)
	default:
		code, errs = 127, []byte("fake: "+c.Argv[0]+": not found\n")
	}
	r := ExecResult{ExitCode: code}
	out, r.StdoutTruncated = cut(out, max)
	errs, r.StderrTruncated = cut(errs, max)
	for _, o := range []struct {
		w interface{ Write([]byte) (int, error) }
		b []byte
	}{{c.Stdout, out}, {c.Stderr, errs}} {
		if o.w != nil && len(o.b) > 0 {
			if _, err := o.w.Write(o.b); err != nil {
				return ExecResult{}, err
			}
		}
	}
	return r, nil
}

func cut(b []byte, max int64) ([]byte, bool) {
	if int64(len(b)) > max {
		return b[:max], true
	}
	return b, false
}

// FreezeFS marks the guest frozen (one file system).
func (f *FakeAgent) FreezeFS(_ context.Context, name string) (int, error) {
	if err := f.running(name); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen[name] = true
	return 1, nil
}

// ThawFS thaws it.
func (f *FakeAgent) ThawFS(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.frozen, name)
	return nil
}
