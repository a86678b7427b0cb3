//go:build !linux

package imagestore

import "os"

// clearRange makes a range of f read as zeros.
func clearRange(f *os.File, off, size int64) error { return writeZeros(f, off, size) }
