package fake_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/fake"
)

func TestDriver_memory_snapshot(t *testing.T) {
	f := fake.New("svc.t.")
	ctx := context.Background()
	name := hypervisor.DomainName("t", "ns", "vm")
	if err := f.Create(ctx, hypervisor.Spec{Name: name, CPU: 1, MemoryMiB: 64}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mem")
	if err := f.SaveMemory(ctx, name, path); err != nil {
		t.Fatal(err)
	}
	if st, _ := f.State(name); st != hypervisor.StateShutoff {
		t.Fatalf("after the save: %s", st)
	}
	if err := f.SaveMemory(ctx, name, path); err == nil {
		t.Fatal("a stopped domain was saved")
	}
	if err := f.RestoreMemory(ctx, path); err != nil {
		t.Fatal(err)
	}
	if st, _ := f.State(name); st != hypervisor.StateRunning {
		t.Fatalf("after the restore: %s", st)
	}
}
