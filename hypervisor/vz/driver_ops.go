package vz

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/imagestore/rawdisk"
)

// state asks the VM's runner for its machine's state; a VM without a
// runner is shut off.
func (d *Driver) state(ctx context.Context, name string) (hypervisor.State, error) {
	actx, cancel := context.WithTimeout(ctx, controlDialWait)
	defer cancel()
	r, err := ask(actx, d.socketPath(name), request{Op: opState})
	if errors.Is(err, errNoRunner) {
		return hypervisor.StateShutoff, nil
	}
	if err != nil {
		return hypervisor.StateOther, err
	}
	switch r.State {
	case MachineRunning, MachineStarting:
		return hypervisor.StateRunning, nil
	case MachinePaused:
		return hypervisor.StatePaused, nil
	case MachineStopping:
		return hypervisor.StateStopping, nil
	case MachineError:
		return hypervisor.StateCrashed, nil
	default:
		return hypervisor.StateShutoff, nil
	}
}

// List returns this peer's VMs: every directory under the prefix, each in
// its runner's state.
func (d *Driver) List(ctx context.Context) ([]hypervisor.Domain, error) {
	entries, err := os.ReadDir(d.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("vz: %w", err)
	}
	var out []hypervisor.Domain
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), d.cfg.Prefix) {
			continue
		}
		if _, err := os.Stat(filepath.Join(d.cfg.Dir, e.Name(), runnerFile)); err != nil {
			continue // not a VM (yet)
		}
		st, err := d.state(ctx, e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, hypervisor.Domain{Name: e.Name(), State: st})
	}
	return out, nil
}

// config reads a VM's runner config: ErrNotFound for a VM not here.
func (d *Driver) config(name string) (RunnerConfig, error) {
	if err := d.checkName(name); err != nil {
		return RunnerConfig{}, err
	}
	cfg, err := readRunnerConfig(d.vmDir(name))
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, fmt.Errorf("vz: %s: %w", name, hypervisor.ErrNotFound)
	}
	return cfg, err
}

// Start starts a stopped VM's runner again.
func (d *Driver) Start(ctx context.Context, name string) error {
	cfg, err := d.config(name)
	if err != nil {
		return err
	}
	if _, err := os.Stat(cfg.Machine.Disk); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("vz: %s: %w", name, hypervisor.ErrDiskMissing)
	}
	if cfg.Machine.RestoreFrom != "" {
		cfg.Machine.RestoreFrom = ""
		if err := writeRunnerConfig(d.vmDir(name), cfg); err != nil {
			return err
		}
	}
	return d.spawn(ctx, name, cfg)
}

// do sends op to the VM's runner; errNoRunner says it is off.
func (d *Driver) do(ctx context.Context, name string, req request) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	_, err := ask(ctx, d.socketPath(name), req)
	return err
}

// Stop asks the guest to shut down, forces it after grace, and waits
// until its runner has ended.
func (d *Driver) Stop(ctx context.Context, name string, grace time.Duration) error {
	err := d.do(ctx, name, request{Op: opStop, GraceSeconds: int(grace.Round(time.Second) / time.Second)})
	if errors.Is(err, errNoRunner) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("vz: stop %s: %w", name, err)
	}
	return d.waitGone(ctx, name)
}

// waitGone waits until the VM's runner no longer answers.
func (d *Driver) waitGone(ctx context.Context, name string) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := ask(ctx, d.socketPath(name), request{Op: opState}); errors.Is(err, errNoRunner) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("vz: %s's runner did not end: %w", name, ctx.Err())
		case <-tick.C:
		}
	}
}

// kill forces the VM off and waits for its runner to end.
func (d *Driver) kill(ctx context.Context, name string) error {
	err := d.do(ctx, name, request{Op: opKill})
	if errors.Is(err, errNoRunner) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("vz: force %s off: %w", name, err)
	}
	return d.waitGone(ctx, name)
}

// Delete forces the VM off and removes its directory.
func (d *Driver) Delete(ctx context.Context, name string) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	if err := d.kill(ctx, name); err != nil {
		return err
	}
	if err := os.RemoveAll(d.vmDir(name)); err != nil {
		return fmt.Errorf("vz: %w", err)
	}
	return nil
}

// Suspend holds a running VM.
func (d *Driver) Suspend(ctx context.Context, name string) error {
	return d.do(ctx, name, request{Op: opPause})
}

// Resume lets a held VM go on.
func (d *Driver) Resume(ctx context.Context, name string) error {
	return d.do(ctx, name, request{Op: opResume})
}

// Revert forces the VM off, gives it a fresh clone of its image's disk
// (and NVRAM) and starts it.
func (d *Driver) Revert(ctx context.Context, s hypervisor.Spec) error {
	if err := d.checkName(s.Name); err != nil {
		return err
	}
	if err := d.kill(ctx, s.Name); err != nil {
		return err
	}
	cfg, err := d.prepare(ctx, s, true)
	if err != nil {
		return err
	}
	return d.spawn(ctx, s.Name, cfg)
}

// Export writes the shut-off VM's disk to dst as a standalone raw image
// (sparse where the disk has holes).
func (d *Driver) Export(ctx context.Context, name, dst string) error {
	if st, err := d.state(ctx, name); err != nil || st != hypervisor.StateShutoff {
		return fmt.Errorf("vz: export %s: the VM must be shut off (%s, %v)", name, st, err)
	}
	if err := rawdisk.CopySparse(ctx, d.DiskPath(name), dst); err != nil {
		return fmt.Errorf("vz: export %s: %w", name, err)
	}
	return nil
}

// ConsoleLog returns the end of the VM's serial console.
func (d *Driver) ConsoleLog(name string) ([]byte, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	b, err := readTail(filepath.Join(d.vmDir(name), consoleFile), maxConsole)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("vz: %s: %w", name, hypervisor.ErrNotFound)
	}
	return b, err
}

// SaveMemory writes the VM's memory to path (in its directory) and stops
// it.
func (m memoryDriver) SaveMemory(ctx context.Context, name, path string) error {
	if filepath.Dir(path) != m.vmDir(name) {
		return fmt.Errorf("vz: a state file belongs in %s", m.vmDir(name))
	}
	if err := m.do(ctx, name, request{Op: opSave, Path: path}); err != nil {
		return fmt.Errorf("vz: save %s: %w", name, err)
	}
	return m.waitGone(ctx, name)
}

// RestoreMemory starts the VM whose directory holds path from it.
func (m memoryDriver) RestoreMemory(ctx context.Context, path string) error {
	name := filepath.Base(filepath.Dir(path))
	if filepath.Dir(filepath.Dir(path)) != filepath.Clean(m.cfg.Dir) {
		return fmt.Errorf("vz: %s is not in a VM's directory", path)
	}
	cfg, err := m.config(name)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("vz: restore %s: %w", name, err)
	}
	cfg.Machine.RestoreFrom = path
	if err := writeRunnerConfig(m.vmDir(name), cfg); err != nil {
		return err
	}
	return m.spawn(ctx, name, cfg)
}

// Identity returns the VM's NVRAM and hardware model.
func (d *Driver) Identity(name string) (string, []byte, error) {
	cfg, err := d.config(name)
	if err != nil {
		return "", nil, err
	}
	if _, err := os.Stat(cfg.Machine.NVRAM); err != nil {
		return "", nil, fmt.Errorf("vz: %s's NVRAM: %w", name, err)
	}
	return cfg.Machine.NVRAM, cfg.Machine.HardwareModel, nil
}

var (
	_ hypervisor.GuestIdentity   = (*Driver)(nil)
	_ hypervisor.Pauser          = (*Driver)(nil)
	_ hypervisor.Disks           = (*Driver)(nil)
	_ hypervisor.Console         = (*Driver)(nil)
	_ hypervisor.MemorySnapshots = memoryDriver{}
)

var _ hypervisor.SharedDirs = (*Driver)(nil)

// CanShareDirs answers nil: the framework's virtio file system device gives
// a guest a host folder (macOS 12 or later; a VM on an older Mac fails to
// start and says so).
func (d *Driver) CanShareDirs(context.Context) error { return nil }

// SharedDirOwner is svc's own user: the VM's runner process, which serves
// the folder to the guest, runs as it.
func (d *Driver) SharedDirOwner() (uid, gid int) { return os.Getuid(), os.Getgid() }
