package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// writePrivate writes b to path through a new file that only this user
// may read (0600), renamed over path once whole. The new file is created
// under a random name that no other file has (O_EXCL, as os.CreateTemp
// does): a name anyone can guess, in a folder another local user can
// write, would let that user make it first, as a file of theirs or a
// link to one, and take what it holds (a token).
func writePrivate(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
