package vz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
)

// Guest operating systems a machine boots.
const (
	// GuestLinux boots through an EFI boot loader and variable store on
	// vz's generic platform.
	GuestLinux = "linux"
	// GuestMacOS boots on a Mac platform (hardware model, machine
	// identifier, auxiliary storage); arm64 hosts only.
	GuestMacOS = "darwin"
)

// MachineConfig is one VM as its runner builds it: written by the driver
// to the VM's directory, read by the runner. Paths are absolute.
type MachineConfig struct {
	Name      string `json:"name"`
	OS        string `json:"os"`
	CPU       int    `json:"cpu"`
	MemoryMiB int64  `json:"memoryMiB"`
	// Disk is the VM's raw disk (a clone of its image's raw base).
	Disk string `json:"disk"`
	// ISO, when set, is attached read-only as a USB mass-storage device.
	ISO string `json:"iso,omitempty"`
	// NVRAM is the EFI variable store (Linux) or auxiliary storage
	// (macOS); created when missing.
	NVRAM string `json:"nvram"`
	// HardwareModel and MachineID are the Mac platform's identity (macOS
	// guests); MachineID is the generic platform's for Linux guests.
	HardwareModel []byte `json:"hardwareModel,omitempty"`
	MachineID     []byte `json:"machineID,omitempty"`
	// MAC is the NAT network interface's address (the lease lookup key).
	MAC string `json:"mac"`
	// ConsoleLog receives the guest's serial console.
	ConsoleLog string `json:"consoleLog"`
	// Width and Height are the screen's size in pixels.
	Width  int `json:"width"`
	Height int `json:"height"`
	// RestoreFrom, when set, is a memory state file the machine starts
	// from instead of booting (arm64, macOS 14 or later).
	RestoreFrom string `json:"restoreFrom,omitempty"`
	// InstallIPSW, when set, installs macOS from this restore image onto
	// Disk before the first boot.
	InstallIPSW string `json:"installIPSW,omitempty"`
	// SharedDir, when set, is a host folder the guest sees read-write through
	// a virtio file system device: tagged hypervisor.SharedTag for a Linux
	// guest, automounted by a macOS guest (under /Volumes/My Shared Files).
	SharedDir string `json:"sharedDir,omitempty"`
}

// Bounds of a machine.
const (
	maxCPU       = 64
	maxMemoryMiB = 1 << 20
)

// Validate refuses a config no runner could build.
func (c *MachineConfig) Validate() error {
	switch {
	case c.Name == "":
		return errors.New("machine: no name")
	case c.OS != GuestLinux && c.OS != GuestMacOS:
		return fmt.Errorf("machine %s: guest OS %q: use %s or %s", c.Name, c.OS, GuestLinux, GuestMacOS)
	case c.CPU < 1 || c.CPU > maxCPU:
		return fmt.Errorf("machine %s: %d CPUs: give 1 to %d", c.Name, c.CPU, maxCPU)
	case c.MemoryMiB < 64 || c.MemoryMiB > maxMemoryMiB:
		return fmt.Errorf("machine %s: %d MiB of memory: give 64 to %d", c.Name, c.MemoryMiB, maxMemoryMiB)
	case c.Disk == "" || c.NVRAM == "" || c.ConsoleLog == "":
		return fmt.Errorf("machine %s: disk, NVRAM and console log paths are needed", c.Name)
	}
	if _, err := net.ParseMAC(c.MAC); err != nil {
		return fmt.Errorf("machine %s: MAC %q: %w", c.Name, c.MAC, err)
	}
	return nil
}

// MachineState is a machine's state as its runner reports it.
type MachineState string

// Machine states.
const (
	MachineStarting MachineState = "starting"
	MachineRunning  MachineState = "running"
	MachinePaused   MachineState = "paused"
	MachineStopping MachineState = "stopping"
	MachineStopped  MachineState = "stopped"
	MachineError    MachineState = "error"
)

// Machine is one running VM inside its runner: the seam Apple's
// Virtualization framework fills on macOS (NewMachine) and a fake fills in
// tests. Every call returns once the framework has answered or ctx ends.
// What only some machines can do is a role of its own, as the driver's
// are: MachinePauser, StateSaver, PlatformKeeper (the runner asks for a
// role and refuses plainly, hypervisor.ErrUnsupported, without it).
type Machine interface {
	// Start boots the machine, or restores it from MachineConfig.RestoreFrom.
	Start(ctx context.Context) error
	// RequestStop asks the guest to shut down (ACPI power button); macOS
	// guests ignore it.
	RequestStop(ctx context.Context) error
	// Stop ends the machine at once.
	Stop(ctx context.Context) error
	State() MachineState
	// Done is closed when the machine has stopped (or failed) for good.
	Done() <-chan struct{}
}

// MachinePauser is a machine that can be paused and resumed.
type MachinePauser interface {
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
}

// StateSaver is a machine whose memory and devices can be written to a
// file (Apple silicon, macOS 14 and later); it restores from one through
// MachineConfig.RestoreFrom.
type StateSaver interface {
	// SaveState writes the paused machine's memory and devices to path.
	SaveState(ctx context.Context, path string) error
}

// AgentPorter is a machine with a port for the guest's agent: a virtio
// console port named AgentPortName, QEMU's guest agent's (the guest's
// qemu-ga finds it by that name). AgentPort is the port's host end, a byte
// stream to and from the agent.
type AgentPorter interface {
	AgentPort() io.ReadWriter
}

// AgentPortName names the guest agent's port, as QEMU names it.
const AgentPortName = "org.qemu.guest_agent.0"

// PlatformKeeper is a machine with a platform identity of its own: a macOS
// guest's hardware model (taken from the restore image by an install) and
// machine identifier, which the VM keeps from then on.
type PlatformKeeper interface {
	Identity() (hardwareModel, machineID []byte)
}

// NewMachineFunc builds a machine from its config; NewMachine is the real
// one.
type NewMachineFunc func(ctx context.Context, cfg MachineConfig) (Machine, error)

// ErrNoFramework is returned by NewMachine where Apple's Virtualization
// framework is not: any build but macOS with cgo.
var ErrNoFramework = errors.New("vz: Apple's Virtualization framework needs svc built on macOS with cgo (CGO_ENABLED=1)")
