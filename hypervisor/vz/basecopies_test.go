package vz

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/svc-project/svc/hypervisor"
)

// The raw copy of a base goes once the node no longer wants the base; the
// VMs cloned from it keep their disks and run on; a VM made after it
// converts the base again, past a conversion a crash left.
func TestDriver_drops_base_copies(t *testing.T) {
	td := newTestDriver(t)
	ctx := ctxT(t)
	s := td.spec("ns.one", "")
	if err := td.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	bc, ok := td.Driver.(hypervisor.BaseCopies)
	if !ok {
		t.Fatal("the driver does not drop base copies")
	}
	name := filepath.Base(td.base)
	copyPath := filepath.Join(td.cfg.Dir, ".raw", name+".raw")
	// A conversion under way, or one a crash left.
	if err := os.WriteFile(copyPath+".tmp", []byte("a conversion under way"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		keep bool
		want []string
	}{
		{"wanted", true, nil},
		{"no longer wanted", false, []string{name}},
		{"already gone", false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			removed, err := bc.DropBaseCopies(ctx, func(base string) bool { return base == name && c.keep })
			if err != nil || !slices.Equal(removed, c.want) {
				t.Fatalf("removed %q (%v), want %q", removed, err, c.want)
			}
			if _, err := os.Stat(copyPath); os.IsNotExist(err) == c.keep {
				t.Fatalf("the copy after keep=%v: %v", c.keep, err)
			}
		})
	}
	if _, err := os.Stat(copyPath + ".tmp"); err != nil {
		t.Fatalf("a conversion under way was removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(td.cfg.Dir, s.Name, diskFile)); err != nil {
		t.Fatalf("the VM's disk went with the copy: %v", err)
	}
	wantState(t, td, s.Name, hypervisor.StateRunning)
	if err := td.Create(ctx, td.spec("ns.two", "")); err != nil {
		t.Fatal(err)
	}
	if n := td.conversion.Load(); n != 2 {
		t.Fatalf("the base was converted %d times, want again after its copy went", n)
	}
}
