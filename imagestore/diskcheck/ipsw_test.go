package diskcheck

import (
	"archive/zip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// manifest is a BuildManifest.plist as restore images carry it (shortened).
const manifest = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0"><dict><key>ProductVersion</key><string>15.1</string></dict></plist>
`

// zipEntry is a file of a test archive: its name, and its content written
// n times (deflated).
type zipEntry struct {
	name, content string
	n             int
}

func writeZip(t *testing.T, path string, entries ...zipEntry) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	for _, e := range entries {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: zip.Deflate})
		if err != nil {
			t.Fatal(err)
		}
		for range max(e.n, 1) {
			if _, err := w.Write([]byte(e.content)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestIPSW_cases(t *testing.T) {
	dir := t.TempDir()
	path := func(n string) string { return filepath.Join(dir, n) }
	good := []zipEntry{{name: "BuildManifest.plist", content: manifest}, {name: "Restore.plist", content: "<plist/>"}, {name: "090-12345-678.dmg", content: "dmg"}}
	writeZip(t, path("restore.ipsw"), good...)
	writeZip(t, path("other.zip"), zipEntry{name: "README", content: "hello"})
	writeZip(t, path("not-a-plist.ipsw"), zipEntry{name: "BuildManifest.plist", content: "a text file"})
	// 1 MiB of zeros a thousand times: the manifest decompresses to 1 GiB.
	zeros := strings.Repeat("\x00", 1<<20)
	writeZip(t, path("plist-bomb.ipsw"), zipEntry{name: "BuildManifest.plist", content: manifest}, zipEntry{name: "BuildManifest.plist2", content: zeros, n: 1})
	writeZip(t, path("manifest-bomb.ipsw"), zipEntry{name: "BuildManifest.plist", content: manifest + zeros, n: 40})
	writeZip(t, path("zip-bomb.ipsw"), good...)
	bomb(t, path("zip-bomb.ipsw"))
	if err := os.WriteFile(path("disk.img"), make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"restore_image", path("restore.ipsw"), ""},
		{"zip_without_build_manifest", path("other.zip"), "no BuildManifest.plist"},
		{"manifest_not_a_plist", path("not-a-plist.ipsw"), "not a property list"},
		{"a_small_bomb_beside_the_manifest_is_fine", path("plist-bomb.ipsw"), ""},
		{"manifest_bomb", path("manifest-bomb.ipsw"), "BuildManifest.plist of"},
		{"zip_bomb", path("zip-bomb.ipsw"), "zip bomb"},
		{"not_a_zip", path("disk.img"), "not a zip archive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := IPSW(tc.path)
			if tc.want == "" {
				if err != nil || info.Format != FormatIPSW || info.Size == 0 {
					t.Fatalf("%+v %v", info, err)
				}
				return
			}
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a refusal saying %q", err, tc.want)
			}
		})
	}
}

// bomb writes a restore image with a file that says it unpacks to 100 GiB
// (what a zip bomb's headers say; the check reads only them).
func bomb(t *testing.T, p string) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	for _, e := range []zipEntry{{name: "BuildManifest.plist", content: manifest}} {
		w, _ := zw.Create(e.name)
		_, _ = w.Write([]byte(e.content))
	}
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "bomb.dmg", Method: zip.Store, CompressedSize64: 4, UncompressedSize64: 100 << 30})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write([]byte("bomb"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestIPSW_many_entries_refused_from_the_end_record: an archive of 200,000
// entries is refused from its end record, before its directory is read
// (reading it took hundreds of MB for millions of entries).
func TestIPSW_many_entries_refused_from_the_end_record(t *testing.T) {
	p := filepath.Join(t.TempDir(), "many.ipsw")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for i := range 200_000 {
		if _, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprint(i), Method: zip.Store}); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = IPSW(p)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "200000 files") {
		t.Fatalf("err = %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Fatalf("refusing it allocated %d KiB", alloc>>10)
	}
}
