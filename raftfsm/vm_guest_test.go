package raftfsm

import (
	"testing"

	"github.com/svc-project/svc/api"
)

func TestVMStatus_guest_reports(t *testing.T) {
	running := func(g *GuestReport) []byte {
		return mustEncode(t, TypeVMStatus, VMStatus{Namespace: api.DefaultNamespace, Name: "a", Node: "n1", Status: VMRunning, Guest: g})
	}
	setup := append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001))
	many := make([]string, MaxGuestIPs+5)
	for i := range many {
		many[i] = "10.0.0.1"
	}
	guest := func(t *testing.T, f *FSM) *GuestReport {
		vm, _ := f.VM(api.DefaultNamespace, "a")
		return vm.Guest
	}
	for _, tc := range []struct {
		name  string
		setup [][]byte
		cmd   []byte
		check func(*testing.T, *FSM)
	}{
		{"an agent answers", setup, running(&GuestReport{Agent: true, OS: "mini-linux", IPs: []string{"10.0.2.15"}}), func(t *testing.T, f *FSM) {
			if g := guest(t, f); g == nil || g.OS != "mini-linux" || len(g.IPs) != 1 {
				t.Fatalf("guest %+v", g)
			}
		}},
		{"addresses bounded", setup, running(&GuestReport{Agent: true, IPs: many}), func(t *testing.T, f *FSM) {
			if g := guest(t, f); g == nil || len(g.IPs) != MaxGuestIPs {
				t.Fatalf("guest %+v", g)
			}
		}},
		{"the agent went away", append(setup, running(&GuestReport{Agent: true, OS: "x"})), running(&GuestReport{}), func(t *testing.T, f *FSM) {
			if g := guest(t, f); g != nil {
				t.Fatalf("guest %+v after the agent went away", g)
			}
		}},
		{"a report without guest keeps it", append(setup, running(&GuestReport{Agent: true, OS: "x"})), running(nil), func(t *testing.T, f *FSM) {
			if g := guest(t, f); g == nil || g.OS != "x" {
				t.Fatalf("guest %+v", g)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { runCommandCase(t, tc.setup, tc.cmd, nil, tc.check) })
	}
}
