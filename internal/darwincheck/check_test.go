package darwincheck

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCheck_vz_layer(t *testing.T) {
	if testing.Short() {
		t.Skip("lists and type-checks the darwin build")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	added := filepath.Join(root, "hypervisor", "vz", "zz_testdata_darwin.go")
	read := func(name string) map[string][]byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return map[string][]byte{added: b}
	}
	for _, tc := range []struct {
		name    string
		arch    string
		overlay map[string][]byte
		want    []string // substrings of the problems; none for a clean check
	}{
		{"tree_arm64", "arm64", nil, nil},
		{"tree_amd64", "amd64", nil, nil},
		{"wrong_call_arm64", "arm64", read("wrong_call.go.txt"),
			[]string{`cannot use "two"`, "vm.Reboot undefined"}},
		{"arm64_only_on_arm64", "arm64", read("arm64_only.go.txt"), nil},
		{"arm64_only_on_amd64", "amd64", read("arm64_only.go.txt"), []string{"undefined: vz.NewMacOSBootLoader"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			problems, err := Check(ctx, Options{Dir: root, Arch: tc.arch, Patterns: []string{"./hypervisor/vz"}, Overlay: tc.overlay})
			if err != nil {
				t.Fatal(err)
			}
			var all []string
			for _, p := range problems {
				all = append(all, p.String())
			}
			text := strings.Join(all, "\n")
			if len(tc.want) == 0 && len(problems) > 0 {
				t.Fatalf("problems in a correct tree:\n%s", text)
			}
			if len(tc.want) > 0 && len(problems) != len(tc.want) {
				t.Fatalf("%d problems, want %d:\n%s", len(problems), len(tc.want), text)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("no problem says %q:\n%s", w, text)
				}
			}
		})
	}
}

func TestCheck_needs_arch_and_patterns(t *testing.T) {
	if _, err := Check(context.Background(), Options{Dir: "."}); err == nil {
		t.Fatal("a check without arch or patterns ran")
	}
}
