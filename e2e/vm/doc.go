// Package vm holds the tests on real guests: clusters whose peers run VMs
// under libvirt (QEMU, TCG on machines without KVM), reached over SSH and
// their consoles (make unit-vm).
package vm
