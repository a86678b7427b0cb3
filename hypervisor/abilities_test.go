package hypervisor_test

import (
	"testing"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/fake"
	"github.com/svc-project/svc/hypervisor/libvirt"
)

func TestAbilitiesOf_cases(t *testing.T) {
	f := fake.New("svc.t.")
	cases := []struct {
		name string
		d    hypervisor.Driver
		want hypervisor.Abilities
	}{
		{"fake", f, hypervisor.Abilities{Pause: true, Disks: true, Memory: true, Resize: true}},
		{"fake with an agent", fake.NewAgent(f), hypervisor.Abilities{Pause: true, Disks: true, Memory: true, Resize: true, Agent: true}},
		{"lifecycle only", struct{ hypervisor.Driver }{f}, hypervisor.Abilities{}},
		{"libvirt", &libvirt.Driver{}, hypervisor.Abilities{Pause: true, Disks: true, Console: true, Memory: true, Guard: true, Agent: true, Resize: true, Ports: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := hypervisor.AbilitiesOf(c.d); got != c.want {
				t.Fatalf("AbilitiesOf = %+v, want %+v", got, c.want)
			}
		})
	}
}
