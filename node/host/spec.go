package host

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
)

// sharedDir is the shared folder vm sees ("" for a VM without one), made
// ready.
func (h *Host) sharedDir(ctx context.Context, vm raftfsm.VM) (string, error) {
	if !vm.SharedStorage {
		return "", nil
	}
	if h.cfg.Shared == nil {
		return "", fmt.Errorf("node %s offers no shared storage", h.cfg.Name)
	}
	ns, ok := h.cfg.FSM.Namespace(vm.Namespace)
	if !ok || ns.SharedStorage == nil {
		return "", fmt.Errorf("namespace %s has no shared storage (it was turned off)", vm.Namespace)
	}
	dir, err := h.cfg.Shared.Folder(ctx, vm.Namespace, ns.SharedStorage.MaxBytes)
	if err != nil {
		return "", fmt.Errorf("the namespace's shared folder: %w", err)
	}
	return dir, nil
}

// specFor turns a VM of the replicated state into a hypervisor spec.
func (h *Host) specFor(vm raftfsm.VM, name string) hypervisor.Spec {
	fwd := []hypervisor.Forward{{HostPort: vm.SSHPort, GuestPort: 22}, {HostPort: vm.ScreensharePort, GuestPort: 5900}}
	for _, r := range vm.ReservedPorts {
		fwd = append(fwd, hypervisor.Forward{HostPort: r.Host, GuestPort: r.Guest})
	}
	iso := ""
	if vm.ISODigest != "" {
		iso = h.cfg.Images.Path(vm.ISODigest)
	}
	s := hypervisor.Spec{
		Name: name, CPU: vm.CPU, MemoryMiB: vm.MemoryBytes >> 20, ISO: iso,
		BaseImage: h.cfg.Images.Path(vm.ImageDigest), BaseFormat: vm.ImageFormat,
		LegacyIO: vm.LegacyIO, ListenAddr: h.cfg.Bind, VNCPort: vm.VNCPort, VNCPassword: vm.VNCPassword, Forwards: fwd,
		GuestOS: vm.OS,
	}
	if vm.NVRAMDigest != "" {
		s.NVRAM = h.cfg.Images.Path(vm.NVRAMDigest)
	}
	if hw, err := base64.StdEncoding.DecodeString(vm.HardwareModel); err == nil {
		s.HardwareModel = hw
	}
	return s
}
