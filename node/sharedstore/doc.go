// Package sharedstore keeps one host's shared folders: for each namespace
// whose shared storage is on, a file system of the namespace's bound (a
// sparse ext4 image under the peer's data directory, loop-mounted on the
// folder), its root owned by the user the hypervisor serves guests' files
// as. The namespace's VMs deployed with shared storage see the folder; a
// guest that fills it gets "No space left on device" at the bound. It is a
// per-host cache: nothing is copied between hosts.
package sharedstore
