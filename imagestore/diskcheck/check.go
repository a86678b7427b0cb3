package diskcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// Formats a checked file is recorded as.
const (
	FormatQcow2 = "qcow2"
	FormatRaw   = "raw"
	FormatISO   = "iso"
)

// Bounds of a disk.
const (
	// MaxVirtualSize is the largest virtual size taken: 64 TiB.
	MaxVirtualSize = 64 << 40
	// MinRawSize is the smallest raw disk taken: a raw disk is whole
	// 512-byte sectors, and anything under a mebibyte is no disk anyone
	// boots (every file that no probe claims is "raw" to QEMU, a text
	// file too).
	MinRawSize = 1 << 20
	// maxHead is how much of a file the parser reads: a qcow2 cluster at
	// most, which holds the header, its extensions and the backing name.
	maxHead = 1 << maxClusterBits
)

// ErrRefused is matched (errors.Is) by every refusal of a file for what it
// is, as opposed to a failure to read it.
var ErrRefused = errors.New("refused")

// RefusedError is a refusal; Reason says why, for the user.
type RefusedError struct{ Reason string }

func (r *RefusedError) Error() string        { return r.Reason }
func (r *RefusedError) Is(target error) bool { return target == ErrRefused }

func refused(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// Info is what a checked file is.
type Info struct {
	Format      string // FormatQcow2, FormatRaw or FormatISO
	VirtualSize int64  // the size the guest sees
	Size        int64  // the file's size
}

// Header checks a disk image with this package's parser alone, without
// running any tool: the format its first bytes are (which must be qcow2 or
// raw, and format when format is not ""), and for a qcow2 its header. It
// reads at most 2 MiB, so it can run wherever a disk is about to be opened.
func Header(path, format string) (Info, error) {
	info, _, err := header(path, format)
	return info, err
}

// header is Header, with the cluster size of a qcow2.
func header(path, format string) (Info, int64, error) {
	head, size, err := readHead(path, maxHead)
	if err != nil {
		return Info{}, 0, err
	}
	got := probe(head[:min(len(head), probeSize)])
	switch {
	case got != FormatQcow2 && got != FormatRaw:
		return Info{}, 0, refused("it is a %s image; svc takes qcow2 and raw disks (qemu-img convert -O qcow2 makes one)", got)
	case format != "" && got != format:
		return Info{}, 0, refused("its content is a %s image, not the %s disk it is declared as", got, format)
	case got == FormatRaw:
		if size < MinRawSize || size%512 != 0 {
			return Info{}, 0, refused("it is not a qcow2 image, and a raw disk is whole 512-byte sectors and at least %d bytes; this file is %d bytes", MinRawSize, size)
		}
		if size > MaxVirtualSize {
			return Info{}, 0, refused("a raw disk of %d bytes is over %d", size, int64(MaxVirtualSize))
		}
		return Info{Format: FormatRaw, VirtualSize: size, Size: size}, 0, nil
	}
	h, err := parseQcow2(head, size)
	if err != nil {
		return Info{}, 0, err
	}
	return Info{Format: FormatQcow2, VirtualSize: int64(h.size), Size: size}, 1 << h.clusterBits, nil
}

// Disk checks a disk image before it is recorded: Header, then qemu-img
// pinned to the format Header found, so that it never guesses a format or
// follows a name from a file that has not passed the parser. qemu-img info
// must see what the parser saw (no backing file, no data file, the same
// virtual size), and a qcow2 must pass qemu-img check: its L1, L2 and
// refcount tables consistent and inside the file. format is the format the
// disk is recorded as, or "" for whichever of qcow2 and raw it is.
func Disk(ctx context.Context, path, format string) (Info, error) {
	info, cluster, err := header(path, format)
	if err != nil {
		return Info{}, err
	}
	if err := qemuInfo(ctx, path, info); err != nil {
		return Info{}, err
	}
	if info.Format == FormatQcow2 {
		if err := qemuCheck(ctx, path, (info.Size+cluster-1)/cluster*cluster); err != nil {
			return Info{}, err
		}
	}
	return info, nil
}

// isoMagicOffset is where an ISO 9660 image's primary volume descriptor
// says "CD001": byte 1 of sector 16 (of 2048 bytes).
const isoMagicOffset = 16*2048 + 1

// ISO checks an ISO 9660 image: a volume descriptor at sector 16, and no
// other image format's header at its start (it is attached as raw data).
func ISO(path string) (Info, error) {
	head, size, err := readHead(path, isoMagicOffset+5)
	if err != nil {
		return Info{}, err
	}
	if len(head) < isoMagicOffset+5 {
		return Info{}, refused("not an ISO 9660 image: the file is too short")
	}
	if string(head[isoMagicOffset:]) != "CD001" {
		return Info{}, refused("not an ISO 9660 image: no volume descriptor at sector 16")
	}
	if got := probe(head[:probeSize]); got != FormatRaw {
		return Info{}, refused("not an ISO 9660 image: it starts as a %s image", got)
	}
	return Info{Format: FormatISO, VirtualSize: size, Size: size}, nil
}

// readHead reads up to n bytes from the start of the regular file at path
// (never through a symbolic link) and returns them with the file's size.
func readHead(path string, n int) ([]byte, int64, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("check disk: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("check disk: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, refused("it is not a regular file")
	}
	head := make([]byte, min(int64(n), fi.Size()))
	if _, err := io.ReadFull(f, head); err != nil {
		return nil, 0, fmt.Errorf("check disk: %w", err)
	}
	return head, fi.Size(), nil
}

// qemuImgInfo is what qemu-img info --output=json says of a disk.
type qemuImgInfo struct {
	Format              string `json:"format"`
	VirtualSize         int64  `json:"virtual-size"`
	BackingFile         string `json:"backing-filename"`
	FullBackingFile     string `json:"full-backing-filename"`
	Encrypted           bool   `json:"encrypted"`
	FormatSpecificQcow2 struct {
		Data struct {
			DataFile string `json:"data-file"`
			Corrupt  bool   `json:"corrupt"`
		} `json:"data"`
	} `json:"format-specific"`
}

func qemuInfo(ctx context.Context, path string, want Info) error {
	out, err := qemuImg(ctx, path, "info", "--output=json", "-f", want.Format)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return refused("qemu-img cannot read it as a %s disk: %v", want.Format, err)
	}
	if err != nil {
		return err
	}
	var qi qemuImgInfo
	if err := json.Unmarshal(out, &qi); err != nil {
		return fmt.Errorf("qemu-img info: %w", err)
	}
	spec := qi.FormatSpecificQcow2.Data
	switch {
	case qi.BackingFile != "" || qi.FullBackingFile != "":
		return refused("it has a backing file (%q); a disk must stand alone", printable([]byte(qi.BackingFile+qi.FullBackingFile)))
	case spec.DataFile != "":
		return refused("it keeps its data in an external data file (%q); a disk must hold its own data", printable([]byte(spec.DataFile)))
	case qi.Encrypted:
		return refused("it is encrypted; upload a disk without encryption")
	case spec.Corrupt:
		return refused("QEMU marked this qcow2 corrupt; repair it with qemu-img check -r all")
	case qi.Format != want.Format || qi.VirtualSize != want.VirtualSize:
		return refused("qemu-img reads it as a %s disk of %d bytes, svc's parser as a %s disk of %d bytes", qi.Format, qi.VirtualSize, want.Format, want.VirtualSize)
	}
	return nil
}

// qemuImgCheck is what qemu-img check --output=json says of a qcow2.
type qemuImgCheck struct {
	Corruptions    int   `json:"corruptions"`
	CheckErrors    int   `json:"check-errors"`
	ImageEndOffset int64 `json:"image-end-offset"`
}

// qemuCheck checks a qcow2 whose size, rounded up to whole clusters, is
// size.
func qemuCheck(ctx context.Context, path string, size int64) error {
	// Exit status 2 is corruption, 3 leaked clusters only (harmless: space
	// the image does not use); the JSON tells both.
	out, err := qemuImg(ctx, path, "check", "--output=json", "-f", FormatQcow2)
	var ee *exec.ExitError
	if err != nil && (!errors.As(err, &ee) || len(out) == 0) {
		return err
	}
	var qc qemuImgCheck
	if jerr := json.Unmarshal(out, &qc); jerr != nil {
		return fmt.Errorf("qemu-img check: %w", errors.Join(jerr, err))
	}
	switch {
	case qc.Corruptions > 0 || qc.CheckErrors > 0:
		return refused("qemu-img check finds %d errors in its qcow2 tables: the file is damaged or cut short", qc.Corruptions+qc.CheckErrors)
	case qc.ImageEndOffset > size:
		return refused("its qcow2 tables reach byte %d of a file of %d bytes: the file is cut short", qc.ImageEndOffset, size)
	}
	return nil
}

// qemuImg runs qemu-img with args and then path, and returns what it
// printed; a failure carries what it said on stderr, with the file's path
// (a host path, none of the user's business) left out.
func qemuImg(ctx context.Context, path string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "qemu-img", append(args, path)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(strings.ReplaceAll(stderr.String(), path, "the disk"))
		if len(msg) > 512 {
			msg = msg[:512]
		}
		return out, fmt.Errorf("qemu-img %s: %w: %s", args[0], err, printable([]byte(msg)))
	}
	return out, nil
}
