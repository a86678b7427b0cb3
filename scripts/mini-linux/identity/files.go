//go:build linux

package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// The SSH host keys, in dropbear's format.
const (
	ed25519KeyFile = "etc/dropbear/dropbear_ed25519_host_key"
	ecdsaKeyFile   = "etc/dropbear/dropbear_ecdsa_host_key"
)

// newIdentity writes a new machine id (/etc/machine-id, as systemd writes
// one) and new SSH host keys under root, each replacing the old file whole.
func newIdentity(root string) error {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return fmt.Errorf("a machine id: %w", err)
	}
	id[6] = id[6]&0x0f | 0x40 // a version 4 UUID, as systemd makes
	id[8] = id[8]&0x3f | 0x80
	if err := writeFile(root, "etc/machine-id", []byte(hex.EncodeToString(id)+"\n"), 0o444); err != nil {
		return err
	}
	for path, make := range map[string]func() (hostKey, error){ed25519KeyFile: newEd25519, ecdsaKeyFile: newECDSA} {
		k, err := make()
		if err != nil {
			return fmt.Errorf("an SSH host key: %w", err)
		}
		if err := writeFile(root, path, k.file, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// writeFile replaces root/rel with data, whole (a new file renamed over it).
func writeFile(root, rel string, data []byte, mode os.FileMode) error {
	path := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil { // whatever the umask
		return err
	}
	return os.Rename(tmp, path)
}
