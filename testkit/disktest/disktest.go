package disktest

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RequireQemuImg skips the test without qemu-img, unless
// SVC_REQUIRE_LIBVIRT=1 (as in CI), where it fails instead.
func RequireQemuImg(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("qemu-img"); err != nil {
		if os.Getenv("SVC_REQUIRE_LIBVIRT") == "1" {
			t.Fatal("qemu-img missing (SVC_REQUIRE_LIBVIRT=1)")
		}
		t.Skip("qemu-img missing: run scripts/install-deps.sh")
	}
}

// QemuImg runs qemu-img and fails the test if it fails.
func QemuImg(t testing.TB, args ...string) {
	t.Helper()
	RequireQemuImg(t)
	if out, err := exec.Command("qemu-img", args...).CombinedOutput(); err != nil {
		t.Fatalf("qemu-img %v: %v %s", args, err, out)
	}
}

// Create makes a disk of a format (qcow2, raw, vmdk, ...) and virtual size
// (a qemu-img size such as "16M") with qemu-img create and extra options,
// and returns its path.
func Create(t testing.TB, format, size string, opts ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "disk."+format)
	args := append([]string{"create", "-q", "-f", format}, opts...)
	QemuImg(t, append(args, p, size)...)
	return p
}

// Read returns a file's bytes.
func Read(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Write writes b into a new file and returns its path.
func Write(t testing.TB, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// WithBacking returns a 1 MiB qcow2 whose backing file is target, of
// format: made with qemu-img create -u, which does not open target.
func WithBacking(t testing.TB, target, format string) []byte {
	t.Helper()
	return Read(t, Create(t, "qcow2", "1M", "-u", "-b", target, "-F", format))
}

// dataFileExt is the qcow2 header extension that names the external data file.
const dataFileExt = 0x44415441

// WithDataFile returns a 1 MiB qcow2 whose external data file (raw) is
// target. qemu-img makes it on a scratch data file; target is then written
// into the header's data file extension, so target is never opened.
func WithDataFile(t testing.TB, target string) []byte {
	t.Helper()
	scratch := filepath.Join(t.TempDir(), "data")
	img := Read(t, Create(t, "qcow2", "1M", "-o", "data_file="+scratch+",data_file_raw=on"))
	return SetDataFileName(t, img, target)
}

// SetDataFileName rewrites the data file extension of a version 3 qcow2
// (the first cluster, which holds the header) to name target.
func SetDataFileName(t testing.TB, img []byte, target string) []byte {
	t.Helper()
	be := binary.BigEndian
	hdrLen := be.Uint32(img[100:])
	cluster := 1 << be.Uint32(img[20:])
	type ext struct {
		typ  uint32
		data []byte
	}
	var exts []ext
	for off := int(hdrLen); ; {
		typ, n := be.Uint32(img[off:]), int(be.Uint32(img[off+4:]))
		if typ == 0 {
			break
		}
		data := img[off+8 : off+8+n]
		if typ == dataFileExt {
			data = []byte(target)
		}
		exts = append(exts, ext{typ, data})
		off += 8 + (n+7)/8*8
	}
	out := append([]byte(nil), img...)
	w := out[hdrLen:cluster]
	clear(w)
	off := 0
	for _, e := range append(exts, ext{}) {
		be.PutUint32(w[off:], e.typ)
		be.PutUint32(w[off+4:], uint32(len(e.data)))
		copy(w[off+8:], e.data)
		off += 8 + (len(e.data)+7)/8*8
	}
	return out
}
