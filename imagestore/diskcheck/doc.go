// Package diskcheck decides whether a file may enter the cluster as a disk
// image or an ISO, and so be recorded and handed to a hypervisor.
//
// A disk image is more than its bytes: QEMU follows what a qcow2 header
// names (a backing file, an external data file) and, where its format is
// not pinned, guesses the format from the first bytes. A disk a user sends
// must therefore name nothing outside itself, and be of the format it is
// recorded as. Every disk is checked twice, by two readers that must agree:
// this package's own parser (probe.go, qcow2.go), which refuses before any
// tool opens the file, and then qemu-img, pinned to the format the parser
// found (qemu-img info for what the header says, qemu-img check for the
// tables of a qcow2). Header is the parser alone, cheap enough to run again
// wherever a disk is about to be opened.
package diskcheck
