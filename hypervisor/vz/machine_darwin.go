//go:build darwin && cgo

package vz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/Code-Hex/vz/v3"

	"github.com/svc-project/svc/hypervisor"
)

// vzMachine is a Machine run by Apple's Virtualization framework.
type vzMachine struct {
	cfg   MachineConfig
	vm    *vz.VirtualMachine
	done  chan struct{}
	agent io.ReadWriter // the guest agent's port (addAgentPort)

	mu    sync.Mutex
	state MachineState
}

// NewMachine builds the framework's VM for cfg (validated by the caller).
// A macOS guest needs an arm64 host; InstallIPSW installs it first.
func NewMachine(ctx context.Context, cfg MachineConfig) (Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var (
		vmc *vz.VirtualMachineConfiguration
		err error
	)
	switch cfg.OS {
	case GuestMacOS:
		vmc, err = macOSConfiguration(ctx, &cfg)
	default:
		vmc, err = linuxConfiguration(&cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("machine %s: %w", cfg.Name, err)
	}
	var agent io.ReadWriter = deadPort{}
	if port, err := addAgentPort(vmc); err == nil {
		agent = port
	}
	if ok, err := vmc.Validate(); !ok || err != nil {
		return nil, fmt.Errorf("machine %s: the framework refuses the configuration: %w", cfg.Name, err)
	}
	vm, err := vz.NewVirtualMachine(vmc)
	if err != nil {
		return nil, fmt.Errorf("machine %s: %w", cfg.Name, err)
	}
	m := &vzMachine{cfg: cfg, vm: vm, done: make(chan struct{}), state: MachineStopped, agent: agent}
	if cfg.InstallIPSW != "" {
		if err := installMacOS(ctx, vm, cfg.InstallIPSW); err != nil {
			return nil, fmt.Errorf("machine %s: install from %s: %w", cfg.Name, cfg.InstallIPSW, err)
		}
	}
	go m.watch()
	return m, nil
}

// linuxConfiguration is an EFI machine on the generic platform.
func linuxConfiguration(cfg *MachineConfig) (*vz.VirtualMachineConfiguration, error) {
	store, err := efiStore(cfg.NVRAM)
	if err != nil {
		return nil, err
	}
	boot, err := vz.NewEFIBootLoader(vz.WithEFIVariableStore(store))
	if err != nil {
		return nil, fmt.Errorf("EFI boot loader: %w", err)
	}
	vmc, err := vz.NewVirtualMachineConfiguration(boot, uint(cfg.CPU), uint64(cfg.MemoryMiB)<<20)
	if err != nil {
		return nil, err
	}
	var id *vz.GenericMachineIdentifier
	if len(cfg.MachineID) > 0 {
		id, err = vz.NewGenericMachineIdentifierWithData(cfg.MachineID)
	} else {
		id, err = vz.NewGenericMachineIdentifier()
	}
	if err != nil {
		return nil, fmt.Errorf("machine identifier: %w", err)
	}
	platform, err := vz.NewGenericPlatformConfiguration(vz.WithGenericMachineIdentifier(id))
	if err != nil {
		return nil, fmt.Errorf("generic platform: %w", err)
	}
	vmc.SetPlatformVirtualMachineConfiguration(platform)
	gpu, err := vz.NewVirtioGraphicsDeviceConfiguration()
	if err != nil {
		return nil, err
	}
	scanout, err := vz.NewVirtioGraphicsScanoutConfiguration(int64(cfg.Width), int64(cfg.Height))
	if err != nil {
		return nil, err
	}
	gpu.SetScanouts(scanout)
	vmc.SetGraphicsDevicesVirtualMachineConfiguration([]vz.GraphicsDeviceConfiguration{gpu})
	kbd, err := vz.NewUSBKeyboardConfiguration()
	if err != nil {
		return nil, err
	}
	vmc.SetKeyboardsVirtualMachineConfiguration([]vz.KeyboardConfiguration{kbd})
	pointer, err := vz.NewUSBScreenCoordinatePointingDeviceConfiguration()
	if err != nil {
		return nil, err
	}
	vmc.SetPointingDevicesVirtualMachineConfiguration([]vz.PointingDeviceConfiguration{pointer})
	return vmc, commonDevices(vmc, cfg)
}

// efiStore opens the VM's EFI variable store, creating it on first boot.
func efiStore(path string) (*vz.EFIVariableStore, error) {
	if exists(path) {
		return vz.NewEFIVariableStore(path)
	}
	return vz.NewEFIVariableStore(path, vz.WithCreatingEFIVariableStore())
}

// commonDevices adds what every guest has: its disk (and ISO), a NAT
// network interface with the VM's MAC, the serial console to a file,
// entropy and a memory balloon.
func commonDevices(vmc *vz.VirtualMachineConfiguration, cfg *MachineConfig) error {
	disk, err := vz.NewDiskImageStorageDeviceAttachmentWithCacheAndSync(cfg.Disk, false,
		vz.DiskImageCachingModeAutomatic, vz.DiskImageSynchronizationModeFsync)
	if err != nil {
		return fmt.Errorf("disk %s: %w", cfg.Disk, err)
	}
	block, err := vz.NewVirtioBlockDeviceConfiguration(disk)
	if err != nil {
		return err
	}
	storage := []vz.StorageDeviceConfiguration{block}
	if cfg.ISO != "" {
		iso, err := vz.NewDiskImageStorageDeviceAttachment(cfg.ISO, true)
		if err != nil {
			return fmt.Errorf("ISO %s: %w", cfg.ISO, err)
		}
		usb, err := vz.NewUSBMassStorageDeviceConfiguration(iso)
		if err != nil {
			return err
		}
		storage = append(storage, usb)
	}
	vmc.SetStorageDevicesVirtualMachineConfiguration(storage)

	hw, err := net.ParseMAC(cfg.MAC)
	if err != nil {
		return err
	}
	mac, err := vz.NewMACAddress(hw)
	if err != nil {
		return err
	}
	nat, err := vz.NewNATNetworkDeviceAttachment()
	if err != nil {
		return err
	}
	nic, err := vz.NewVirtioNetworkDeviceConfiguration(nat)
	if err != nil {
		return err
	}
	nic.SetMACAddress(mac)
	vmc.SetNetworkDevicesVirtualMachineConfiguration([]*vz.VirtioNetworkDeviceConfiguration{nic})

	serial, err := vz.NewFileSerialPortAttachment(cfg.ConsoleLog, true)
	if err != nil {
		return fmt.Errorf("console log %s: %w", cfg.ConsoleLog, err)
	}
	console, err := vz.NewVirtioConsoleDeviceSerialPortConfiguration(serial)
	if err != nil {
		return err
	}
	vmc.SetSerialPortsVirtualMachineConfiguration([]*vz.VirtioConsoleDeviceSerialPortConfiguration{console})

	entropy, err := vz.NewVirtioEntropyDeviceConfiguration()
	if err != nil {
		return err
	}
	vmc.SetEntropyDevicesVirtualMachineConfiguration([]*vz.VirtioEntropyDeviceConfiguration{entropy})
	balloon, err := vz.NewVirtioTraditionalMemoryBalloonDeviceConfiguration()
	if err != nil {
		return err
	}
	vmc.SetMemoryBalloonDevicesVirtualMachineConfiguration([]vz.MemoryBalloonDeviceConfiguration{balloon})
	return sharedDir(vmc, cfg)
}

// sharedDir gives the guest its namespace's shared folder, when it has one:
// a virtio file system device (macOS 12 or later) with the folder
// read-write, tagged for mini-linux's mount, or with the tag a macOS guest
// (13 or later) mounts by itself.
func sharedDir(vmc *vz.VirtualMachineConfiguration, cfg *MachineConfig) error {
	if cfg.SharedDir == "" {
		return nil
	}
	dir, err := vz.NewSharedDirectory(cfg.SharedDir, false)
	if err != nil {
		return fmt.Errorf("shared folder %s: %w", cfg.SharedDir, err)
	}
	share, err := vz.NewSingleDirectoryShare(dir)
	if err != nil {
		return fmt.Errorf("shared folder %s: %w", cfg.SharedDir, err)
	}
	tag := hypervisor.SharedTag
	if cfg.OS == GuestMacOS {
		if tag, err = vz.MacOSGuestAutomountTag(); err != nil {
			return fmt.Errorf("shared folder of a macOS guest: %w", err)
		}
	}
	fs, err := vz.NewVirtioFileSystemDeviceConfiguration(tag)
	if err != nil {
		return fmt.Errorf("shared folder device: %w", err)
	}
	fs.SetDirectoryShare(share)
	vmc.SetDirectorySharingDevicesVirtualMachineConfiguration([]vz.DirectorySharingDeviceConfiguration{fs})
	return nil
}

// watch follows the framework's state changes until the machine ends.
func (m *vzMachine) watch() {
	for s := range m.vm.StateChangedNotify() {
		st := stateOf(s)
		m.mu.Lock()
		m.state = st
		m.mu.Unlock()
		if st == MachineStopped || st == MachineError {
			close(m.done)
			return
		}
	}
}

func stateOf(s vz.VirtualMachineState) MachineState {
	switch s {
	case vz.VirtualMachineStateRunning:
		return MachineRunning
	case vz.VirtualMachineStatePaused, vz.VirtualMachineStateSaving, vz.VirtualMachineStatePausing:
		return MachinePaused
	case vz.VirtualMachineStateStarting, vz.VirtualMachineStateRestoring, vz.VirtualMachineStateResuming:
		return MachineStarting
	case vz.VirtualMachineStateStopping:
		return MachineStopping
	case vz.VirtualMachineStateError:
		return MachineError
	default:
		return MachineStopped
	}
}

// call runs one of the framework's blocking calls, bounded by ctx (the
// call itself goes on to its end in the framework's queue).
func call(ctx context.Context, f func() error) error {
	errc := make(chan error, 1)
	go func() { errc <- f() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// The framework's machine has every role but saving state, which only
// Apple silicon has (machine_darwin_arm64.go).
var (
	_ Machine        = (*vzMachine)(nil)
	_ MachinePauser  = (*vzMachine)(nil)
	_ PlatformKeeper = (*vzMachine)(nil)
)

func (m *vzMachine) Start(ctx context.Context) error {
	if m.cfg.RestoreFrom != "" {
		return m.restore(ctx)
	}
	return call(ctx, func() error { return m.vm.Start() })
}

func (m *vzMachine) RequestStop(context.Context) error {
	if !m.vm.CanRequestStop() {
		return errors.New("the guest cannot be asked to stop now")
	}
	_, err := m.vm.RequestStop()
	return err
}

func (m *vzMachine) Stop(ctx context.Context) error {
	return call(ctx, m.vm.Stop)
}

func (m *vzMachine) Pause(ctx context.Context) error {
	return call(ctx, m.vm.Pause)
}

func (m *vzMachine) Resume(ctx context.Context) error {
	return call(ctx, m.vm.Resume)
}

func (m *vzMachine) State() MachineState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state
}

func (m *vzMachine) Done() <-chan struct{} { return m.done }

func (m *vzMachine) Identity() (hardwareModel, machineID []byte) {
	return m.cfg.HardwareModel, m.cfg.MachineID
}
