package fake

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/svc-project/svc/hypervisor"
)

// Agent is a fake Driver whose guests have an agent: Exec knows a few
// programs (echo, cat, true, exit N, yes, sleep) and the image's identity step
// (RunIdentityStep: it notes the host name; NoIdentityStep: the images have
// none), and the rest are not found. It is for tests of the API and the
// cluster around a guest's agent (routing, limits, authorization, records);
// the libvirt driver's agent has its own tests.
type Agent struct {
	*Driver
	// Programs, when set, is asked first to run a program in a guest: a
	// test's stand-in of a program in an image (handled false: the
	// built-in programs run it).
	Programs func(ctx context.Context, vm string, argv []string, stdin []byte) (stdout []byte, code int, handled bool)
	// NoIdentityStep makes its guests' images ship no identity step.
	NoIdentityStep bool
	// Silent makes its guests' agents never answer (ErrNoAgent), as a guest
	// without one.
	Silent bool
	// AnswerFrom, when set, makes its guests' agents answer only from
	// then on, as guests still booting; a call before takes NoAnswerWait
	// to fail, as a real agent's port that nobody answers on does. Set
	// them before the agent is used, or with SetAnswerFrom while it is.
	AnswerFrom   time.Time
	NoAnswerWait time.Duration
	mu           sync.Mutex
	frozen       map[string]bool
	identity     map[string][]string // domain: host name and how, per run
}

var _ hypervisor.GuestAgent = (*Agent)(nil)

// NewAgent wraps f with a guest agent.
func NewAgent(f *Driver) *Agent {
	return &Agent{Driver: f, frozen: map[string]bool{}, identity: map[string][]string{}}
}

// IdentityRuns returns the identity steps run in a domain, each as "<host
// name> <how>".
func (f *Agent) IdentityRuns(name string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.identity[name])
}

// SetAnswerFrom sets AnswerFrom while the agent is in use.
func (f *Agent) SetAnswerFrom(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.AnswerFrom = t
}

func (f *Agent) running(name string) error {
	if f.Silent {
		return fmt.Errorf("%s: %w (its agent is silent)", name, hypervisor.ErrNoAgent)
	}
	f.mu.Lock()
	from := f.AnswerFrom
	f.mu.Unlock()
	if time.Now().Before(from) {
		time.Sleep(f.NoAnswerWait)
		return fmt.Errorf("%s: %w (its agent is not up yet)", name, hypervisor.ErrNoAgent)
	}
	doms, err := f.List(context.Background())
	if err != nil {
		return err
	}
	for _, d := range doms {
		if d.Name == name && d.State == hypervisor.StateRunning {
			return nil
		}
	}
	return fmt.Errorf("%s: %w (not running)", name, hypervisor.ErrNoAgent)
}

// SetGuestTime succeeds for a running domain.
func (f *Agent) SetGuestTime(_ context.Context, name string) error { return f.running(name) }

// GuestInfo says the guest is "fake" at 10.0.2.15.
func (f *Agent) GuestInfo(_ context.Context, name string) (hypervisor.GuestInfo, error) {
	if err := f.running(name); err != nil {
		return hypervisor.GuestInfo{}, err
	}
	return hypervisor.GuestInfo{OS: "fake", IPs: []string{"10.0.2.15"}}, nil
}

// RunShort is Exec: the fake's programs are short.
func (f *Agent) RunShort(ctx context.Context, name string, c hypervisor.ExecCommand) (hypervisor.ExecResult, error) {
	return f.Exec(ctx, name, c)
}

// Exec runs one of the fake's programs.
func (f *Agent) Exec(ctx context.Context, name string, c hypervisor.ExecCommand) (hypervisor.ExecResult, error) {
	if err := f.running(name); err != nil {
		return hypervisor.ExecResult{}, fmt.Errorf("%w: %w", hypervisor.ErrNotStarted, err)
	}
	if len(c.Argv) == 0 {
		return hypervisor.ExecResult{}, fmt.Errorf("exec: no program")
	}
	max := c.MaxOutput
	if max <= 0 {
		max = hypervisor.MaxExecOutput
	}
	var out, errs []byte
	code := 0
	if f.Programs != nil {
		if o, c2, ok := f.Programs(ctx, name, c.Argv, c.Stdin); ok {
			return hypervisor.ExecResult{ExitCode: c2}, writeOut(c.Stdout, o)
		}
	}
	switch c.Argv[0] {
	case "echo":
		out = []byte(strings.Join(c.Argv[1:], " ") + "\n")
	case "cat":
		out = c.Stdin
	case "true":
	case "exit":
		if len(c.Argv) > 1 {
			code, _ = strconv.Atoi(c.Argv[1])
		}
	case "yes":
		out = []byte(strings.Repeat("y\n", int(max/2)+1))
	case "sh":
		if len(c.Argv) != 6 || c.Argv[2] != hypervisor.IdentityWrapper {
			code, errs = 127, []byte("fake: sh runs only the identity step\n")
			break
		}
		if f.NoIdentityStep {
			code, errs = 127, []byte(hypervisor.NoIdentityStepMarker+"\n")
			break
		}
		f.mu.Lock()
		f.identity[name] = append(f.identity[name], c.Argv[4]+" "+c.Argv[5])
		f.mu.Unlock()
	case "sleep":
		<-ctx.Done()
		return hypervisor.ExecResult{}, fmt.Errorf("run %q in %s: %w", c.Argv[0], name, hypervisor.ErrExecTimeout)
	default:
		code, errs = 127, []byte("fake: "+c.Argv[0]+": not found\n")
	}
	r := hypervisor.ExecResult{ExitCode: code}
	out, r.StdoutTruncated = cut(out, max)
	errs, r.StderrTruncated = cut(errs, max)
	for _, o := range []struct {
		w interface{ Write([]byte) (int, error) }
		b []byte
	}{{c.Stdout, out}, {c.Stderr, errs}} {
		if o.w != nil && len(o.b) > 0 {
			if _, err := o.w.Write(o.b); err != nil {
				return hypervisor.ExecResult{}, err
			}
		}
	}
	return r, nil
}

func writeOut(w interface{ Write([]byte) (int, error) }, b []byte) error {
	if w == nil || len(b) == 0 {
		return nil
	}
	_, err := w.Write(b)
	return err
}

func cut(b []byte, max int64) ([]byte, bool) {
	if int64(len(b)) > max {
		return b[:max], true
	}
	return b, false
}

// FreezeFS marks the guest frozen (one file system).
func (f *Agent) FreezeFS(_ context.Context, name string) (int, error) {
	if err := f.running(name); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen[name] = true
	return 1, nil
}

// ThawFS thaws it.
func (f *Agent) ThawFS(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.frozen, name)
	return nil
}
