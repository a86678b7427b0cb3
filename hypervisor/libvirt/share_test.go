package libvirt

import (
	"strings"
	"testing"
)

func TestSharesDirs_cases(t *testing.T) {
	fs := func(supported string, values ...string) string {
		v := ""
		for _, x := range values {
			v += "<value>" + x + "</value>"
		}
		return "<domainCapabilities><devices><filesystem supported='" + supported + "'><enum name='driverType'>" + v + "</enum></filesystem></devices></domainCapabilities>"
	}
	for _, c := range []struct {
		name, caps, wantErr string
	}{
		{name: "9p offered", caps: fs("yes", "path", "handle", "virtiofs")},
		{name: "virtiofs only", caps: fs("yes", "virtiofs"), wantErr: "no virtio-9p"},
		{name: "no file systems", caps: fs("no"), wantErr: "shares no host folder"},
		{name: "not xml", caps: "<", wantErr: "read libvirt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := sharesDirs(c.caps)
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("err = %v, want %q", err, c.wantErr)
			}
		})
	}
}
