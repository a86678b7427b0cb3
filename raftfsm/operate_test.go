package raftfsm

import (
	"testing"
	"time"

	"github.com/svc-project/svc/api"
)

// Cordons, quotas and time-to-live, as the FSM applies them: each refusal
// leaves the state as it was (runCommandCase).
func TestOperate_commands(t *testing.T) {
	cordon := func(on bool) []byte {
		return mustEncode(t, TypeNodeCordon, NodeCordon{Namespace: api.DefaultNamespace, Name: "n1", Cordoned: on})
	}
	quota := func(q *Quota) []byte {
		return mustEncode(t, TypeNamespaceQuota, NamespaceQuotaSet{Namespace: api.DefaultNamespace, Quota: q})
	}
	expiring := func(name string, port int, ttl time.Duration) []byte {
		at := t0.Add(ttl)
		return mustEncode(t, TypeVMCreate, VMCreate{VM: VM{
			Name: name, Namespace: api.DefaultNamespace, Node: "n1", Image: "mini", ImageDigest: "sha256:aa",
			VMOptions: VMOptions{CPU: 1, MemoryBytes: 1 << 30}, IP: "10.0.0.1", SSHPort: port, VNCPort: port + 1, ScreensharePort: port + 2,
			CreatedAt: t0, ExpiresAt: &at,
		}})
	}
	extend := func(name string, d time.Duration, at time.Time) []byte {
		return mustEncode(t, TypeVMExtend, VMExtend{Namespace: api.DefaultNamespace, Name: name, Seconds: int64(d / time.Second), Time: at})
	}
	expiry := func(want time.Time) func(*testing.T, *FSM) {
		return func(t *testing.T, f *FSM) {
			if vm, _ := f.VM(api.DefaultNamespace, "e"); vm.ExpiresAt == nil || !vm.ExpiresAt.Equal(want) {
				t.Fatalf("expires %v, want %v", vm.ExpiresAt, want)
			}
		}
	}
	base := vmSetup(t)
	for _, tc := range []struct {
		name    string
		setup   [][]byte
		cmd     []byte
		wantErr error
		check   func(*testing.T, *FSM)
	}{
		{name: "cordon", setup: base, cmd: cordon(true), check: func(t *testing.T, f *FSM) {
			if n, _ := f.Node("n1"); !n.Cordoned {
				t.Fatal("not cordoned")
			}
		}},
		{name: "a cordoned node takes no VM", setup: append(base, cordon(true)), cmd: vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001), wantErr: ErrConflict},
		{name: "uncordoned it does", setup: append(base, cordon(true), cordon(false)), cmd: vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)},
		{name: "cordon an unknown node", setup: base[:1], cmd: cordon(true), wantErr: ErrNotFound},
		{name: "a quota of VMs", setup: append(base, quota(&Quota{VMs: 1}), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)), cmd: vmCreateCmd(t, "b", "n1", 1, 1<<30, 22011), wantErr: ErrQuota},
		{name: "a quota of CPU", setup: append(base, quota(&Quota{CPU: 2}), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)), cmd: vmCreateCmd(t, "b", "n1", 2, 1<<30, 22011), wantErr: ErrQuota},
		{name: "a quota of memory", setup: append(base, quota(&Quota{MemoryBytes: 1 << 30})), cmd: vmCreateCmd(t, "b", "n1", 1, 2<<30, 22011), wantErr: ErrQuota},
		{name: "within the quota", setup: append(base, quota(&Quota{VMs: 2, CPU: 2, MemoryBytes: 2 << 30}), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)), cmd: vmCreateCmd(t, "b", "n1", 1, 1<<30, 22011)},
		{name: "a quota removed", setup: append(base, quota(&Quota{VMs: 1}), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001), quota(nil)), cmd: vmCreateCmd(t, "b", "n1", 1, 1<<30, 22011)},
		{name: "a negative quota", setup: base, cmd: quota(&Quota{CPU: -1}), wantErr: ErrInvalid},
		{name: "the quota of an unknown namespace", setup: base[:0], cmd: quota(&Quota{CPU: 1}), wantErr: ErrNotFound},
		{name: "an expiry is recorded", setup: base, cmd: expiring("e", 22001, time.Hour), check: expiry(t0.Add(time.Hour))},
		{name: "a time-to-live over a year", setup: base, cmd: expiring("e", 22001, MaxTTL+time.Hour), wantErr: ErrInvalid},
		{name: "extend from the expiry", setup: append(base, expiring("e", 22001, time.Hour)), cmd: extend("e", time.Hour, t0), check: expiry(t0.Add(2 * time.Hour))},
		{name: "extend a past expiry from now", setup: append(base, expiring("e", 22001, time.Hour)), cmd: extend("e", time.Hour, t0.Add(3*time.Hour)), check: expiry(t0.Add(4 * time.Hour))},
		{name: "extend a VM that never expires", setup: append(base, vmCreateCmd(t, "e", "n1", 1, 1<<30, 22001)), cmd: extend("e", time.Hour, t0), wantErr: ErrConflict},
		{name: "extend by nothing", setup: append(base, expiring("e", 22001, time.Hour)), cmd: extend("e", 0, t0), wantErr: ErrInvalid},
		{name: "extend past a year", setup: append(base, expiring("e", 22001, time.Hour)), cmd: extend("e", MaxTTL, t0), wantErr: ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) { runCommandCase(t, tc.setup, tc.cmd, tc.wantErr, tc.check) })
	}
	f := NewFSM(nil)
	applyAll(t, f, append(base, expiring("e", 22001, time.Hour), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22011))...)
	if got := f.ExpiredVMs(t0.Add(time.Hour)); len(got) != 1 || got[0].Name != "e" {
		t.Fatalf("expired at its time: %v", got)
	}
	if got := f.ExpiredVMs(t0.Add(time.Minute)); len(got) != 0 {
		t.Fatalf("expired before its time: %v", got)
	}
}
