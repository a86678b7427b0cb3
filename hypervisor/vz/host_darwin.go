//go:build darwin

package vz

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// macOSAtLeast reports whether the host runs macOS major or later, read
// from the kernel (kern.osproductversion, e.g. "14.6.1").
func macOSAtLeast(major int) bool {
	v, err := unix.Sysctl("kern.osproductversion")
	if err != nil {
		return false
	}
	m, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	return err == nil && m >= major
}

// exists reports whether path names a file.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
