//go:build darwin && cgo && amd64

package vz

import (
	"context"
	"fmt"

	"github.com/Code-Hex/vz/v3"
	"github.com/svc-project/svc/hypervisor"
)

// Intel Macs run Linux guests only: macOS guests and memory save/restore
// are Apple-silicon parts of the framework (an Intel Mac's machine is no
// StateSaver).

func macOSConfiguration(context.Context, *MachineConfig) (*vz.VirtualMachineConfiguration, error) {
	return nil, fmt.Errorf("macOS guests need an Apple silicon host: %w", hypervisor.ErrUnsupported)
}

func installMacOS(context.Context, *vz.VirtualMachine, string) error {
	return fmt.Errorf("macOS installs need an Apple silicon host: %w", hypervisor.ErrUnsupported)
}

func (m *vzMachine) restore(context.Context) error {
	return fmt.Errorf("memory restore needs an Apple silicon host: %w", hypervisor.ErrUnsupported)
}

// HostSupportsSaveRestore is false on Intel Macs.
func HostSupportsSaveRestore() bool { return false }
