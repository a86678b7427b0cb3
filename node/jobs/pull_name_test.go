package jobs

import (
	"strings"
	"testing"

	"github.com/svc-project/svc/imagestore/ocidisk"
)

func TestImageNameFor_cases(t *testing.T) {
	dig := "sha256:" + strings.Repeat("ab", 32)
	for _, c := range []struct{ ref, want string }{
		{"r.test:5000/os/ubuntu:22.04", "ubuntu-22.04"},
		{"r.test/ubuntu:Latest_1", "ubuntu-latest_1"},
		{"r.test/team/disk@" + dig, "disk-abababababab"},
		{"r.test/team/disk:v2@" + dig, "disk-v2"},
		{"r.test/a/" + strings.Repeat("x", 120) + ":1", strings.Repeat("x", 100)},
	} {
		ref, err := ocidisk.ParseReference(c.ref, false, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := imageNameFor(ref); got != c.want {
			t.Errorf("%s: %q, want %q", c.ref, got, c.want)
		}
	}
}
