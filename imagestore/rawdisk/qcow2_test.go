package rawdisk

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/svc-project/svc/imagestore/diskcheck"
)

func needTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("SVC_REQUIRE_LIBVIRT") != "" {
			t.Fatalf("%s is needed: %v", name, err)
		}
		t.Skipf("no %s", name)
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// guestDisk writes a raw disk with data, runs of zeros and a last
// partial cluster: 5 MiB and 3 sectors.
func guestDisk(t *testing.T, path string) []byte {
	t.Helper()
	b := make([]byte, 5<<20+3*512)
	rng := rand.New(rand.NewPCG(1, 2))
	for off := 0; off < len(b); off += 48 << 10 {
		if rng.IntN(3) == 0 {
			continue // a run of zeros
		}
		end := min(off+int(rng.Uint32N(48<<10)), len(b))
		for i := off; i < end; i++ {
			b[i] = byte(rng.Uint32()) | 1
		}
	}
	copy(b[len(b)-100:], "the last sectors")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFromQcow2_identical_to_qemu_img(t *testing.T) {
	needTool(t, "qemu-img")
	needTool(t, "qemu-io")
	dir := t.TempDir()
	src := filepath.Join(dir, "src.raw")
	want := guestDisk(t, src)
	for _, tc := range []struct {
		name string
		args []string // qemu-img convert options making the qcow2
		io   []string // qemu-io commands run on it after
	}{
		{"v3", []string{"-o", "compat=1.1"}, nil},
		{"v2", []string{"-o", "compat=0.10"}, nil},
		{"small_clusters", []string{"-o", "cluster_size=4096"}, nil},
		{"deflate_compressed", []string{"-c"}, nil},
		{"zstd_compressed", []string{"-c", "-o", "compression_type=zstd"}, nil},
		{"zero_clusters", []string{"-o", "compat=1.1"}, []string{"write -z 1M 256k", "write -P 0x5a 3M 64k"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := filepath.Join(dir, tc.name+".qcow2")
			run(t, "qemu-img", append(append([]string{"convert", "-q", "-f", "raw", "-O", "qcow2"}, tc.args...), src, q)...)
			for _, c := range tc.io {
				run(t, "qemu-io", "-f", "qcow2", "-c", c, q)
			}
			ref := filepath.Join(dir, tc.name+".qemu.raw")
			run(t, "qemu-img", "convert", "-q", "-f", "qcow2", "-O", "raw", q, ref)
			got := filepath.Join(dir, tc.name+".svc.raw")
			if err := FromQcow2(context.Background(), q, got); err != nil {
				t.Fatal(err)
			}
			a, _ := os.ReadFile(got)
			b, _ := os.ReadFile(ref)
			if !bytes.Equal(a, b) {
				t.Fatalf("%d bytes differ from qemu-img's %d (first difference at %d)", len(a), len(b), firstDiff(a, b))
			}
			if tc.io == nil && !bytes.Equal(a, want) {
				t.Fatal("the raw disk is not the disk the qcow2 was made from")
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestFromQcow2_refuses(t *testing.T) {
	needTool(t, "qemu-img")
	dir := t.TempDir()
	base := filepath.Join(dir, "base.qcow2")
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", base, "1M")
	overlay := filepath.Join(dir, "overlay.qcow2")
	run(t, "qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", base, overlay)
	raw := filepath.Join(dir, "disk.raw")
	if err := os.WriteFile(raw, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, src string }{
		{"backing_file", overlay},
		{"not_qcow2", raw},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(dir, tc.name+".out")
			err := FromQcow2(context.Background(), tc.src, dst)
			if !errors.Is(err, diskcheck.ErrRefused) {
				t.Fatalf("err = %v, want a refusal", err)
			}
			if _, serr := os.Stat(dst); serr == nil {
				t.Fatal("a refused conversion left its output")
			}
		})
	}
}

func TestClone_equal_and_independent(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "base.raw")
	want := guestDisk(t, src)
	dst := filepath.Join(dir, "vm.raw")
	if err := Clone(context.Background(), src, dst); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(dst)
	if !bytes.Equal(got, want) {
		t.Fatal("the clone differs from its original")
	}
	f, err := os.OpenFile(dst, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("the VM wrote this"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if base, _ := os.ReadFile(src); !bytes.Equal(base, want) {
		t.Fatal("writing the clone changed the base")
	}
	if err := Clone(context.Background(), src, dst); err == nil {
		t.Fatal("a clone over an existing file succeeded")
	}
}
