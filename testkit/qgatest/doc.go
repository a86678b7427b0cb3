// Package qgatest runs QEMU's own guest agent (qemu-ga, Debian's
// qemu-guest-agent, which scripts/install-deps.sh installs for the image
// build) on a unix socket, as a guest's agent for tests of the protocol
// without a VM. The agent runs on the test's host, so the commands that
// change a machine (its clock, its file systems' freeze, shutdown,
// suspend, users' passwords and keys, CPUs and memory) are disabled; what
// a test runs through it runs on the host.
package qgatest
