//go:build darwin && cgo && arm64

package vz

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/Code-Hex/vz/v3"
)

// macOSConfiguration is a Mac platform: the image's hardware model, the
// VM's machine identifier and auxiliary storage (cfg.NVRAM), Mac graphics,
// keyboard and trackpad. Installing (cfg.InstallIPSW) takes the hardware
// model from the restore image and records it, and the identifier, in cfg.
func macOSConfiguration(ctx context.Context, cfg *MachineConfig) (*vz.VirtualMachineConfiguration, error) {
	if cfg.InstallIPSW != "" {
		img, err := loadRestoreImage(ctx, cfg.InstallIPSW)
		if err != nil {
			return nil, err
		}
		req := img.MostFeaturefulSupportedConfiguration()
		if req == nil {
			return nil, fmt.Errorf("restore image %s (macOS %s) supports no hardware model of this host", cfg.InstallIPSW, img.OperatingSystemVersion())
		}
		cfg.HardwareModel = req.HardwareModel().DataRepresentation()
		if uint64(cfg.CPU) < req.MinimumSupportedCPUCount() || uint64(cfg.MemoryMiB)<<20 < req.MinimumSupportedMemorySize() {
			return nil, fmt.Errorf("macOS %s needs at least %d CPUs and %d MiB", img.OperatingSystemVersion(),
				req.MinimumSupportedCPUCount(), req.MinimumSupportedMemorySize()>>20)
		}
	}
	if len(cfg.HardwareModel) == 0 {
		return nil, errors.New("a macOS guest needs its image's hardware model")
	}
	hw, err := vz.NewMacHardwareModelWithData(cfg.HardwareModel)
	if err != nil {
		return nil, fmt.Errorf("hardware model: %w", err)
	}
	if !hw.Supported() {
		return nil, errors.New("this host does not support the image's hardware model (a newer macOS is needed)")
	}
	var id *vz.MacMachineIdentifier
	if len(cfg.MachineID) > 0 {
		id, err = vz.NewMacMachineIdentifierWithData(cfg.MachineID)
	} else {
		id, err = vz.NewMacMachineIdentifier()
	}
	if err != nil {
		return nil, fmt.Errorf("machine identifier: %w", err)
	}
	cfg.MachineID = id.DataRepresentation()
	var aux *vz.MacAuxiliaryStorage
	if exists(cfg.NVRAM) {
		aux, err = vz.NewMacAuxiliaryStorage(cfg.NVRAM)
	} else {
		aux, err = vz.NewMacAuxiliaryStorage(cfg.NVRAM, vz.WithCreatingMacAuxiliaryStorage(hw))
	}
	if err != nil {
		return nil, fmt.Errorf("auxiliary storage %s: %w", cfg.NVRAM, err)
	}
	platform, err := vz.NewMacPlatformConfiguration(vz.WithMacHardwareModel(hw),
		vz.WithMacMachineIdentifier(id), vz.WithMacAuxiliaryStorage(aux))
	if err != nil {
		return nil, fmt.Errorf("Mac platform: %w", err)
	}
	boot, err := vz.NewMacOSBootLoader()
	if err != nil {
		return nil, err
	}
	vmc, err := vz.NewVirtualMachineConfiguration(boot, uint(cfg.CPU), uint64(cfg.MemoryMiB)<<20)
	if err != nil {
		return nil, err
	}
	vmc.SetPlatformVirtualMachineConfiguration(platform)
	gpu, err := vz.NewMacGraphicsDeviceConfiguration()
	if err != nil {
		return nil, err
	}
	display, err := vz.NewMacGraphicsDisplayConfiguration(int64(cfg.Width), int64(cfg.Height), 80)
	if err != nil {
		return nil, err
	}
	gpu.SetDisplays(display)
	vmc.SetGraphicsDevicesVirtualMachineConfiguration([]vz.GraphicsDeviceConfiguration{gpu})
	kbd, err := vz.NewMacKeyboardConfiguration()
	if err != nil {
		return nil, err
	}
	vmc.SetKeyboardsVirtualMachineConfiguration([]vz.KeyboardConfiguration{kbd})
	pad, err := vz.NewMacTrackpadConfiguration()
	if err != nil {
		return nil, err
	}
	vmc.SetPointingDevicesVirtualMachineConfiguration([]vz.PointingDeviceConfiguration{pad})
	return vmc, commonDevices(vmc, cfg)
}

// loadRestoreImage reads an IPSW, bounded by ctx.
func loadRestoreImage(ctx context.Context, path string) (*vz.MacOSRestoreImage, error) {
	var img *vz.MacOSRestoreImage
	err := call(ctx, func() error {
		var err error
		img, err = vz.LoadMacOSRestoreImageFromPath(path)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("restore image %s: %w", path, err)
	}
	return img, nil
}

// installMacOS installs the restore image onto the machine's disk.
func installMacOS(ctx context.Context, vm *vz.VirtualMachine, ipsw string) error {
	inst, err := vz.NewMacOSInstaller(vm, ipsw)
	if err != nil {
		return err
	}
	return inst.Install(ctx)
}

// restore starts the machine from its saved memory: the framework
// restores it paused, then it runs on.
func (m *vzMachine) restore(ctx context.Context) error {
	if err := call(ctx, func() error { return m.vm.RestoreMachineStateFromURL(m.cfg.RestoreFrom) }); err != nil {
		return fmt.Errorf("restore from %s: %w", m.cfg.RestoreFrom, err)
	}
	return m.Resume(ctx)
}

var _ StateSaver = (*vzMachine)(nil)

// SaveState writes the machine's state; the machine must be paused.
func (m *vzMachine) SaveState(ctx context.Context, path string) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("save state: %s exists", path)
	}
	return call(ctx, func() error { return m.vm.SaveMachineStateToPath(path) })
}

// HostSupportsSaveRestore reports whether this host can save and restore
// a machine's memory (macOS 14 or later on Apple silicon).
func HostSupportsSaveRestore() bool { return macOSAtLeast(14) }
