package raftfsm

import (
	"fmt"
	"testing"

	"github.com/svc-project/svc/api"
)

// scaleFSM is a state of 100 nodes holding vms VMs, built straight through
// ApplyCommand.
func scaleFSM(b *testing.B, vms int) (*FSM, uint64) {
	b.Helper()
	f := NewFSM(nil)
	var idx uint64
	apply := func(t Type, body any) {
		idx++
		c, err := Decode(mustEncode(b, t, body))
		if err != nil {
			b.Fatal(err)
		}
		if r := f.ApplyCommand(idx, c); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
	apply(TypeInit, TestInit("c", t0))
	for n := range 100 {
		apply(TypeNodeUpsert, NodeUpsert{Name: fmt.Sprintf("n%d", n), NodeFacts: NodeFacts{Addr: "10.0.0.1", Capacity: Capacity{CPU: 1 << 20, MemoryBytes: 1 << 50}}, Phase: api.PhaseReady})
	}
	apply(TypeImageCreate, ImageCreate{Image: Image{Name: "mini", Namespace: api.DefaultNamespace, Digest: "sha256:aa", Format: "qcow2"}, Holder: "n0"})
	for i := range vms {
		apply(TypeVMCreate, scaleVM(i))
	}
	return f, idx
}

func scaleVM(i int) VMCreate {
	port := 20000 + 3*(i/100)
	return VMCreate{VM: VM{
		Name: fmt.Sprintf("vm-%d", i), Namespace: api.DefaultNamespace, Node: fmt.Sprintf("n%d", i%100), Image: "mini", ImageDigest: "sha256:aa",
		VMOptions: VMOptions{CPU: 1, MemoryBytes: 1 << 30}, SSHPort: port, VNCPort: port + 1, ScreensharePort: port + 2, CreatedAt: t0,
	}}
}

// BenchmarkFSM_scale applies a VM create (and its delete) and reads the node
// list in a state of 1,000 and of 100,000 VMs on 100 nodes: both must cost
// the same at either size.
func BenchmarkFSM_scale(b *testing.B) {
	for _, vms := range []int{1000, 100000} {
		f, idx := scaleFSM(b, vms)
		create, _ := Decode(mustEncode(b, TypeVMCreate, scaleVM(vms)))
		del, _ := Decode(mustEncode(b, TypeVMDelete, VMDelete{Namespace: api.DefaultNamespace, Name: fmt.Sprintf("vm-%d", vms)}))
		b.Run(fmt.Sprintf("vm_create_%d", vms), func(b *testing.B) {
			for range b.N {
				idx++
				if r := f.ApplyCommand(idx, create); r.Err != nil {
					b.Fatal(r.Err)
				}
				b.StopTimer()
				idx++
				f.ApplyCommand(idx, del)
				b.StartTimer()
			}
		})
		b.Run(fmt.Sprintf("nodes_%d", vms), func(b *testing.B) {
			for range b.N {
				if n := f.Nodes(); len(n) != 100 {
					b.Fatal(len(n))
				}
			}
		})
	}
}
