package libvirt

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/svc-project/svc/imagestore/diskcheck"
)

// createOverlay makes a fresh qcow2 overlay at path on the base image, once
// the base's header has passed diskcheck again (it was checked when it
// entered the cluster; this is the last look before QEMU opens it). Only
// root reads the overlay until libvirt gives it to QEMU's user.
func createOverlay(ctx context.Context, base, baseFormat, path string) error {
	if baseFormat == "" {
		baseFormat = "qcow2"
	}
	info, err := diskcheck.Header(base, baseFormat)
	if err != nil {
		return fmt.Errorf("base image %s: %w", filepath.Base(base), err)
	}
	tmp := path + ".tmp"
	_ = os.Remove(tmp)
	// The size is given, so qemu-img does not open the base (-u).
	out, err := exec.CommandContext(ctx, "qemu-img", "create", "-q", "-f", "qcow2", "-u", "-b", base, "-F", baseFormat, tmp,
		strconv.FormatInt(info.VirtualSize, 10)).CombinedOutput()
	if err == nil {
		err = os.Chmod(tmp, 0o600)
	}
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
// a standalone qcow2 (what a commit or save keeps). The overlay's format is
// pinned; its base is the one createOverlay checked.
func exportDisk(ctx context.Context, path, dst string) error {
	out, err := exec.CommandContext(ctx, "qemu-img", "convert", "-q", "-W", "-f", "qcow2", "-O", "qcow2", path, dst).CombinedOutput()
	if err != nil {
		_ = os.Remove(dst)
		return fmt.Errorf("qemu-img convert: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
