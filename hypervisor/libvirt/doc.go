// Package libvirt is the hypervisor.Driver of Linux hosts: it drives
// libvirtd (QEMU with KVM where real hardware virtualisation works, TCG
// software emulation otherwise) through github.com/digitalocean/go-libvirt
// and has every role of the contract. A domain's disk is a qcow2 overlay on
// its image (disk.go), its XML is rendered from the spec (domainxml.go),
// QEMU runs as an unprivileged user pinned by a static DAC label
// (qemuuser.go), guests are kept from the host's services by nftables
// (guard.go), node ports are forwarded to guests by the host (ports.go),
// memory snapshots are libvirt save files, edited to restore as another
// domain (memory.go, saveimage.go), and the guest agent runs commands,
// freezes file systems and sets the clock (exec.go, run.go, agent.go).
package libvirt
