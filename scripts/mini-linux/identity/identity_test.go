//go:build linux

package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The host keys newIdentity writes are keys dropbear reads: dropbearkey
// -y prints, from each file, the public key the program says it holds.
func TestNewIdentity_dropbear_reads_the_keys(t *testing.T) {
	if _, err := exec.LookPath("dropbearkey"); err != nil {
		if os.Getenv("SVC_REQUIRE_LIBVIRT") == "1" {
			t.Fatal("dropbearkey is missing (scripts/install-deps.sh installs it)")
		}
		t.Skip("dropbearkey is missing (scripts/install-deps.sh installs it)")
	}
	for _, c := range []struct {
		name string
		make func() (hostKey, error)
		algo string
	}{
		{"ed25519", newEd25519, "ssh-ed25519"},
		{"ecdsa", newECDSA, "ecdsa-sha2-nistp256"},
	} {
		t.Run(c.name, func(t *testing.T) {
			seen := map[string]bool{}
			for range 20 { // a scalar with its high bit set needs a leading zero
				k, err := c.make()
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(t.TempDir(), "key")
				if err := os.WriteFile(path, k.file, 0o600); err != nil {
					t.Fatal(err)
				}
				out, err := exec.Command("dropbearkey", "-y", "-f", path).CombinedOutput()
				if err != nil {
					t.Fatalf("dropbearkey -y: %v: %s", err, out)
				}
				m := regexp.MustCompile(`(?m)^` + c.algo + ` ([A-Za-z0-9+/=]+)`).FindSubmatch(out)
				if m == nil {
					t.Fatalf("no %s public key in:\n%s", c.algo, out)
				}
				pub, err := base64.StdEncoding.DecodeString(string(m[1]))
				if err != nil || !bytes.Equal(pub, k.public) {
					t.Fatalf("dropbear reads public key %x, the program made %x", pub, k.public)
				}
				if seen[string(pub)] {
					t.Fatal("the same key twice")
				}
				seen[string(pub)] = true
			}
		})
	}
}

// newIdentity replaces the machine id and both host keys whole, each
// readable as the system expects, and a second call makes new ones.
func TestNewIdentity_files(t *testing.T) {
	root := t.TempDir()
	read := func() map[string]string {
		got := map[string]string{}
		for _, f := range []string{"etc/machine-id", ed25519KeyFile, ecdsaKeyFile} {
			b, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				t.Fatal(err)
			}
			got[f] = string(b)
		}
		return got
	}
	if err := newIdentity(root); err != nil {
		t.Fatal(err)
	}
	first := read()
	if id := first["etc/machine-id"]; !regexp.MustCompile(`^[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}\n$`).MatchString(id) {
		t.Fatalf("machine id %q", id)
	}
	for f, mode := range map[string]os.FileMode{"etc/machine-id": 0o444, ed25519KeyFile: 0o600, ecdsaKeyFile: 0o600} {
		if st, err := os.Stat(filepath.Join(root, f)); err != nil || st.Mode().Perm() != mode {
			t.Fatalf("%s: %v %v, want mode %v", f, st.Mode(), err, mode)
		}
	}
	if err := newIdentity(root); err != nil {
		t.Fatal(err)
	}
	for f, v := range read() {
		if v == first[f] {
			t.Fatalf("%s unchanged", f)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(root, "etc/dropbear")); len(entries) != 2 {
		t.Fatalf("etc/dropbear holds %d files", len(entries))
	}
}

func TestValidHostName_cases(t *testing.T) {
	for name, want := range map[string]bool{
		"web-1": true, "a.b.c": true, "x": true, strings.Repeat("a", 63): true,
		"": false, "-web": false, "web-": false, "a..b": false, "a b": false, "a;reboot": false,
		strings.Repeat("a", 64): false, strings.Repeat("a.", 32) + "a": false,
	} {
		if got := validHostName(name); got != want {
			t.Errorf("validHostName(%q) = %v", name, got)
		}
	}
}
