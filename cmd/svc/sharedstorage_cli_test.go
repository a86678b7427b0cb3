package main

import (
	"os"
	"strings"
	"testing"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/testkit/testcluster"
)

// Shared storage through the CLI (a fake hypervisor; the node's folder is a
// real mounted file system, so root): refused while the namespace has none,
// turned on with a bound, a VM deployed with the folder, turning it off and
// clearing it refused while that VM uses it, then both done.
func TestCLI_shared_storage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the node mounts its shared folders: needs root")
	}
	c, url, token := clusterWithVM(t, testcluster.Options{})
	m := c.Members[0]
	ns := api.DefaultNamespace
	steps := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"a deploy where the namespace has none", []string{"vm", "deploy", "--image", "tiny", "--name", "s1", "--cpu", "1", "--shared-storage"}, 1, "has no shared storage"},
		{"a bound it cannot read", []string{"namespace", "shared-storage", ns, "--max-size", "soon"}, 2, ""},
		{"a bound under 1G", []string{"namespace", "shared-storage", ns, "--max-size", "10M"}, 1, "out of range"},
		{"turned on", []string{"namespace", "shared-storage", ns, "--max-size", "2G"}, 0, "at most 2G per node"},
		{"a deploy with it", []string{"vm", "deploy", "--image", "tiny", "--name", "s1", "--cpu", "1", "--shared-storage"}, 0, "s1"},
		{"shown", []string{"namespace", "shared-storage", ns, "--show"}, 0, "NODE"},
		{"off while s1 uses it", []string{"namespace", "shared-storage", ns, "--off"}, 1, "use its shared storage"},
		{"a clear while s1 uses it", []string{"node", "shared-storage", "clear", m.Name, ns}, 1, "in use by its VMs s1"},
		{"--off with --show", []string{"namespace", "shared-storage", ns, "--off", "--show"}, 2, ""},
	}
	for _, tc := range steps {
		t.Run(tc.name, func(t *testing.T) { checkCLI(t, url, token, "", tc.args, tc.wantCode, tc.want) })
	}
	spec, ok := m.Fake.Spec(hypervisor.DomainName(m.Name, ns, "s1"))
	if !ok || spec.SharedDir == "" || !strings.HasPrefix(spec.SharedDir, m.DataDir) {
		t.Fatalf("s1's domain has shared folder %q (%v), want one under %s", spec.SharedDir, ok, m.DataDir)
	}
	checkCLI(t, url, token, "", []string{"vm", "delete", "s1"}, 0, "")
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"cleared", []string{"node", "shared-storage", "clear", m.Name, ns}, 0, "is empty"},
		{"off", []string{"namespace", "shared-storage", ns, "--off"}, 0, "shared storage off"},
		{"shown when off", []string{"namespace", "shared-storage", ns, "--show"}, 1, "has no shared storage"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkCLI(t, url, token, "", tc.args, tc.wantCode, tc.want) })
	}
}
