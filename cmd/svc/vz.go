package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/vz"
	"github.com/svc-project/svc/peer"
)

// defaultHypervisor is vz on macOS, libvirt elsewhere.
func defaultHypervisor() string {
	if runtime.GOOS == "darwin" {
		return "vz"
	}
	return "libvirt"
}

// newVZDriver is the macOS driver: each VM in a runner process of this
// binary (svc vz-runner DIR).
func newVZDriver(cfg peer.Config, guestVNCPassword string) (hypervisor.Driver, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("vz: find this binary for the VM runners: %w", err)
	}
	drv, err := vz.New(vz.Config{
		Dir: peer.VMDir(cfg.DataDir), Prefix: hypervisor.DomainPrefix(cfg.Name), Runner: []string{self, "vz-runner"},
		GuestVNCPassword: guestVNCPassword, SaveRestore: vz.HostSupportsSaveRestore(), Log: cfg.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("vz driver: %w", err)
	}
	return drv, nil
}

// newVZRunnerCmd is the process that runs one VM for a vz peer: started by
// the peer, never by hand.
func newVZRunnerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "vz-runner DIR",
		Short:  "Run one VM of a vz peer (started by svc agent --hypervisor vz)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			// a service manager's stop ends the VM cleanly; the peer's
			// terminal does not reach this session
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
			defer stop()
			return vz.Run(ctx, args[0], vz.NewMachine, log)
		},
	}
}
