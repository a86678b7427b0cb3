package diskcheck

import (
	"os/exec"
	"testing"

	"github.com/svc-project/svc/testkit/disktest"
)

// FuzzQcow2Header feeds the parser any first cluster: it never panics, and
// a header it accepts names no file, is not encrypted, and has its tables
// inside the file.
func FuzzQcow2Header(f *testing.F) {
	if _, err := exec.LookPath("qemu-img"); err == nil {
		for _, opts := range [][]string{nil, {"-o", "compat=0.10"}, {"-o", "extended_l2=on,cluster_size=128k"}} {
			f.Add(disktest.Read(f, disktest.Create(f, "qcow2", "16M", opts...))[:4096], int64(1<<20))
		}
		f.Add(disktest.WithDataFile(f, "/etc/passwd")[:4096], int64(1<<20))
		f.Add(disktest.WithBacking(f, "/etc/passwd", "raw")[:4096], int64(1<<20))
	}
	f.Fuzz(func(t *testing.T, head []byte, size int64) {
		if size < int64(len(head)) {
			size = int64(len(head))
		}
		h, err := parseQcow2(head, size)
		if err != nil {
			return
		}
		if h.backingOffset != 0 || h.backingSize != 0 || h.dataFile != "" || h.incompatible&(incompatDataFile|incompatCorrupt) != 0 ||
			h.autoclr&autoclearRawData != 0 || h.cryptMethod != 0 || h.hasEncryptionExtension {
			t.Fatalf("accepted %+v", h)
		}
		if h.l1Offset+uint64(h.l1Size)*8 > uint64(size) || h.size == 0 || h.size > MaxVirtualSize {
			t.Fatalf("accepted tables outside the file or a bad size: %+v (file %d bytes)", h, size)
		}
	})
}
