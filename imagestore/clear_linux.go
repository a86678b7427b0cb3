package imagestore

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// clearRange makes a range of f read as zeros: a hole punched where the
// file system can, zeros written where it cannot.
func clearRange(f *os.File, off, size int64) error {
	err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, size)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return writeZeros(f, off, size)
	}
	if err != nil {
		return fmt.Errorf("clear a range of the disk: %w", err)
	}
	return nil
}
