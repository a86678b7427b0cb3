package libvirt

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// libvirt's QEMU save file (virDomainSaveFlags, src/qemu/qemu_saveimage.h):
// a 92-byte header, a data block holding the domain's XML and a cookie,
// NUL-terminated and padded (so the XML can be edited in place), then
// QEMU's migration stream. libvirt restores a file only as the domain it
// names (name and UUID), so a domain restored from a template's file is
// restored from a copy whose XML names it instead.

// saveMagic starts a complete save file ("LibvirtQemudPart" one being written).
const saveMagic = "LibvirtQemudSave"

// saveHeaderLen is the header's size: the magic and 19 32-bit words.
const saveHeaderLen = 16 + 19*4

// maxSaveData bounds the data block read (libvirt pads it to 64 KiB more
// than the XML).
const maxSaveData = 16 << 20

// saveHeader is the header's fields svc reads and writes.
type saveHeader struct {
	Magic        [16]byte
	Version      uint32
	DataLen      uint32
	WasRunning   uint32
	Compressed   uint32
	CookieOffset uint32
	Unused       [14]uint32
}

// saveImage is a save file's header and the parts of its data block.
type saveImage struct {
	hdr    saveHeader
	xml    string
	cookie []byte // with its terminating NUL; empty when there is none
	size   int64  // of the whole file
}

// errBadSaveImage is wrapped by every refusal of a save file's contents.
var errBadSaveImage = errors.New("not a usable libvirt save file")

// readSaveImage reads and checks a save file's header and data block: a
// complete, uncompressed version 2 file whose stream is not empty.
func readSaveImage(path string) (saveImage, error) {
	f, err := os.Open(path)
	if err != nil {
		return saveImage{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return saveImage{}, err
	}
	var img saveImage
	img.size = fi.Size()
	if err := binary.Read(f, binary.LittleEndian, &img.hdr); err != nil {
		return saveImage{}, fmt.Errorf("%s: header: %w: %w", path, errBadSaveImage, err)
	}
	h := img.hdr
	switch {
	case string(h.Magic[:]) != saveMagic:
		return saveImage{}, fmt.Errorf("%s: %w: magic %q", path, errBadSaveImage, h.Magic[:])
	case h.Version != 2 || h.Compressed != 0:
		return saveImage{}, fmt.Errorf("%s: %w: version %d, compression %d (svc reads version 2, uncompressed)", path, errBadSaveImage, h.Version, h.Compressed)
	case h.DataLen == 0 || h.DataLen > maxSaveData || int64(saveHeaderLen)+int64(h.DataLen) >= img.size:
		return saveImage{}, fmt.Errorf("%s: %w: data block of %d bytes in a file of %d", path, errBadSaveImage, h.DataLen, img.size)
	case h.CookieOffset >= h.DataLen:
		return saveImage{}, fmt.Errorf("%s: %w: cookie at %d past the data block", path, errBadSaveImage, h.CookieOffset)
	}
	data := make([]byte, h.DataLen)
	if _, err := io.ReadFull(f, data); err != nil {
		return saveImage{}, fmt.Errorf("%s: data block: %w: %w", path, errBadSaveImage, err)
	}
	end := bytes.IndexByte(data, 0)
	if end <= 0 || (h.CookieOffset != 0 && uint32(end) >= h.CookieOffset) {
		return saveImage{}, fmt.Errorf("%s: %w: the domain XML is not terminated", path, errBadSaveImage)
	}
	img.xml = string(data[:end])
	if h.CookieOffset != 0 {
		c := data[h.CookieOffset:]
		n := bytes.IndexByte(c, 0)
		if n < 0 {
			return saveImage{}, fmt.Errorf("%s: %w: the cookie is not terminated", path, errBadSaveImage)
		}
		img.cookie = c[:n+1]
	}
	return img, nil
}

// writeRestoreFile writes dst (a new file) as a copy of the save file src
// whose domain XML is xml: the same data block size, so QEMU's stream
// follows at the same offset, copied in the kernel where it can.
func writeRestoreFile(ctx context.Context, src string, img saveImage, xml, dst string) error {
	x := append([]byte(xml), 0)
	if len(x)+len(img.cookie) > int(img.hdr.DataLen) {
		return fmt.Errorf("restore file: the new domain XML (%d bytes) does not fit the save file's data block (%d)", len(x), img.hdr.DataLen)
	}
	data := make([]byte, img.hdr.DataLen)
	copy(data, x)
	hdr := img.hdr
	if len(img.cookie) > 0 {
		hdr.CookieOffset = uint32(len(x))
		copy(data[len(x):], img.cookie)
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if _, err := in.Seek(int64(saveHeaderLen)+int64(img.hdr.DataLen), io.SeekStart); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("restore file: %w", err)
	}
	err = binary.Write(out, binary.LittleEndian, hdr)
	if err == nil {
		_, err = out.Write(data)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		var n int64
		n, err = io.Copy(out, in) // copy_file_range on Linux
		if want := img.size - int64(saveHeaderLen) - int64(img.hdr.DataLen); err == nil && n != want {
			err = fmt.Errorf("copied %d bytes of the stream, not %d", n, want)
		}
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(dst)
		return fmt.Errorf("restore file: %w", err)
	}
	return nil
}

var (
	uuidElement  = regexp.MustCompile(`<uuid>[0-9a-fA-F-]{36}</uuid>`)
	genidElement = regexp.MustCompile(`<genid>[0-9a-fA-F-]{36}</genid>`)
)

// restoredXML turns the domain XML of a save file of domain from into that
// of domain name: its name and UUID, its files (paths, old to new), and the
// QEMU arguments of its own XML (own), which hold its forwards and screen.
// The hardware stays as saved. Nothing of from may remain.
func restoredXML(saved, own, from, name, uuid string, paths [][2]string) (string, error) {
	x := saved
	oldName := "<name>" + xmlEscape(from) + "</name>"
	if strings.Count(x, oldName) != 1 {
		return "", fmt.Errorf("%w: the domain XML does not name %s once", errBadSaveImage, from)
	}
	x = strings.Replace(x, oldName, "<name>"+xmlEscape(name)+"</name>", 1)
	if len(uuidElement.FindAllStringIndex(x, -1)) != 1 {
		return "", fmt.Errorf("%w: the domain XML has no single UUID", errBadSaveImage)
	}
	x = uuidElement.ReplaceAllLiteralString(x, "<uuid>"+xmlEscape(uuid)+"</uuid>")
	// A new VM generation ID tells a guest that has the driver (Linux 5.18
	// and later, Windows) that it is a copy: it reseeds its random pool.
	if genid, err := newUUID(); err == nil {
		x = genidElement.ReplaceAllLiteralString(x, "<genid>"+genid+"</genid>")
	}
	for _, p := range paths {
		old := "'" + xmlEscape(p[0]) + "'"
		if !strings.Contains(x, old) {
			return "", fmt.Errorf("%w: the domain XML does not hold %s", errBadSaveImage, p[0])
		}
		x = strings.ReplaceAll(x, old, "'"+xmlEscape(p[1])+"'")
	}
	savedArgs, err := commandLine(x)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errBadSaveImage, err)
	}
	ownArgs, err := commandLine(own)
	if err != nil {
		return "", err
	}
	x = strings.Replace(x, savedArgs, ownArgs, 1)
	if strings.Contains(x, from) {
		return "", fmt.Errorf("%w: the domain XML names %s where svc did not expect it", errBadSaveImage, from)
	}
	return x, nil
}

// newUUID returns a random (version 4) UUID.
func newUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}
