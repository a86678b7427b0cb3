package diskcheck

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svc-project/svc/testkit/disktest"
)

// withData returns a qcow2 of 16 MiB virtual holding 4 MiB of random data.
func withData(t *testing.T) []byte {
	t.Helper()
	raw := make([]byte, 16<<20)
	_, _ = rand.Read(raw[:4<<20])
	src := disktest.Write(t, "src.raw", raw)
	dst := filepath.Join(t.TempDir(), "data.qcow2")
	disktest.QemuImg(t, "convert", "-q", "-f", "raw", "-O", "qcow2", src, dst)
	return disktest.Read(t, dst)
}

// patched returns img with the big-endian uint64 at off ORed with bits.
func patched(img []byte, off int, bits uint64) []byte {
	out := append([]byte(nil), img...)
	binary.BigEndian.PutUint64(out[off:], binary.BigEndian.Uint64(out[off:])|bits)
	return out
}

func TestDisk_refuses(t *testing.T) {
	disktest.RequireQemuImg(t)
	plain := disktest.Read(t, disktest.Create(t, "qcow2", "16M"))
	data := withData(t)
	l1 := int(binary.BigEndian.Uint64(data[40:]))
	badL2 := append([]byte(nil), data...)
	binary.BigEndian.PutUint64(badL2[l1:], 1<<63|1<<40) // an L2 table 1 TiB into a 4 MiB file
	cases := []struct {
		name   string
		file   []byte
		format string
		want   string
	}{
		{"external data file /etc/passwd", disktest.WithDataFile(t, "/etc/passwd"), "", `external data file ("/etc/passwd")`},
		{"external data file /etc/shadow declared qcow2", disktest.WithDataFile(t, "/etc/shadow"), FormatQcow2, `external data file ("/etc/shadow")`},
		{"external data file in a json: name", disktest.WithDataFile(t, `json:{"driver":"file","filename":"/etc/passwd"}`), "", "external data file"},
		{"data file bit without a name", patched(plain, 72, incompatDataFile), "", "external data file"},
		{"backing file on a host path", disktest.WithBacking(t, "/etc/passwd", "raw"), "", `backing file ("/etc/passwd")`},
		{"backing qcow2 on another image", disktest.WithBacking(t, "/var/lib/svc/images/blobs/sha256/x", "qcow2"), "", "backing file"},
		{"encrypted with AES", patched(plain, 32, 1<<32), "", "encrypted"},
		{"encrypted with LUKS", patched(plain, 32, 2<<32), "", "encrypted"},
		{"marked corrupt", patched(plain, 72, incompatCorrupt), "", "corrupt"},
		{"unknown incompatible feature", patched(plain, 72, 1<<20), "", "features this service does not know"},
		{"cut short (the first 100 kB of a disk with data)", data[:100_000], "", "cut short"},
		{"an L2 table outside the file", badL2, "", "errors in its qcow2 tables"},
		{"declared raw, holds a qcow2", plain, FormatRaw, "not the raw disk it is declared as"},
		{"declared qcow2, is raw", make([]byte, 1<<20), FormatQcow2, "not the qcow2 disk"},
		{"a text file", []byte("hello\n"), "", "raw disk is whole 512-byte sectors"},
		{"raw, not whole sectors", make([]byte, 1<<20+1), "", "raw disk is whole 512-byte sectors"},
		{"vmdk", disktest.Read(t, disktest.Create(t, "vmdk", "4M")), "", "it is a vmdk image"},
		{"vmdk descriptor naming host files", append([]byte("# Disk DescriptorFile\nversion=1\ncreateType=\"monolithicFlat\"\nRW 8 FLAT \"/etc/shadow\" 0\n"), make([]byte, 1<<20)...), "", "it is a vmdk image"},
		{"vdi", disktest.Read(t, disktest.Create(t, "vdi", "4M")), "", "it is a vdi image"},
		{"qed", disktest.Read(t, disktest.Create(t, "qed", "4M")), "", "it is a qed image"},
		{"luks", disktest.LUKS1(4 << 20), "", "it is a luks image"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := disktest.Write(t, "upload", c.file)
			_, err := Disk(context.Background(), p, c.format)
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want a refusal saying %q", err, c.want)
			}
			if strings.Contains(err.Error(), p) {
				t.Fatalf("the refusal names the host path: %v", err)
			}
		})
	}
}

func TestDisk_accepts(t *testing.T) {
	disktest.RequireQemuImg(t)
	raw := make([]byte, 2<<20)
	copy(raw[510:], []byte{0x55, 0xaa}) // a boot sector's signature, nothing a probe claims
	cases := []struct {
		name   string
		path   string
		format string
		want   Info
	}{
		{"qcow2", disktest.Create(t, "qcow2", "16M"), "", Info{Format: FormatQcow2, VirtualSize: 16 << 20}},
		{"qcow2 declared", disktest.Create(t, "qcow2", "16M"), FormatQcow2, Info{Format: FormatQcow2, VirtualSize: 16 << 20}},
		{"qcow2 version 2", disktest.Create(t, "qcow2", "16M", "-o", "compat=0.10"), "", Info{Format: FormatQcow2, VirtualSize: 16 << 20}},
		{"qcow2 with extended L2 and zstd", disktest.Create(t, "qcow2", "64M", "-o", "extended_l2=on,compression_type=zstd,cluster_size=128k"), "", Info{Format: FormatQcow2, VirtualSize: 64 << 20}},
		{"qcow2 with data", disktest.Write(t, "d.qcow2", withData(t)), "", Info{Format: FormatQcow2, VirtualSize: 16 << 20}},
		{"raw", disktest.Write(t, "d.raw", raw), FormatRaw, Info{Format: FormatRaw, VirtualSize: 2 << 20, Size: 2 << 20}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Disk(context.Background(), c.path, c.format)
			fi, _ := os.Stat(c.path)
			if c.want.Size == 0 {
				c.want.Size = fi.Size()
			}
			if err != nil || got != c.want {
				t.Fatalf("Disk = %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

// The parser's probe names the format of every image qemu-img makes as
// qemu-img's own probe does, so no format QEMU would guess goes unnoticed.
func TestProbe_agrees_with_qemu(t *testing.T) {
	disktest.RequireQemuImg(t)
	cases := []struct {
		format string
		opts   []string
	}{
		{"qcow2", nil}, {"qcow2", []string{"-o", "compat=0.10"}}, {"qcow", nil}, {"qed", nil},
		{"vmdk", nil}, {"vmdk", []string{"-o", "subformat=monolithicFlat"}}, {"vmdk", []string{"-o", "subformat=streamOptimized"}},
		{"vmdk", []string{"-o", "subformat=twoGbMaxExtentSparse"}},
		{"vdi", nil}, {"vhdx", nil}, {"vpc", nil}, {"parallels", nil},
		{"luks", nil}, {"raw", nil},
	}
	for _, c := range cases {
		t.Run(c.format+strings.Join(c.opts, ""), func(t *testing.T) {
			var p string
			if c.format == "luks" { // see disktest.LUKS1 for why not qemu-img create
				p = disktest.Write(t, "disk.luks", disktest.LUKS1(4<<20))
			} else {
				p = disktest.Create(t, c.format, "4M", c.opts...)
			}
			out, err := exec.Command("qemu-img", "info", "--output=json", p).Output()
			if err != nil {
				t.Fatal(err)
			}
			want := c.format
			if !strings.Contains(string(out), `"format": "`+want+`"`) {
				t.Fatalf("qemu-img does not see %s: %s", want, out)
			}
			head, _, err := readHead(p, probeSize)
			if err != nil {
				t.Fatal(err)
			}
			if got := probe(head); got != want {
				t.Fatalf("probe = %s, qemu-img says %s", got, want)
			}
		})
	}
	for name, head := range map[string]string{
		"bochs": "Bochs Virtual HD Image\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00Redolog",
		"cloop": "#!/bin/sh\n#V2.0 Format\nmodprobe cloop file=$0 && mount -r -t iso9660 /dev/cloop $1\n",
	} {
		if got := probe([]byte(head)); got != name {
			t.Errorf("probe of a %s header = %s", name, got)
		}
	}
}

func TestISO_cases(t *testing.T) {
	if _, err := exec.LookPath("genisoimage"); err != nil {
		if os.Getenv("SVC_REQUIRE_LIBVIRT") == "1" {
			t.Fatal("genisoimage missing")
		}
		t.Skip("genisoimage missing")
	}
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi"), 0o600)
	iso := filepath.Join(t.TempDir(), "a.iso")
	if out, err := exec.Command("genisoimage", "-quiet", "-o", iso, dir).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	isoBytes := disktest.Read(t, iso)
	qcowISO := append([]byte(nil), isoBytes...)
	copy(qcowISO, disktest.WithDataFile(t, "/etc/passwd")[:4096])
	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"an ISO", isoBytes, ""},
		{"a short text", []byte("not an iso"), "too short"},
		{"zeros", make([]byte, 64<<10), "no volume descriptor"},
		{"a qcow2 header over an ISO", qcowISO, "starts as a qcow2 image"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			info, err := ISO(disktest.Write(t, "x.iso", c.file))
			if c.want == "" {
				if err != nil || info.Format != FormatISO || info.Size != int64(len(c.file)) {
					t.Fatalf("ISO = %+v, %v", info, err)
				}
				return
			}
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestHeader_not_through_a_symlink(t *testing.T) {
	disktest.RequireQemuImg(t)
	target := disktest.Create(t, "qcow2", "16M")
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Header(link, ""); err == nil {
		t.Fatal("a symbolic link was followed")
	}
}
