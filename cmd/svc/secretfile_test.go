package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Another local user who can write the folder makes the old fixed temp
// names first (FILE.svc-tmp, FILE.tmp), as a file of theirs open to all
// (0666) and as a link to a file they read: before, the token went into
// their file, or through the link. Now the new file has a name nobody
// guesses, made by this user alone: the planted files are untouched, the
// result is 0600 and holds what was written.
func TestWritePrivate_ignores_planted_temp_files(t *testing.T) {
	for _, c := range []struct{ name, planted string }{
		{"kubeconfig's old temp name as a file", "config.svc-tmp"},
		{"the CLI config's old temp name as a file", "config.tmp"},
		{"a link", "link"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o777); err != nil { // a folder others write
				t.Fatal(err)
			}
			path := filepath.Join(dir, "config")
			theirs := filepath.Join(dir, "theirs")
			if err := os.WriteFile(theirs, []byte("theirs"), 0o666); err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{"config.svc-tmp", "config.tmp"} {
				if c.planted == "link" {
					if err := os.Symlink(theirs, filepath.Join(dir, n)); err != nil {
						t.Fatal(err)
					}
				} else if n == c.planted {
					if err := os.WriteFile(filepath.Join(dir, n), nil, 0o666); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := writePrivate(path, []byte("token: s3cret\n")); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			st, _ := os.Lstat(path)
			if err != nil || !bytes.Equal(got, []byte("token: s3cret\n")) || st.Mode() != 0o600 {
				t.Fatalf("the file: %q %v mode %v", got, err, st.Mode())
			}
			if b, _ := os.ReadFile(theirs); string(b) != "theirs" {
				t.Fatalf("their file now holds %q", b)
			}
			for _, n := range []string{"config.svc-tmp", "config.tmp"} {
				if b, err := os.ReadFile(filepath.Join(dir, n)); err == nil && len(b) != 0 && string(b) != "theirs" {
					t.Fatalf("%s holds %q", n, b)
				}
			}
			left, _ := filepath.Glob(filepath.Join(dir, ".config.*"))
			if len(left) != 0 {
				t.Fatalf("temporary files left: %v", left)
			}
		})
	}
}
