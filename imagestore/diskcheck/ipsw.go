package diskcheck

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"syscall"
)

// FormatIPSW is a macOS restore image (an IPSW: a zip archive with a
// BuildManifest.plist), taken as an ISO is: what a macOS install starts
// from on a vz host.
const FormatIPSW = "ipsw"

// Bounds of a restore image's check: its directory is refused from the
// archive's end record before it is read, and its manifest read with a
// bound. What the archive's disk images hold is the Mac's framework's to
// read (docs/macos.md).
const (
	maxIPSWEntries   = 1 << 16
	maxIPSWDirectory = 32 << 20
	maxIPSWManifest  = 8 << 20
	// maxIPSWRatio bounds the archive's uncompressed size against the
	// file's: restore images hold disk images that are compressed already
	// (a ratio near 1); a zip bomb's is thousands.
	maxIPSWRatio = 20
)

// ipswSig is what a zip archive starts with.
const ipswSig = "PK\x03\x04"

// IsZip reports whether path starts as a zip archive does (an upload that
// is one is answered with the restore image's check, not the ISO's).
func IsZip(path string) bool {
	head, _, err := readHead(path, 4)
	return err == nil && string(head) == ipswSig
}

// IPSW checks that path is a macOS restore image.
func IPSW(path string) (Info, error) {
	head, size, err := readHead(path, 4)
	if err != nil {
		return Info{}, err
	}
	if string(head) != ipswSig {
		return Info{}, refused("not a macOS restore image (IPSW): not a zip archive")
	}
	entries, dirSize, err := zipDirectory(path, size)
	if err != nil {
		return Info{}, err
	}
	if entries > maxIPSWEntries || dirSize > maxIPSWDirectory {
		return Info{}, refused("a macOS restore image (IPSW) of %d files and a %d-byte directory is over %d files or %d bytes", entries, dirSize, maxIPSWEntries, maxIPSWDirectory)
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		return Info{}, refused("not a macOS restore image (IPSW): %v", err)
	}
	defer zr.Close()
	var total uint64
	var manifest *zip.File
	for _, f := range zr.File {
		total += f.UncompressedSize64
		if f.Name == "BuildManifest.plist" {
			manifest = f
		}
	}
	if total > uint64(size)*maxIPSWRatio+1<<30 {
		return Info{}, refused("a macOS restore image (IPSW) whose files would take %d bytes from %d is a zip bomb", total, size)
	}
	if manifest == nil {
		return Info{}, refused("not a macOS restore image (IPSW): no BuildManifest.plist")
	}
	if err := checkManifest(manifest); err != nil {
		return Info{}, err
	}
	return Info{Format: FormatIPSW, VirtualSize: size, Size: size}, nil
}

// checkManifest reads the BuildManifest.plist, bounded, and checks it is a
// property list of a restore image.
func checkManifest(f *zip.File) error {
	if f.UncompressedSize64 > maxIPSWManifest {
		return refused("a macOS restore image's BuildManifest.plist of %d bytes is over %d", f.UncompressedSize64, maxIPSWManifest)
	}
	rc, err := f.Open()
	if err != nil {
		return refused("a macOS restore image's BuildManifest.plist: %v", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxIPSWManifest+1))
	if err != nil {
		return refused("a macOS restore image's BuildManifest.plist: %v", err)
	}
	if len(b) > maxIPSWManifest {
		return refused("a macOS restore image's BuildManifest.plist decompresses past %d bytes", maxIPSWManifest)
	}
	plist := bytes.HasPrefix(b, []byte("bplist00")) || (bytes.HasPrefix(bytes.TrimSpace(b), []byte("<?xml")) && bytes.Contains(b, []byte("<plist")))
	if !plist || !bytes.Contains(b, []byte("ProductVersion")) {
		return refused("a macOS restore image's BuildManifest.plist is not a property list naming a ProductVersion")
	}
	return nil
}

// zipDirectory reads a zip archive's end record (and its zip64 form) from
// the file's end: how many entries the central directory has and how big
// it is, before anything reads the directory itself.
func zipDirectory(path string, size int64) (entries, dirSize uint64, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("check restore image: %w", err)
	}
	defer f.Close()
	const eocdLen, maxComment = 22, 65535
	tail := make([]byte, min(size, eocdLen+maxComment))
	if _, err := f.ReadAt(tail, size-int64(len(tail))); err != nil {
		return 0, 0, fmt.Errorf("check restore image: %w", err)
	}
	at := bytes.LastIndex(tail, []byte("PK\x05\x06"))
	if at < 0 || len(tail)-at < eocdLen {
		return 0, 0, refused("not a macOS restore image (IPSW): a zip archive without its end record")
	}
	eocd := tail[at:]
	entries = uint64(binary.LittleEndian.Uint16(eocd[10:]))
	dirSize = uint64(binary.LittleEndian.Uint32(eocd[12:]))
	if entries != 0xffff && dirSize != 0xffffffff {
		return entries, dirSize, nil
	}
	// zip64: a locator right before the end record names the zip64 one.
	loc := int64(len(tail)-at) + 20
	if size < loc {
		return 0, 0, refused("not a macOS restore image (IPSW): a zip64 archive without its locator")
	}
	var l [20]byte
	if _, err := f.ReadAt(l[:], size-loc); err != nil || string(l[:4]) != "PK\x06\x07" {
		return 0, 0, refused("not a macOS restore image (IPSW): a zip64 archive without its locator")
	}
	off := int64(binary.LittleEndian.Uint64(l[8:]))
	var z [56]byte
	if off < 0 || off > size-56 {
		return 0, 0, refused("not a macOS restore image (IPSW): a zip64 end record out of the file")
	}
	if _, err := f.ReadAt(z[:], off); err != nil || string(z[:4]) != "PK\x06\x06" {
		return 0, 0, refused("not a macOS restore image (IPSW): a zip64 end record not where its locator says")
	}
	return binary.LittleEndian.Uint64(z[32:]), binary.LittleEndian.Uint64(z[40:]), nil
}
