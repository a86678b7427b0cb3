//go:build !darwin && !linux

package rawdisk

import "errors"

func reflink(string, string) error { return errors.New("no block clones on this system") }
