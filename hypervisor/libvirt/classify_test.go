package libvirt

import (
	"errors"
	"testing"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/svc-project/svc/hypervisor"
)

func TestClassify_cases(t *testing.T) {
	cases := []struct {
		name      string
		err       error
		transient bool
		notFound  bool
	}{
		{"the kernel short of BPF memory", golibvirt.Error{Code: uint32(golibvirt.ErrInternalError),
			Message: "failed to load cgroup BPF prog: Resource temporarily unavailable"}, true, false},
		{"a missing domain", golibvirt.Error{Code: uint32(golibvirt.ErrNoDomain), Message: "Domain not found"}, false, true},
		{"a port taken", golibvirt.Error{Code: uint32(golibvirt.ErrInternalError), Message: "Failed to bind socket: Address already in use"}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := classify("start x", c.err)
			if errors.Is(err, hypervisor.ErrTransient) != c.transient || errors.Is(err, hypervisor.ErrNotFound) != c.notFound {
				t.Fatalf("classify = %v: transient %v, not found %v", err, errors.Is(err, hypervisor.ErrTransient), errors.Is(err, hypervisor.ErrNotFound))
			}
		})
	}
}
