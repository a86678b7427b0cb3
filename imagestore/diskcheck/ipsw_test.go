package diskcheck

import (
	"archive/zip"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func writeZip(t *testing.T, path string, names ...string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte("content of " + n))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestIPSW_cases(t *testing.T) {
	dir := t.TempDir()
	ipsw := filepath.Join(dir, "restore.ipsw")
	writeZip(t, ipsw, "BuildManifest.plist", "Restore.plist", "090-12345-678.dmg")
	other := filepath.Join(dir, "other.zip")
	writeZip(t, other, "README")
	notZip := filepath.Join(dir, "disk.img")
	if err := os.WriteFile(notZip, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		ok         bool
	}{
		{"restore_image", ipsw, true},
		{"zip_without_build_manifest", other, false},
		{"not_a_zip", notZip, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := IPSW(tc.path)
			if tc.ok {
				if err != nil || info.Format != FormatIPSW || info.Size == 0 {
					t.Fatalf("%+v %v", info, err)
				}
				return
			}
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("err = %v, want a refusal", err)
			}
		})
	}
}
