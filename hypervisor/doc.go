// Package hypervisor runs VMs on this host. Driver is what every
// hypervisor does (define, start, stop, delete and list domains); what only
// some can do is a role interface of its own: Pauser (suspend, resume),
// Disks (revert, export, the overlay's path), Console (a VNC screen served
// by the hypervisor, the serial log), MemorySnapshots (save a running
// guest to a file, restore it running), GuestGuard (keeping guests from
// the host's services) and GuestIdentity (a macOS guest's NVRAM and Mac
// platform, which a saved image keeps). AbilitiesOf finds a driver's roles at run time; a
// caller asks for a role and refuses plainly (ErrUnsupported) without it,
// so nothing outside this package knows which driver runs.
//
// The drivers live in packages of their own: hypervisor/libvirt drives
// libvirtd (QEMU with KVM where real hardware virtualisation works, TCG
// software emulation otherwise) and has every role; hypervisor/vz runs
// Macs' VMs (Apple's Virtualization framework); hypervisor/fake keeps
// domains in memory for tests of cluster logic (no screen, no guard). This
// package keeps the contract and what works through it on any driver
// (SyncGuestClock, RunIdentityStep).
package hypervisor
