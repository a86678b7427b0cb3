package hypervisor

import (
	"context"
	"path/filepath"
	"testing"
)

func TestAbilitiesOf_cases(t *testing.T) {
	fake := NewFake("svc.t.")
	cases := []struct {
		name string
		d    Driver
		want Abilities
	}{
		{"fake", fake, Abilities{Pause: true, Disks: true, Memory: true, Resize: true}},
		{"fake with an agent", NewFakeAgent(fake), Abilities{Pause: true, Disks: true, Memory: true, Resize: true, Agent: true}},
		{"lifecycle only", struct{ Driver }{fake}, Abilities{}},
		{"libvirt", &Libvirt{}, Abilities{Pause: true, Disks: true, Console: true, Memory: true, Guard: true, Agent: true, Resize: true, Ports: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := AbilitiesOf(c.d); got != c.want {
				t.Fatalf("AbilitiesOf = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestFake_memory_snapshot(t *testing.T) {
	f := NewFake("svc.t.")
	ctx := context.Background()
	name := DomainName("t", "ns", "vm")
	if err := f.Create(ctx, Spec{Name: name, CPU: 1, MemoryMiB: 64}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mem")
	if err := f.SaveMemory(ctx, name, path); err != nil {
		t.Fatal(err)
	}
	if st, _ := f.State(name); st != StateShutoff {
		t.Fatalf("after the save: %s", st)
	}
	if err := f.SaveMemory(ctx, name, path); err == nil {
		t.Fatal("a stopped domain was saved")
	}
	if err := f.RestoreMemory(ctx, path); err != nil {
		t.Fatal(err)
	}
	if st, _ := f.State(name); st != StateRunning {
		t.Fatalf("after the restore: %s", st)
	}
}
