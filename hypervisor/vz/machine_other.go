//go:build !darwin || !cgo

package vz

import (
	"context"
	"fmt"
)

// NewMachine fails: this build has no Virtualization framework.
func NewMachine(_ context.Context, cfg MachineConfig) (Machine, error) {
	return nil, fmt.Errorf("machine %s: %w", cfg.Name, ErrNoFramework)
}

// HostSupportsSaveRestore reports whether this host can save and restore
// a machine's memory: never without the framework.
func HostSupportsSaveRestore() bool { return false }
