package vz

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/imagestore/rawdisk"
)

// memoryFile is a VM's memory state file in its directory.
const memoryFile = "memory.state"

// MemoryPath is where a VM's memory file goes: in its directory.
func (m memoryDriver) MemoryPath(name string) string { return filepath.Join(m.vmDir(name), memoryFile) }

// RestoreAs makes VM s from the memory file of VM from and clones of its
// disk and NVRAM, and starts its runner restoring that state. The machine
// is from's as saved (CPU, memory, platform identity: the framework
// restores a state only into the configuration it was saved from), except
// its MAC address, which is s's own so that VMs restored from one template
// do not share a lease; s keeps its own forwards and screen password.
// On failure nothing of s is left.
func (m memoryDriver) RestoreAs(ctx context.Context, from string, s hypervisor.Spec) (err error) {
	if err := m.checkName(s.Name); err != nil {
		return err
	}
	src, err := m.config(from)
	if err != nil {
		return err
	}
	state := m.MemoryPath(from)
	if _, err := os.Stat(state); err != nil {
		return fmt.Errorf("vz: restore %s from %s: %w", s.Name, from, err)
	}
	dir := m.vmDir(s.Name)
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("vz: restore %s: %w", s.Name, fs.ErrExist)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("vz: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	mc := src.Machine
	mc.Name, mc.Disk, mc.ConsoleLog = s.Name, m.DiskPath(s.Name), filepath.Join(dir, consoleFile)
	mc.NVRAM, mc.MAC, mc.RestoreFrom, mc.InstallIPSW = filepath.Join(dir, nvramFile), randomMAC().String(), state, ""
	if err := rawdisk.Clone(ctx, src.Machine.Disk, mc.Disk); err != nil {
		return fmt.Errorf("vz: restore %s: the template's disk: %w", s.Name, err)
	}
	if err := rawdisk.Clone(ctx, src.Machine.NVRAM, mc.NVRAM); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("vz: restore %s: the template's NVRAM: %w", s.Name, err)
	}
	cfg := RunnerConfig{
		Machine: mc, Socket: m.socketPath(s.Name), AgentSocket: m.agentSocketPath(s.Name), ListenAddr: s.ListenAddr, Forwards: s.Forwards,
		VNCPort: s.VNCPort, VNCPassword: s.VNCPassword, GuestVNCPassword: m.cfg.GuestVNCPassword, Leases: m.cfg.Leases,
	}
	if err := cfg.Machine.Validate(); err != nil {
		return err
	}
	if err := writeRunnerConfig(dir, cfg); err != nil {
		return err
	}
	return m.spawn(ctx, s.Name, cfg)
}
