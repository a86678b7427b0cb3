package imagestore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// CreateEmpty writes an empty qcow2 disk of virtualSize bytes at path.
func CreateEmpty(ctx context.Context, path string, virtualSize int64) error {
	out, err := exec.CommandContext(ctx, "qemu-img", "create", "-q", "-f", "qcow2", path, strconv.FormatInt(virtualSize, 10)).CombinedOutput()
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("qemu-img create: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ToRaw writes the qcow2 disk at src to dst as a raw disk (sparse: zeros
// are left as holes), for a registry push that cuts it into chunks. src
// is a disk diskcheck passed; its format is pinned, never guessed.
func ToRaw(ctx context.Context, src, dst string) error {
	out, err := exec.CommandContext(ctx, "qemu-img", "convert", "-q", "-f", "qcow2", "-O", "raw", src, dst).CombinedOutput()
	if err != nil {
		_ = os.Remove(dst)
		return fmt.Errorf("qemu-img convert to raw: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
