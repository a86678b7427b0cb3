// Package qga speaks QEMU's guest agent protocol (qemu-ga: JSON commands
// such as guest-exec and guest-file-read, each answered with a "return" or
// an "error"). Agent holds what is done with a guest through its agent
// (run a program and stream its outputs, run a short one, freeze and thaw
// its file systems, set its clock, ask what it is), over any way of sending
// one command: libvirt's agent call, or a stream to the agent's port (Conn:
// a virtio console port a hypervisor without libvirt connects to a socket).
package qga
