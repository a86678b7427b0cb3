package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/peer"
	"github.com/svc-project/svc/testkit/testcluster"
)

// kubectls are the kubectl binaries these machines have to test with: the
// oldest release there and the newest.
func kubectls(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, p := range []string{"/usr/lib/google-cloud-sdk/bin/kubectl.1.27", "/usr/bin/kubectl"} {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Skip("no kubectl on this machine")
	}
	return out
}

// kubectl runs bin with the kubeconfig file and args, and returns its
// output (stdout and stderr) and whether it exited 0.
func kubectl(t *testing.T, bin, file string, args ...string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", file}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// TestKubectl_dry_run_server_changes_nothing: kubectl's --dry-run=server
// (dryRun=All) on the door. Before, a dry-run delete deleted the VM and a
// dry-run create deployed one. Now both are refused, saying so, and
// nothing changes; without the flag the same calls act.
func TestKubectl_dry_run_server_changes_nothing(t *testing.T) {
	bins := kubectls(t)
	c, url, token := clusterWithVM(t, testcluster.Options{Prefix: "clikubectl"})
	file := filepath.Join(t.TempDir(), "kubeconfig")
	checkCLI(t, url, token, "", []string{"config", "kubeconfig", file}, 0, `Wrote context "svc"`)
	cl := c.Client(c.Members[0])
	const vmi = "virtualmachineinstances.orka.macstadium.com"
	manifest := filepath.Join(t.TempDir(), "vmi.yaml")
	if err := os.WriteFile(manifest, []byte("apiVersion: orka.macstadium.com/v1\nkind: VirtualMachineInstance\nmetadata:\n  name: dry\n  namespace: svc-default\nspec:\n  image: tiny\n  cpu: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bin := range bins {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			if out, ok := kubectl(t, bin, file, "get", vmi, "-n", "svc-default", "-o", "name"); !ok || !strings.Contains(out, "web-1") {
				t.Fatalf("kubectl get: %v\n%s", ok, out)
			}
			out, ok := kubectl(t, bin, file, "delete", vmi, "web-1", "-n", "svc-default", "--dry-run=server")
			if ok || !strings.Contains(out, "does not support dry runs") {
				t.Fatalf("kubectl delete --dry-run=server: exit 0 %v\n%s", ok, out)
			}
			if _, err := cl.GetVM(context.Background(), api.DefaultNamespace, "web-1"); err != nil {
				t.Fatalf("after a dry-run delete: %v", err)
			}
			out, ok = kubectl(t, bin, file, "create", "-f", manifest, "--dry-run=server", "--validate=false")
			if ok || !strings.Contains(out, "does not support dry runs") {
				t.Fatalf("kubectl create --dry-run=server: exit 0 %v\n%s", ok, out)
			}
			if _, err := cl.GetVM(context.Background(), api.DefaultNamespace, "dry"); api.CodeOf(err) != 404 {
				t.Fatalf("after a dry-run create, vm dry: %v", err)
			}
		})
	}
}

// TestKubectl_alias_tables_and_names: kubectl on orka-default (the
// README's `kubectl get vms -n orka-default`), as a new user meets it.
// Before, the list's items said svc-default and kubectl refused them ("the
// namespace from the provided object does not match"), tables showed NAME
// and AGE alone, a missing object's message named svc-default, and
// `kubectl get nodes` answered orkanodes. Now objects carry the namespace
// the caller named, tables have the columns people look for, NotFound is
// worded as Kubernetes words it, and nodes are no orkanodes' short name.
func TestKubectl_alias_tables_and_names(t *testing.T) {
	bins := kubectls(t)
	_, url, token := clusterWithVM(t, testcluster.Options{Prefix: "clikubealias", Configure: func(_ int, cfg *peer.Config) {
		cfg.NamespaceAlias = "orka-default"
	}})
	file := filepath.Join(t.TempDir(), "kubeconfig")
	checkCLI(t, url, token, "", []string{"config", "kubeconfig", file}, 0, `Wrote context "svc"`)
	for _, bin := range bins {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			for _, what := range []string{"vms", "images", "orkanodes", "virtualmachineconfigs"} {
				out, ok := kubectl(t, bin, file, "get", what, "-n", "orka-default", "-o", "json")
				if strings.Contains(out, "Warning: ") {
					t.Fatalf("kubectl get %s warns:\n%s", what, out)
				}
				var l struct {
					Items []struct {
						Metadata struct{ Namespace string }
					}
				}
				if !ok || json.Unmarshal([]byte(out), &l) != nil || slices.ContainsFunc(l.Items, func(i struct{ Metadata struct{ Namespace string } }) bool {
					return i.Metadata.Namespace != "orka-default"
				}) {
					t.Fatalf("kubectl get %s -n orka-default -o json: exit 0 %v\n%s", what, ok, out)
				}
			}
			out, ok := kubectl(t, bin, file, "get", "vms", "-n", "orka-default")
			header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
			if !ok || !slices.Equal(header, []string{"NAME", "STATUS", "NODE", "IP", "SSH", "IMAGE", "AGE"}) || !strings.Contains(out, "web-1") || !strings.Contains(out, "Running") {
				t.Fatalf("kubectl get vms: exit 0 %v\n%s", ok, out)
			}
			if out, ok := kubectl(t, bin, file, "get", "vms", "-n", "orka-default", "-o", "wide"); !ok || !strings.Contains(strings.SplitN(out, "\n", 2)[0], "VNC") {
				t.Fatalf("kubectl get vms -o wide: exit 0 %v\n%s", ok, out)
			}
			if out, ok := kubectl(t, bin, file, "get", "orkanodes", "-n", "orka-default"); !ok || !strings.Contains(out, "PHASE") || !strings.Contains(out, "READY") {
				t.Fatalf("kubectl get orkanodes: exit 0 %v\n%s", ok, out)
			}
			out, ok = kubectl(t, bin, file, "get", "vms", "nope", "-n", "orka-default")
			if ok || !strings.Contains(out, `virtualmachineinstances.orka.macstadium.com "nope" not found`) || strings.Contains(out, "svc-default") {
				t.Fatalf("kubectl get vms nope: exit 0 %v\n%s", ok, out)
			}
			if out, ok := kubectl(t, bin, file, "get", "nodes"); ok || strings.Contains(out, "orkanode") {
				t.Fatalf("kubectl get nodes answered orkanodes: exit 0 %v\n%s", ok, out)
			}
		})
	}
}

// TestKubectl_create_validates_against_the_doors_openapi: kubectl create
// -f with its default validation. Before, it failed at once ("failed to
// download openapi": /openapi/v3 and /openapi/v2 were 404) unless told
// --validate=false. Now the door serves both, from the types it decodes
// with: a VMI is created, and one with a field the kind lacks is refused
// naming it, before anything is made.
func TestKubectl_create_validates_against_the_doors_openapi(t *testing.T) {
	bins := kubectls(t)
	c, url, token := clusterWithVM(t, testcluster.Options{Prefix: "clikubeoapi"})
	file := filepath.Join(t.TempDir(), "kubeconfig")
	checkCLI(t, url, token, "", []string{"config", "kubeconfig", file}, 0, `Wrote context "svc"`)
	cl := c.Client(c.Members[0])
	for i, bin := range bins {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			name := fmt.Sprintf("made-%d", i)
			good := filepath.Join(t.TempDir(), "vmi.yaml")
			if err := os.WriteFile(good, []byte("apiVersion: orka.macstadium.com/v1\nkind: VirtualMachineInstance\nmetadata:\n  name: "+name+"\nspec:\n  image: tiny\n  cpu: 1\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, ok := kubectl(t, bin, file, "create", "-f", good, "-n", "svc-default"); !ok || !strings.Contains(out, name+" created") {
				t.Fatalf("kubectl create -f: exit 0 %v\n%s", ok, out)
			}
			if _, err := cl.GetVM(context.Background(), api.DefaultNamespace, name); err != nil {
				t.Fatalf("the VM kubectl created: %v", err)
			}
			bad := filepath.Join(t.TempDir(), "bad.yaml")
			if err := os.WriteFile(bad, []byte("apiVersion: orka.macstadium.com/v1\nkind: VirtualMachineInstance\nmetadata:\n  name: bad\nspec:\n  image: tiny\n  cpu: 1\n  colour: red\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, ok := kubectl(t, bin, file, "create", "-f", bad, "-n", "svc-default"); ok || !strings.Contains(out, "colour") {
				t.Fatalf("kubectl create -f with an unknown field: exit 0 %v\n%s", ok, out)
			} else {
				t.Logf("%s refused: %s", filepath.Base(bin), strings.TrimSpace(out))
			}
			if _, err := cl.GetVM(context.Background(), api.DefaultNamespace, "bad"); api.CodeOf(err) != 404 {
				t.Fatalf("vm bad: %v", err)
			}
		})
	}
}
