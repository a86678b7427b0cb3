package main

import (
	"context"
	"testing"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/testkit/testcluster"
)

// svc vm run exits with the guest program's status and passes stdin;
// svc vm resize grows the disk and refuses to shrink it.
func TestCLI_vm_run_and_resize(t *testing.T) {
	c, url, token := clusterWithVM(t, testcluster.Options{GuestAgent: true})
	cl := c.Client(c.Members[0])
	for _, tc := range []struct {
		name     string
		stdin    string
		args     []string
		wantCode int
		want     string
	}{
		{"output", "", []string{"vm", "run", "web-1", "--", "echo", "hi", "there"}, 0, "hi there\n"},
		{"stdin passed", "piped\n", []string{"vm", "run", "web-1", "--", "cat"}, 0, "piped\n"},
		{"the guest's exit status", "", []string{"vm", "run", "web-1", "--", "exit", "7"}, 7, ""},
		{"not found in the guest", "", []string{"vm", "run", "web-1", "--", "nosuch"}, 127, "not found"},
		{"no --", "", []string{"vm", "run", "web-1", "echo"}, 2, ""},
		{"an unknown VM", "", []string{"vm", "run", "nope", "--", "echo"}, 1, "not found"},
		{"resize", "", []string{"vm", "resize", "web-1", "3G"}, 0, "vm web-1: disk 3G\n"},
		{"never shrinks", "", []string{"vm", "resize", "web-1", "2G"}, 1, "never shrinks"},
		{"a bad size", "", []string{"vm", "resize", "web-1", "big"}, 2, ""},
		{"a bad port pair", "", []string{"vm", "port-forward", "web-1", "x:22"}, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) { checkCLI(t, url, token, tc.stdin, tc.args, tc.wantCode, tc.want) })
	}
	if vm, err := cl.GetVM(context.Background(), api.DefaultNamespace, "web-1"); err != nil || vm.DiskBytes != 3<<30 {
		t.Fatalf("after the resize: %d %v", vm.DiskBytes, err)
	}
}
