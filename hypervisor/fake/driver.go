package fake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/svc-project/svc/hypervisor"
)

// ErrUnavailable is returned by a Fake that was made unreachable.
var ErrUnavailable = errors.New("hypervisor unavailable")

// Driver keeps domains in memory. It is for tests of cluster logic (placement,
// reconciliation, the API); the libvirt driver has its own tests on a real
// libvirtd.
type Driver struct {
	sharing // SharedDirs (share.go)

	prefix string

	mu         sync.Mutex
	down       bool
	createErr  error
	startErr   error
	barrier    *createBarrier
	createHold <-chan struct{}
	exports    int
	exportHold <-chan struct{}
	exportAs   []byte // when set, what every Export writes
	domains    map[string]*fakeDomain
	calls      []string
	lists      int
	memoryDir  string
}

type fakeDomain struct {
	spec  hypervisor.Spec
	state hypervisor.State
	disk  int // bumps on every fresh disk
	// diskBytes is the disk's size once resized (0: fakeDiskBytes).
	diskBytes int64
}

var _ hypervisor.Driver = (*Driver)(nil)

// New returns an empty fake driver for the domains named with prefix.
func New(prefix string) *Driver {
	return &Driver{prefix: prefix, domains: map[string]*fakeDomain{}}
}

// SetDown makes every call fail with ErrUnavailable (or work again).
func (f *Driver) SetDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

// SetCreateError makes every Create fail with err (nil: succeed again).
func (f *Driver) SetCreateError(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.createErr = err
}

// createBarrier holds Creates until n are in progress at once.
type createBarrier struct {
	n, arrived int
	all        chan struct{}
	timeout    time.Duration
}

// HoldCreates makes each Create wait until n Creates are in progress at
// once (then all go on), or fail after timeout: a test that n domains are
// created in parallel, not one after another.
func (f *Driver) HoldCreates(n int, timeout time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.barrier = &createBarrier{n: n, all: make(chan struct{}), timeout: timeout}
}

// HoldCreatesUntil makes every Create wait until release is closed (or
// its context ends): a VM that stays on its way to running while a test
// changes the cluster around it.
func (f *Driver) HoldCreatesUntil(release <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.createHold = release
}

// waitBarrier blocks a Create at the barrier or the hold, if one is set.
func (f *Driver) waitBarrier(ctx context.Context) error {
	f.mu.Lock()
	b, hold := f.barrier, f.createHold
	if hold != nil {
		f.calls = append(f.calls, "hold create")
		f.mu.Unlock()
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
		f.mu.Lock()
	}
	if b == nil {
		f.mu.Unlock()
		return nil
	}
	if b.arrived++; b.arrived == b.n {
		close(b.all)
	}
	f.mu.Unlock()
	select {
	case <-b.all:
		return nil
	case <-time.After(b.timeout):
		return fmt.Errorf("create: only %d of %d creates ran at once", b.arrived, b.n)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SetStartError makes every Start fail with err (nil: succeed again).
func (f *Driver) SetStartError(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.startErr = err
}

// Vanish removes a domain behind the driver's user's back.
func (f *Driver) Vanish(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.domains, name)
}

// PowerOff turns every domain off, as a host that lost power would find
// them when it boots again (libvirt keeps the definitions).
func (f *Driver) PowerOff() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range f.domains {
		d.state = hypervisor.StateShutoff
	}
}

// State returns a domain's state, or false when it does not exist.
func (f *Driver) State(name string) (hypervisor.State, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.domains[name]
	if !ok {
		return "", false
	}
	return d.state, true
}

// Calls returns the calls made so far ("create svc.p.ns.vm", ...).
func (f *Driver) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// Spec returns the spec a domain was created with.
func (f *Driver) Spec(name string) (hypervisor.Spec, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.domains[name]
	if !ok {
		return hypervisor.Spec{}, false
	}
	return d.spec, true
}

func (f *Driver) enter(call, name string) error {
	if f.down {
		return ErrUnavailable
	}
	f.calls = append(f.calls, call+" "+name)
	return nil
}

func (f *Driver) get(name string) (*fakeDomain, error) {
	d, ok := f.domains[name]
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, hypervisor.ErrNotFound)
	}
	return d, nil
}

// Describe says the fake is one.
func (f *Driver) Describe() string { return "fake (VMs exist only in this agent's memory; for tests)" }

// The roles the fake has: no screen and no guard (it runs no guest).
var (
	_ hypervisor.Pauser = (*Driver)(nil)
	_ hypervisor.Disks  = (*Driver)(nil)
)

// Probe fails while the fake is down.
func (f *Driver) Probe(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return ErrUnavailable
	}
	return nil
}

// Create defines and starts a domain.
func (f *Driver) Create(ctx context.Context, s hypervisor.Spec) error {
	if err := f.waitBarrier(ctx); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("create", s.Name); err != nil {
		return err
	}
	if f.createErr != nil {
		return f.createErr
	}
	if !strings.HasPrefix(s.Name, f.prefix) {
		return fmt.Errorf("domain %q is not this peer's", s.Name)
	}
	if s.CPU < 1 || s.MemoryMiB < 1 {
		return fmt.Errorf("domain %s: cpu and memory must be positive", s.Name)
	}
	if d, ok := f.domains[s.Name]; ok {
		d.spec = s
		if d.state != hypervisor.StateRunning && d.state != hypervisor.StatePaused {
			d.state = hypervisor.StateRunning
		}
		return nil
	}
	f.domains[s.Name] = &fakeDomain{spec: s, state: hypervisor.StateRunning, disk: 1}
	return nil
}

func (f *Driver) set(call, name string, from []hypervisor.State, to hypervisor.State) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter(call, name); err != nil {
		return err
	}
	d, err := f.get(name)
	if err != nil {
		return err
	}
	for _, s := range from {
		if d.state == s {
			d.state = to
			return nil
		}
	}
	return nil
}

// Start boots a stopped domain or resumes a paused one.
func (f *Driver) Start(_ context.Context, name string) error {
	f.mu.Lock()
	err := f.startErr
	f.mu.Unlock()
	if err != nil {
		return err
	}
	return f.set("start", name, []hypervisor.State{hypervisor.StateShutoff, hypervisor.StatePaused, hypervisor.StateCrashed}, hypervisor.StateRunning)
}

// Stop turns a domain off.
func (f *Driver) Stop(_ context.Context, name string, _ time.Duration) error {
	return f.set("stop", name, []hypervisor.State{hypervisor.StateRunning, hypervisor.StatePaused}, hypervisor.StateShutoff)
}

// Suspend pauses a running domain.
func (f *Driver) Suspend(_ context.Context, name string) error {
	return f.set("suspend", name, []hypervisor.State{hypervisor.StateRunning}, hypervisor.StatePaused)
}

// Resume continues a paused domain.
func (f *Driver) Resume(_ context.Context, name string) error {
	return f.set("resume", name, []hypervisor.State{hypervisor.StatePaused}, hypervisor.StateRunning)
}

// Revert gives the domain a fresh disk and starts it.
func (f *Driver) Revert(_ context.Context, s hypervisor.Spec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("revert", s.Name); err != nil {
		return err
	}
	d, ok := f.domains[s.Name]
	if !ok {
		d = &fakeDomain{}
		f.domains[s.Name] = d
	}
	d.spec, d.state = s, hypervisor.StateRunning
	d.disk++
	return nil
}

// Delete removes a domain; deleting a missing one is not an error.
func (f *Driver) Delete(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.enter("delete", name); err != nil {
		return err
	}
	delete(f.domains, name)
	if f.memoryDir != "" {
		if err := os.Remove(filepath.Join(f.memoryDir, name+".state")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// Lists returns how many times List answered (one per reconcile pass).
func (f *Driver) Lists() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists
}

// List returns the domains sorted by name.
func (f *Driver) List(context.Context) ([]hypervisor.Domain, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return nil, ErrUnavailable
	}
	f.lists++
	out := make([]hypervisor.Domain, 0, len(f.domains))
	for n, d := range f.domains {
		out = append(out, hypervisor.Domain{Name: n, State: d.state})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// HoldExports makes every Export wait until release is closed (or its
// context ends): a test can stop a peer in the middle of a commit.
func (f *Driver) HoldExports(release <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.exportHold = release
}

// ExportAs makes every Export write disk instead of the VM's disk (a test
// gives a hypervisor that writes a hostile disk); nil restores the default.
func (f *Driver) ExportAs(disk []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.exportAs = disk
}

// Exports returns how many Exports were started.
func (f *Driver) Exports() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.exports
}

// Export writes the base image's bytes followed by a line that names the
// domain and its disk generation, so that each commit has content of its own
// that qemu-img still reads as the base's format.
func (f *Driver) Export(ctx context.Context, name, dst string) error {
	f.mu.Lock()
	if err := f.enter("export", name); err != nil {
		f.mu.Unlock()
		return err
	}
	f.exports++
	hold, as := f.exportHold, f.exportAs
	d, err := f.get(name)
	if err == nil && d.state != hypervisor.StateShutoff {
		err = fmt.Errorf("export %s: the domain is %s, not shut off", name, d.state)
	}
	var spec hypervisor.Spec
	var gen int
	if err == nil {
		spec, gen = d.spec, d.disk
	}
	f.mu.Unlock()
	if err != nil {
		return err
	}
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if as != nil {
		if err := os.WriteFile(dst, as, 0o600); err != nil {
			return fmt.Errorf("export %s: %w", name, err)
		}
		return nil
	}
	base, err := os.ReadFile(spec.BaseImage)
	if err != nil {
		return fmt.Errorf("export %s: %w", name, err)
	}
	// A sector of its own, so that a raw disk stays whole sectors.
	trailer := make([]byte, 512)
	copy(trailer, fmt.Sprintf("\nsvc fake disk of %s, generation %d, exported at %d\n", name, gen, time.Now().UnixNano()))
	if err := os.WriteFile(dst, append(base, trailer...), 0o600); err != nil {
		return fmt.Errorf("export %s: %w", name, err)
	}
	return nil
}

// DiskPath is a made-up path.
func (f *Driver) DiskPath(name string) string { return "/fake/" + name + ".qcow2" }
