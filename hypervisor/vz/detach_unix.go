//go:build unix

package vz

import "syscall"

// detached puts a runner in a session of its own: signals to the peer's
// process group (a terminal's Ctrl-C, a service manager's stop) do not
// reach it, and it outlives the peer.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
