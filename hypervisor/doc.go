// Package hypervisor runs VMs on this host. Driver is the small interface the
// peer's reconciler uses; Libvirt drives libvirtd (QEMU with KVM where real
// hardware virtualisation works, TCG software emulation otherwise) through
// github.com/digitalocean/go-libvirt; Fake keeps domains in memory for tests
// of cluster logic. A darwin driver (Apple's Virtualization framework) fits
// the same interface.
package hypervisor
