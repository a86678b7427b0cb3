package hypervisor

import (
	"errors"
	"testing"

	"github.com/digitalocean/go-libvirt"
)

func TestClassify_cases(t *testing.T) {
	cases := []struct {
		name      string
		err       error
		transient bool
		notFound  bool
	}{
		{"the kernel short of BPF memory", libvirt.Error{Code: uint32(libvirt.ErrInternalError),
			Message: "failed to load cgroup BPF prog: Resource temporarily unavailable"}, true, false},
		{"a missing domain", libvirt.Error{Code: uint32(libvirt.ErrNoDomain), Message: "Domain not found"}, false, true},
		{"a port taken", libvirt.Error{Code: uint32(libvirt.ErrInternalError), Message: "Failed to bind socket: Address already in use"}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := classify("start x", c.err)
			if errors.Is(err, ErrTransient) != c.transient || errors.Is(err, ErrNotFound) != c.notFound {
				t.Fatalf("classify = %v: transient %v, not found %v", err, errors.Is(err, ErrTransient), errors.Is(err, ErrNotFound))
			}
		})
	}
}
