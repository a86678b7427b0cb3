// Package rawdisk makes the raw disks a hypervisor without qcow2 takes
// (Apple's Virtualization framework): a qcow2 converted to raw in pure Go
// (no qemu-img on the host; the result is byte for byte what qemu-img
// convert -O raw writes), sparse copies, and clones that share the
// original's blocks where the file system can (APFS clonefile, Linux
// FICLONE).
package rawdisk
