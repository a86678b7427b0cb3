package raftfsm

import (
	"slices"
	"testing"

	"github.com/svc-project/svc/api"
)

func TestVMDiskSize_commands(t *testing.T) {
	setup := append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001))
	uid := uint64(len(setup)) // the index of the VM's create
	size := func(node string, uid uint64, bytes int64) []byte {
		return mustEncode(t, TypeVMDiskSize, VMDiskSize{Namespace: api.DefaultNamespace, Name: "a", Node: node, UID: uid, DiskBytes: bytes})
	}
	with := func(more ...[]byte) [][]byte { return append(slices.Clone(setup), more...) }
	quota := func(disk int64) []byte {
		return mustEncode(t, TypeNamespaceQuota, NamespaceQuotaSet{Namespace: api.DefaultNamespace, Quota: &Quota{DiskBytes: disk}})
	}
	undo := func(uid uint64, bytes int64) []byte {
		return mustEncode(t, TypeVMDiskSize, VMDiskSize{Namespace: api.DefaultNamespace, Name: "a", Node: "n1", UID: uid, DiskBytes: bytes, Undo: true})
	}
	disk := func(want int64) func(*testing.T, *FSM) {
		return func(t *testing.T, f *FSM) {
			if vm, _ := f.VM(api.DefaultNamespace, "a"); vm.DiskBytes != want {
				t.Fatalf("disk %d, want %d", vm.DiskBytes, want)
			}
		}
	}
	for _, tc := range []struct {
		name    string
		setup   [][]byte
		cmd     []byte
		wantErr error
		check   func(*testing.T, *FSM)
	}{
		{name: "grown by its host", setup: setup, cmd: size("n1", uid, 8<<30), check: disk(8 << 30)},
		{name: "another node", setup: setup, cmd: size("n2", uid, 8<<30), wantErr: ErrConflict},
		{name: "an earlier VM of the name", setup: setup, cmd: size("n1", uid-1, 8<<30), wantErr: ErrConflict},
		{name: "smaller", setup: with(size("n1", uid, 8<<30)), cmd: size("n1", uid, 4<<30), wantErr: ErrInvalid},
		{name: "a revert goes back to the image's", setup: with(size("n1", uid, 8<<30)), cmd: vmActionCmd(t, "a", ActionRevert), check: disk(0)},
		{name: "an unknown VM", setup: vmSetup(t), cmd: size("n1", 1, 8<<30), wantErr: ErrNotFound},
		{name: "past the namespace's disk quota", setup: with(quota(10 << 30)), cmd: size("n1", uid, 11<<30), wantErr: ErrQuota},
		{name: "within the disk quota", setup: with(quota(10 << 30)), cmd: size("n1", uid, 10<<30), check: disk(10 << 30)},
		{name: "a failed resize undone", setup: with(size("n1", uid, 8<<30)), cmd: undo(uid, 0), check: disk(0)},
		{name: "an undo does not grow", setup: with(size("n1", uid, 8<<30)), cmd: undo(uid, 9<<30), wantErr: ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) { runCommandCase(t, tc.setup, tc.cmd, tc.wantErr, tc.check) })
	}
}
