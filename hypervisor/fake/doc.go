// Package fake is a hypervisor.Driver that keeps domains in memory, for
// tests of cluster logic and chaos runs (`svc agent --hypervisor fake`): it
// has the pause, disks, memory snapshot, resize and shared-folder roles,
// and Agent adds a guest agent that runs a few commands (echo, cat, true,
// exit, yes, sleep, the identity step). Tests make it fail, hold or vanish
// on demand. The real drivers have their own end-to-end tests (package
// libvirt on real VMs, package vz type-checked against Apple's framework).
package fake
