//go:build !linux

package main

import (
	"fmt"
	"os"
)

// The identity step is the mini-linux guest's (Linux): it reads and writes
// the guest's machine id, SSH host keys and random seed. Elsewhere it only
// builds, so that the tree builds for every platform svc runs on.
func main() {
	fmt.Fprintln(os.Stderr, "identity: runs in the mini-linux guest (Linux) only")
	os.Exit(2)
}
