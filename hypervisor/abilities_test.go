package hypervisor

import "testing"

func TestAbilitiesOf_cases(t *testing.T) {
	fake := NewFake("svc.t.")
	cases := []struct {
		name string
		d    Driver
		want Abilities
	}{
		{"fake", fake, Abilities{Pause: true, Disks: true}},
		{"lifecycle only", struct{ Driver }{fake}, Abilities{}},
		{"libvirt", &Libvirt{}, Abilities{Pause: true, Disks: true, Console: true, Guard: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := AbilitiesOf(c.d); got != c.want {
				t.Fatalf("AbilitiesOf = %+v, want %+v", got, c.want)
			}
		})
	}
}
