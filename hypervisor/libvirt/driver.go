package libvirt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/qga"
)

// Domain types.
const (
	TypeKVM  = "kvm"  // hardware virtualisation
	TypeQEMU = "qemu" // TCG software emulation
)

// DefaultSocket is libvirtd's local socket.
const DefaultSocket = "/var/run/libvirt/libvirt-sock"

// Config configures the libvirt driver.
type Config struct {
	// Socket is libvirtd's unix socket (DefaultSocket when empty).
	Socket string
	// DomainType is TypeKVM, TypeQEMU, or "" to probe the host.
	DomainType string
	// Dir holds the VMs' overlay disks and console logs.
	Dir string
	// ImageDir holds the base images and ISOs the VMs use: QEMU's user must
	// reach it, which Probe checks ("" skips the check).
	ImageDir string
	// QEMUUser is the unprivileged user QEMU runs as; "" takes libvirt-qemu
	// (Debian, Ubuntu) or else qemu (Fedora, RHEL). Root is refused.
	QEMUUser string
	// Prefix starts the name of every domain of this peer (DomainPrefix).
	Prefix string
	Log    *slog.Logger
}

// Driver runs VMs through libvirtd.
type Driver struct {
	// Guests serves the guest-agent calls through libvirt's agent call
	// (exec.go).
	qga.Guests

	cfg  Config
	user qemuUser

	*connPool   // libvirtd's connections (conn.go)
	*guestPorts // GuestPorts (ports.go)
	hostGuard   // Guard (guard.go)
	folders     // SharedDirs (share.go)

	// mu guards deleting: the domains Delete is taking down. List reports
	// them stopping without asking libvirt, which holds their lock
	// meanwhile.
	mu       sync.Mutex
	deleting map[string]bool
}

var _ hypervisor.Driver = (*Driver)(nil)

// New returns a libvirt driver; it connects on first use, and again
// after libvirtd restarts.
func New(cfg Config) (*Driver, error) {
	if cfg.Socket == "" {
		cfg.Socket = DefaultSocket
	}
	if cfg.DomainType == "" {
		cfg.DomainType = DetectDomainType()
	}
	if cfg.DomainType != TypeKVM && cfg.DomainType != TypeQEMU {
		return nil, fmt.Errorf("domain type %q: use kvm or qemu", cfg.DomainType)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	u, err := lookupQEMUUser(cfg.QEMUUser)
	if err != nil {
		return nil, err
	}
	if err := traversable(cfg.Dir); err != nil {
		return nil, fmt.Errorf("VM dir: %w", err)
	}
	d := &Driver{cfg: cfg, user: u, deleting: map[string]bool{}, connPool: &connPool{socket: cfg.Socket}}
	d.guestPorts = &guestPorts{connPool: d.connPool, cfg: &d.cfg, run: newRunID()}
	d.hostGuard = hostGuard{cfg: &d.cfg, user: u}
	d.folders = folders{connPool: d.connPool, cfg: &d.cfg, user: u}
	d.Guests = qga.Guests{Agent: d.agent}
	return d, nil
}

// DetectDomainType returns TypeKVM when the host's KVM is backed by real
// hardware virtualisation (the kvm_intel or kvm_amd module is loaded and
// /dev/kvm opens), TypeQEMU otherwise. Nested software KVM (such as kvm-pvm)
// cannot run stock guests, so it counts as no KVM.
func DetectDomainType() string {
	hw := false
	for _, m := range []string{"/sys/module/kvm_intel", "/sys/module/kvm_amd"} {
		if _, err := os.Stat(m); err == nil {
			hw = true
		}
	}
	if !hw {
		return TypeQEMU
	}
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return TypeQEMU
	}
	_ = f.Close()
	return TypeKVM
}

// DomainType returns the domain type in use.
func (d *Driver) DomainType() string { return d.cfg.DomainType }

// Config returns the configuration the driver runs with, defaults filled.
func (d *Driver) Config() Config { return d.cfg }

// Probe checks that libvirtd answers and that QEMU's user can reach the
// VMs' disks.
func (d *Driver) Probe(ctx context.Context) error {
	_, err := do(ctx, d, "libvirt version", func(l *golibvirt.Libvirt) (uint64, error) { return l.ConnectGetVersion() })
	if err != nil {
		return err
	}
	for _, dir := range []string{d.cfg.Dir, d.cfg.ImageDir} {
		if dir == "" {
			continue
		}
		if err := d.user.reach(dir); err != nil {
			return err
		}
	}
	if d.cfg.DomainType == TypeKVM {
		return d.user.canUseKVM()
	}
	return nil
}

// QEMUUser names the user QEMU runs as.
func (d *Driver) QEMUUser() string { return d.user.name }

// Describe names the driver, its domain type and QEMU's user.
func (d *Driver) Describe() string {
	return fmt.Sprintf("libvirt (%s domains, QEMU as %s)", d.cfg.DomainType, d.user.name)
}

// The roles libvirt has.
var (
	_ hypervisor.Pauser  = (*Driver)(nil)
	_ hypervisor.Disks   = (*Driver)(nil)
	_ hypervisor.Console = (*Driver)(nil)
)

// DiskPath is where a domain's overlay lives.
func (d *Driver) DiskPath(name string) string { return filepath.Join(d.cfg.Dir, name+".qcow2") }

func (d *Driver) consolePath(name string) string {
	return filepath.Join(d.cfg.Dir, name+".console.log")
}

// vncSecretPath holds a domain's VNC password (mode 0600).
func (d *Driver) vncSecretPath(name string) string {
	return filepath.Join(d.cfg.Dir, name+".vnc-secret")
}

// writeVNCSecret writes the spec's VNC password for QEMU to read at start,
// and returns its path ("" when the spec has none).
func (d *Driver) writeVNCSecret(s hypervisor.Spec) (string, error) {
	p := d.vncSecretPath(s.Name)
	if s.VNCPassword == "" {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("VNC secret of %s: %w", s.Name, err)
		}
		return "", nil
	}
	if err := os.WriteFile(p, []byte(s.VNCPassword), 0o600); err != nil {
		return "", fmt.Errorf("VNC secret of %s: %w", s.Name, err)
	}
	// QEMU reads it as its own user; nobody else may.
	if err := os.Chown(p, d.user.uid, d.user.gid); err != nil {
		return "", fmt.Errorf("VNC secret of %s: %w", s.Name, err)
	}
	return p, nil
}

// ConsoleLog returns what the guest wrote to its serial console.
func (d *Driver) ConsoleLog(name string) ([]byte, error) { return os.ReadFile(d.consolePath(name)) }

func (d *Driver) state(ctx context.Context, dom golibvirt.Domain) (hypervisor.State, error) {
	st, err := do(ctx, d, "state of "+dom.Name, func(l *golibvirt.Libvirt) (int32, error) {
		s, _, err := l.DomainGetState(dom, 0)
		return s, err
	})
	if err != nil {
		return "", err
	}
	switch golibvirt.DomainState(st) {
	case golibvirt.DomainRunning:
		return hypervisor.StateRunning, nil
	case golibvirt.DomainPaused, golibvirt.DomainPmsuspended:
		return hypervisor.StatePaused, nil
	case golibvirt.DomainShutoff:
		return hypervisor.StateShutoff, nil
	case golibvirt.DomainShutdown:
		return hypervisor.StateStopping, nil
	case golibvirt.DomainCrashed:
		return hypervisor.StateCrashed, nil
	}
	return hypervisor.StateOther, nil
}

func (d *Driver) checkName(name string) error {
	if !strings.HasPrefix(name, d.cfg.Prefix) {
		return fmt.Errorf("domain %q is not this peer's (prefix %q)", name, d.cfg.Prefix)
	}
	// The name becomes file names in Dir.
	if strings.ContainsAny(name, "/\x00") || strings.Contains(name, "..") {
		return fmt.Errorf("domain %q: a name with '/' or '..' is no file name", name)
	}
	return nil
}

// List returns this peer's domains.
func (d *Driver) List(ctx context.Context) ([]hypervisor.Domain, error) {
	doms, err := do(ctx, d, "list domains", func(l *golibvirt.Libvirt) ([]golibvirt.Domain, error) {
		ds, _, err := l.ConnectListAllDomains(1, golibvirt.ConnectListDomainsActive|golibvirt.ConnectListDomainsInactive)
		return ds, err
	})
	if err != nil {
		return nil, err
	}
	var out []hypervisor.Domain
	for _, dom := range doms {
		if !strings.HasPrefix(dom.Name, d.cfg.Prefix) {
			continue
		}
		d.mu.Lock()
		deleting := d.deleting[dom.Name]
		d.mu.Unlock()
		if deleting {
			out = append(out, hypervisor.Domain{Name: dom.Name, State: hypervisor.StateStopping})
			continue
		}
		st, err := d.state(ctx, dom)
		if errors.Is(err, hypervisor.ErrNotFound) {
			continue // vanished meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, hypervisor.Domain{Name: dom.Name, State: st})
	}
	return out, nil
}

// classify wraps a libvirt error of what: ErrNotFound for a missing
// domain, ErrTransient for the host short of a resource for a moment (e.g.
// "failed to load cgroup BPF prog: Resource temporarily unavailable", with
// many domains starting at once).
func classify(what string, err error) error {
	switch {
	case golibvirt.IsNotFound(err):
		return fmt.Errorf("%s: %w", what, hypervisor.ErrNotFound)
	case strings.Contains(strings.ToLower(err.Error()), strings.ToLower(syscall.EAGAIN.Error())):
		return fmt.Errorf("%s: %w", what, transientError{err})
	}
	return fmt.Errorf("%s: %w", what, err)
}

// transientError is a libvirt error that passes by itself (ErrTransient).
type transientError struct{ err error }

func (e transientError) Error() string   { return e.err.Error() }
func (e transientError) Unwrap() []error { return []error{e.err, hypervisor.ErrTransient} }
