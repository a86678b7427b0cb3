package imagestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Info is what qemu-img says of a disk image.
type Info struct {
	Format      string `json:"format"`
	VirtualSize int64  `json:"virtual-size"`
	BackingFile string `json:"backing-filename"`
}

// Inspect reads a disk image's format and virtual size with qemu-img.
func Inspect(ctx context.Context, path string) (Info, error) {
	out, err := exec.CommandContext(ctx, "qemu-img", "info", "--output=json", path).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return Info{}, fmt.Errorf("qemu-img info: %w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return Info{}, fmt.Errorf("qemu-img info: %w", err)
	}
	var info Info
	if err := json.Unmarshal(out, &info); err != nil {
		return Info{}, fmt.Errorf("qemu-img info: %w", err)
	}
	return info, nil
}

// MinRawSize is the smallest raw disk image accepted: a raw image is whole
// 512-byte sectors, and anything under a mebibyte is not a disk anyone boots.
const MinRawSize = 1 << 20

// ErrNotADisk is wrapped when a file is not a standalone disk image.
var ErrNotADisk = errors.New("not a disk image")

// CheckDisk accepts a standalone qcow2 image, or a raw image of whole
// sectors of at least MinRawSize (qemu-img calls any file raw, so a text file
// would otherwise pass). size is the file's size.
func CheckDisk(info Info, size int64) error {
	switch info.Format {
	case "qcow2":
	case "raw":
		if size < MinRawSize || size%512 != 0 {
			return fmt.Errorf("%w: a raw image is whole 512-byte sectors and at least %d bytes; this file is %d bytes", ErrNotADisk, MinRawSize, size)
		}
	default:
		return fmt.Errorf("%w: format %s: upload qcow2 or raw", ErrNotADisk, info.Format)
	}
	if info.BackingFile != "" {
		return fmt.Errorf("%w: it has a backing file (%s); upload a standalone image (qemu-img convert)", ErrNotADisk, info.BackingFile)
	}
	return nil
}

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
// are left as holes), for a registry push that cuts it into chunks.
func ToRaw(ctx context.Context, src, dst string) error {
	out, err := exec.CommandContext(ctx, "qemu-img", "convert", "-q", "-f", "qcow2", "-O", "raw", src, dst).CombinedOutput()
	if err != nil {
		_ = os.Remove(dst)
		return fmt.Errorf("qemu-img convert to raw: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ErrNotAnISO is wrapped when a file is not an ISO 9660 image.
var ErrNotAnISO = errors.New("not an ISO 9660 image")

// isoMagicOffset is where an ISO 9660 image's primary volume descriptor says
// "CD001": byte 1 of sector 16 (of 2048 bytes).
const isoMagicOffset = 16*2048 + 1

// CheckISO accepts an ISO 9660 image: a volume descriptor at sector 16.
func CheckISO(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("check ISO: %w", err)
	}
	defer f.Close()
	magic := make([]byte, 5)
	if _, err := f.ReadAt(magic, isoMagicOffset); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: the file is too short", ErrNotAnISO)
		}
		return fmt.Errorf("check ISO: %w", err)
	}
	if string(magic) != "CD001" {
		return fmt.Errorf("%w: no volume descriptor at sector 16", ErrNotAnISO)
	}
	return nil
}
