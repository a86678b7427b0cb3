package vz

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/qga"
	"github.com/svc-project/svc/imagestore/rawdisk"
)

// Config is a vz driver's.
type Config struct {
	// Dir holds one directory per VM (its raw disk, NVRAM, console log,
	// runner config and log), the control sockets and the raw copies of
	// qcow2 base images.
	Dir string
	// Prefix starts the names of this peer's VMs (hypervisor.DomainPrefix).
	Prefix string
	// Runner is the command that runs one VM: a binary and its arguments,
	// to which the VM's directory is appended (svc vz-runner DIR).
	Runner []string
	// Leases is the host's DHCP leases file (DefaultLeases when empty).
	Leases string
	// GuestVNCPassword is what guests' screens ask for (the images' own
	// Screen Sharing password).
	GuestVNCPassword string
	// ToRaw converts a qcow2 base image to raw (the pure-Go converter
	// when nil).
	ToRaw func(ctx context.Context, src, dst string) error
	// SaveRestore says the host can save and restore a VM's memory
	// (HostSupportsSaveRestore).
	SaveRestore bool
	// StartTimeout bounds a runner's start (2 minutes when 0); a macOS
	// install is given InstallTimeout (2 hours when 0).
	StartTimeout   time.Duration
	InstallTimeout time.Duration
	Log            *slog.Logger
}

// DefaultLeases is where macOS's DHCP server (bootpd, serving vz's NAT
// network) records its leases.
const DefaultLeases = "/var/db/dhcpd_leases"

// maxSocketPath is the longest unix socket path macOS takes (sun_path is
// 104 bytes with its terminating zero).
const maxSocketPath = 103

// Files of a VM's directory.
const (
	diskFile    = "disk.raw"
	nvramFile   = "nvram.bin"
	consoleFile = "console.log"
	maxConsole  = 1 << 20
)

// Driver runs each VM in a runner process of its own and talks to it on
// its control socket; it implements hypervisor.Driver, Pauser, Disks and
// Console (the screen is the runner's proxy to the guest's).
type Driver struct {
	// Guests serves the guest-agent calls through the runner's agent
	// socket (agent.go).
	qga.Guests

	cfg        Config
	conversion singleflight.Group
}

// memoryDriver is a Driver on a host that saves and restores memory.
type memoryDriver struct{ *Driver }

// New returns the driver for cfg: with hypervisor.MemorySnapshots when
// cfg.SaveRestore.
func New(cfg Config) (hypervisor.Driver, error) {
	if cfg.Dir == "" || cfg.Prefix == "" || len(cfg.Runner) == 0 {
		return nil, errors.New("vz: a directory, a name prefix and a runner command are needed")
	}
	if cfg.Leases == "" {
		cfg.Leases = DefaultLeases
	}
	if cfg.ToRaw == nil {
		cfg.ToRaw = rawdisk.FromQcow2
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 2 * time.Minute
	}
	if cfg.InstallTimeout == 0 {
		cfg.InstallTimeout = 2 * time.Hour
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	d := &Driver{cfg: cfg}
	d.Guests = qga.Guests{Agent: d.agent}
	if p := d.socketPath("x"); len(p) > maxSocketPath {
		return nil, fmt.Errorf("vz: control sockets under %s would be %d bytes long, over macOS's %d: use a shorter --data-dir", cfg.Dir, len(p), maxSocketPath)
	}
	for _, sub := range []string{cfg.Dir, filepath.Join(cfg.Dir, ".sock"), filepath.Join(cfg.Dir, ".raw")} {
		if err := os.MkdirAll(sub, 0o700); err != nil {
			return nil, fmt.Errorf("vz: %w", err)
		}
	}
	if cfg.SaveRestore {
		return memoryDriver{d}, nil
	}
	return d, nil
}

// Describe names the driver.
func (d *Driver) Describe() string {
	return "vz (Apple's Virtualization framework, one runner process per VM)"
}

// Probe checks that VMs can be built here: the runner's binary and the
// VMs' directory.
func (d *Driver) Probe(context.Context) error {
	if _, err := exec.LookPath(d.cfg.Runner[0]); err != nil {
		return fmt.Errorf("vz: the runner %s: %w", d.cfg.Runner[0], err)
	}
	_, err := os.Stat(d.cfg.Dir)
	return err
}

func (d *Driver) vmDir(name string) string { return filepath.Join(d.cfg.Dir, name) }

// DiskPath returns the VM's raw disk.
func (d *Driver) DiskPath(name string) string { return filepath.Join(d.vmDir(name), diskFile) }

// socketPath is short whatever the VM's name: macOS bounds socket paths.
func (d *Driver) socketPath(name string) string {
	h := sha256.Sum256([]byte(name))
	return filepath.Join(d.cfg.Dir, ".sock", hex.EncodeToString(h[:6])+".sock")
}

func (d *Driver) checkName(name string) error {
	if !strings.HasPrefix(name, d.cfg.Prefix) || strings.ContainsAny(name, "/\\") || name == d.cfg.Prefix {
		return fmt.Errorf("vz: %q is not a VM name of this peer", name)
	}
	return nil
}

// Create makes the VM's directory (its disk a clone of the raw base)
// unless it is there, and starts its runner.
func (d *Driver) Create(ctx context.Context, s hypervisor.Spec) error {
	if err := d.checkName(s.Name); err != nil {
		return err
	}
	cfg, err := d.prepare(ctx, s, false)
	if err != nil {
		return err
	}
	return d.spawn(ctx, s.Name, cfg)
}

// prepare writes the VM's directory for s; fresh replaces its disk and
// NVRAM with new copies of the image's.
func (d *Driver) prepare(ctx context.Context, s hypervisor.Spec, fresh bool) (RunnerConfig, error) {
	dir := d.vmDir(s.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return RunnerConfig{}, fmt.Errorf("vz: %w", err)
	}
	old, err := readRunnerConfig(dir)
	known := err == nil
	disk := d.DiskPath(s.Name)
	if fresh {
		_ = os.Remove(disk)
		_ = os.Remove(filepath.Join(dir, nvramFile))
	}
	if _, err := os.Stat(disk); errors.Is(err, fs.ErrNotExist) {
		base, err := d.rawBase(ctx, s.BaseImage, s.BaseFormat)
		if err != nil {
			return RunnerConfig{}, err
		}
		if err := rawdisk.Clone(ctx, base, disk); err != nil {
			return RunnerConfig{}, fmt.Errorf("vz: the VM's disk: %w", err)
		}
		if s.NVRAM != "" {
			if err := rawdisk.Clone(ctx, s.NVRAM, filepath.Join(dir, nvramFile)); err != nil {
				return RunnerConfig{}, fmt.Errorf("vz: the VM's NVRAM: %w", err)
			}
		}
	}
	m := MachineConfig{
		Name: s.Name, OS: s.GuestOS, CPU: s.CPU, MemoryMiB: s.MemoryMiB,
		Disk: disk, ISO: s.ISO, NVRAM: filepath.Join(dir, nvramFile),
		HardwareModel: s.HardwareModel, ConsoleLog: filepath.Join(dir, consoleFile),
		Width: 1920, Height: 1080, SharedDir: s.SharedDir,
	}
	if m.OS == "" {
		m.OS = GuestLinux
	}
	if known {
		// a VM keeps its network identity (its MAC, so its lease) and its
		// machine identifier through a revert
		m.MAC, m.MachineID = old.Machine.MAC, old.Machine.MachineID
		if len(m.HardwareModel) == 0 && !fresh {
			m.HardwareModel = old.Machine.HardwareModel // installed here
		}
	}
	if m.OS == GuestMacOS {
		// a macOS guest's "ISO" is a restore image: it installs macOS
		// once, onto a disk that has none yet
		if m.ISO != "" && len(m.HardwareModel) == 0 {
			m.InstallIPSW = m.ISO
		}
		m.ISO = ""
	}
	if m.MAC == "" {
		m.MAC = randomMAC().String()
	}
	cfg := RunnerConfig{
		Machine: m, Socket: d.socketPath(s.Name), AgentSocket: d.agentSocketPath(s.Name), ListenAddr: s.ListenAddr, Forwards: s.Forwards,
		VNCPort: s.VNCPort, VNCPassword: s.VNCPassword, GuestVNCPassword: d.cfg.GuestVNCPassword, Leases: d.cfg.Leases,
	}
	if err := cfg.Machine.Validate(); err != nil {
		return cfg, err
	}
	return cfg, writeRunnerConfig(dir, cfg)
}

// randomMAC is a locally administered unicast address.
func randomMAC() net.HardwareAddr {
	mac := make(net.HardwareAddr, 6)
	_, _ = rand.Read(mac)
	mac[0] = mac[0]&0xfe | 0x02
	return mac
}

// rawBase returns a raw copy of the base image: the image itself when
// raw, else its conversion, made once and kept beside the VMs under the
// blob's content-addressed name.
func (d *Driver) rawBase(ctx context.Context, base, format string) (string, error) {
	if format == "raw" {
		return base, nil
	}
	raw := filepath.Join(d.rawDir(), filepath.Base(base)+".raw")
	_, err, _ := d.conversion.Do(raw, func() (any, error) {
		if _, err := os.Stat(raw); err == nil {
			return nil, nil
		}
		tmp := raw + ".tmp"
		// One a crash left (this conversion is the only one of its base).
		if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("vz: %w", err)
		}
		if err := d.cfg.ToRaw(ctx, base, tmp); err != nil {
			_ = os.Remove(tmp)
			return nil, fmt.Errorf("vz: convert %s to raw: %w", base, err)
		}
		return nil, os.Rename(tmp, raw)
	})
	return raw, err
}

// spawn starts the VM's runner with cfg and waits until its machine runs.
func (d *Driver) spawn(ctx context.Context, name string, cfg RunnerConfig) error {
	if r, err := ask(ctx, cfg.Socket, request{Op: opState}); err == nil {
		return fmt.Errorf("vz: %s runs already (runner %d, %s)", name, r.PID, r.State)
	}
	dir := d.vmDir(name)
	logf, err := os.OpenFile(filepath.Join(dir, runnerLog), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("vz: %w", err)
	}
	defer logf.Close()
	// not CommandContext: the runner, and the VM, outlive this call and
	// the peer
	cmd := exec.Command(d.cfg.Runner[0], append(d.cfg.Runner[1:], dir)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = detached()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("vz: start the runner of %s: %w", name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reaps it while this peer lives
	timeout := d.cfg.StartTimeout
	if cfg.Machine.InstallIPSW != "" {
		timeout = d.cfg.InstallTimeout
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if r, err := ask(wctx, cfg.Socket, request{Op: opState}); err == nil && r.State != MachineStarting {
			if r.State == MachineRunning || r.State == MachinePaused {
				return nil
			}
			return fmt.Errorf("vz: %s is %s after its start: %s", name, r.State, d.logTail(name))
		}
		select {
		case err := <-exited:
			return fmt.Errorf("vz: the runner of %s ended (%v): %s", name, err, d.logTail(name))
		case <-wctx.Done():
			return fmt.Errorf("vz: %s did not start within %s: %s", name, timeout, d.logTail(name))
		case <-tick.C:
		}
	}
}

// logTail is the end of a VM's runner log, for errors.
func (d *Driver) logTail(name string) string {
	b, err := readTail(filepath.Join(d.vmDir(name), runnerLog), 512)
	if err != nil {
		return "no runner log"
	}
	return strings.TrimSpace(string(b))
}

// readTail reads the last n bytes of a file.
func readTail(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max(st.Size()-n, 0)
	b := make([]byte, st.Size()-off)
	_, err = f.ReadAt(b, off)
	return b, err
}
