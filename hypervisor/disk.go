package hypervisor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// createOverlay makes a fresh qcow2 overlay at path on the base image.
func createOverlay(ctx context.Context, base, baseFormat, path string) error {
	if baseFormat == "" {
		baseFormat = "qcow2"
	}
	tmp := path + ".tmp"
	_ = os.Remove(tmp)
	out, err := exec.CommandContext(ctx, "qemu-img", "create", "-q", "-f", "qcow2", "-b", base, "-F", baseFormat, tmp).CombinedOutput()
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("qemu-img create overlay: %w: %s", err, strings.TrimSpace(string(out)))
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("place overlay: %w", err)
	}
	return nil
}

// exportDisk writes the overlay at path, flattened onto its base, to dst as
// a standalone qcow2 (what a commit or save keeps).
func exportDisk(ctx context.Context, path, dst string) error {
	out, err := exec.CommandContext(ctx, "qemu-img", "convert", "-q", "-W", "-O", "qcow2", path, dst).CombinedOutput()
	if err != nil {
		_ = os.Remove(dst)
		return fmt.Errorf("qemu-img convert: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
