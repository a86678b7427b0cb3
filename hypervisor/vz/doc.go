// Package vz is the macOS hosts' hypervisor: Apple's Virtualization
// framework through github.com/Code-Hex/vz/v3.
//
// A VM lives only as long as the process that created it, so each VM runs
// in a runner of its own (Run, behind the hidden "svc vz-runner DIR"
// command): it builds the Machine (NewMachine, the framework's VM; only in
// darwin builds with cgo), answers the peer on a unix control socket,
// forwards the node's ports to the guest (vz's NAT network has none; the
// guest's address comes from macOS's DHCP leases file, ParseLeases) and
// serves the VM's screen as an RFB proxy that asks for the VM's password
// (ServeScreen). Driver starts runners in sessions of their own, so VMs
// outlive a peer restart and the peer finds them again; it implements
// hypervisor.Driver and the roles Pauser, Disks (raw disks cloned from a
// raw copy of the image), Console, GuestIdentity and, where the host can,
// MemorySnapshots.
//
// Everything but the framework's calls is plain Go, tested on Linux with a
// fake Machine in real runner processes; the framework's calls are
// type-checked by make darwin-check.
package vz
