package cluster

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/peer"
	"github.com/svc-project/svc/testkit/syncbuf"
	"github.com/svc-project/svc/testkit/testcluster"
)

// TestNamespaceAlias_orka_default: with the agent's default alias, every
// call of Orka's plugins on orka-default (their hard-coded namespace)
// answers as on svc-default, with no admin step: the same images, VM
// configs, nodes and VMs; a deploy there is svc-default's VM. The alias
// shows in the namespace list and cannot be made a namespace of its own.
func TestNamespaceAlias_orka_default(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{Configure: func(_ int, cfg *peer.Config) { cfg.NamespaceAlias = "orka-default" }})
	c.WaitLeader()
	cl := c.Client(c.Members[0])
	const alias = "orka-default"
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	if _, err := cl.CreateVMConfig(kit.Ctx(t), api.DefaultNamespace, api.VMConfig{Name: "cfg", Image: "tiny", CPU: 1}); err != nil {
		t.Fatal(err)
	}
	images, err := cl.ListImages(kit.Ctx(t), alias)
	if err != nil || len(images) != 1 || images[0].Name != "tiny" {
		t.Fatalf("images of %s: %+v %v", alias, images, err)
	}
	configs, err := cl.ListVMConfigs(kit.Ctx(t), alias)
	if err != nil || len(configs) != 1 || configs[0].Name != "cfg" {
		t.Fatalf("vm configs of %s: %+v %v", alias, configs, err)
	}
	nodes, err := cl.ListNodes(kit.Ctx(t), alias, false)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes of %s: %+v %v", alias, nodes, err)
	}
	vm, err := cl.DeployVM(kit.Ctx(t), alias, api.DeployRequest{VMConfig: "cfg", Name: "built"})
	if err != nil {
		t.Fatal(err)
	}
	if vm.Namespace != api.DefaultNamespace {
		t.Fatalf("deployed in %q, want %s", vm.Namespace, api.DefaultNamespace)
	}
	if got, err := cl.GetVM(kit.Ctx(t), api.DefaultNamespace, "built"); err != nil || got.Status != api.StatusRunning {
		t.Fatalf("the VM in %s: %+v %v", api.DefaultNamespace, got, err)
	}
	nss, err := cl.ListNamespaces(kit.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(nss, func(n api.Namespace) bool { return n.Name == api.DefaultNamespace })
	if i < 0 || !slices.Equal(nss[i].Aliases, []string{alias}) || slices.ContainsFunc(nss, func(n api.Namespace) bool { return n.Name == alias }) {
		t.Fatalf("namespaces: %+v", nss)
	}
	if _, err := cl.CreateNamespace(kit.Ctx(t), alias); api.CodeOf(err) != http.StatusConflict {
		t.Fatalf("creating namespace %s: %v, want 409", alias, err)
	}
	if err := cl.DeleteVM(kit.Ctx(t), alias, "built"); err != nil {
		t.Fatal(err)
	}
	if vms, err := cl.ListVMs(kit.Ctx(t), api.DefaultNamespace); err != nil || len(vms) != 0 {
		t.Fatalf("after the delete through %s: %+v %v", alias, vms, err)
	}
}

// TestNamespaceAlias_off: without the alias, orka-default is a namespace
// name like any other (404 until an admin makes it).
func TestNamespaceAlias_off(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	c.WaitLeader()
	cl := c.Client(c.Members[0])
	if _, err := cl.ListImages(kit.Ctx(t), "orka-default"); api.CodeOf(err) != http.StatusNotFound {
		t.Fatalf("images of orka-default: %v, want 404", err)
	}
}

// TestNamespaceAlias_jenkins_test_connection replays the Jenkins plugin's
// own checks as it makes them, with a service account's token (the
// credential Jenkins keeps) and no admin step: Test Connection reads
// GET /api/v1/namespaces/orka-default/vmconfigs and succeeds on any 2xx
// with a JSON body; the namespace field's check reads that namespace's
// nodes, where 403 means "no access to namespace".
func TestNamespaceAlias_jenkins_test_connection(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{Configure: func(_ int, cfg *peer.Config) { cfg.NamespaceAlias = "orka-default" }})
	c.WaitLeader()
	admin := c.Client(c.Members[0])
	if _, err := admin.CreateNamespace(kit.Ctx(t), "orka-team"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateServiceAccount(kit.Ctx(t), "orka-default", "jenkins"); err != nil {
		t.Fatal(err)
	}
	tok, err := admin.ServiceAccountToken(kit.Ctx(t), "orka-default", "jenkins", api.TokenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + c.Members[0].Peer.APIAddr()
	for _, tc := range []struct {
		name, path string
		want       int
	}{
		{"Test Connection", "/api/v1/namespaces/orka-default/vmconfigs", http.StatusOK},
		{"the namespace check of orka-default", "/api/v1/namespaces/orka-default/nodes", http.StatusOK},
		{"the namespace check of a namespace it is not bound to", "/api/v1/namespaces/orka-team/nodes", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(kit.Ctx(t), http.MethodGet, base+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+tok.Token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("%s: the body is no JSON object: %v", tc.path, err)
			}
			if resp.StatusCode != tc.want {
				t.Fatalf("%s: %d %v, want %d", tc.path, resp.StatusCode, body, tc.want)
			}
		})
	}
}

// TestNamespaceAlias_subjects_are_canonical: a service account of the
// default namespace named through the alias ("orka-default:jenk") is the
// same subject as by the namespace's own name, in every rule. Before,
// remove-subject answered 200 and left svc-default:jenk bound, and
// add-subject answered 404.
func TestNamespaceAlias_subjects_are_canonical(t *testing.T) {
	const alias = "orka-default"
	c := testcluster.New(t, 1, testcluster.Options{Configure: func(_ int, cfg *peer.Config) { cfg.NamespaceAlias = alias }})
	c.WaitLeader()
	admin := c.Client(c.Members[0])
	if _, err := admin.CreateNamespace(kit.Ctx(t), "team"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateServiceAccount(kit.Ctx(t), api.DefaultNamespace, "jenk"); err != nil {
		t.Fatal(err)
	}
	bound := func() []string {
		t.Helper()
		got, err := admin.ListSubjects(kit.Ctx(t), "team")
		if err != nil {
			t.Fatal(err)
		}
		return got.ServiceAccounts
	}
	if _, err := admin.AddSubjects(kit.Ctx(t), "team", api.Subjects{ServiceAccounts: []string{alias + ":jenk"}}); err != nil {
		t.Fatalf("add-subject through the alias: %v", err)
	}
	if got := bound(); !slices.Equal(got, []string{api.DefaultNamespace + ":jenk"}) {
		t.Fatalf("bound %v, want the account by its namespace's own name", got)
	}
	if _, err := admin.RemoveSubjects(kit.Ctx(t), "team", api.Subjects{ServiceAccounts: []string{alias + ":jenk"}}); err != nil {
		t.Fatal(err)
	}
	if got := bound(); len(got) != 0 {
		t.Fatalf("after remove-subject through the alias, still bound: %v", got)
	}
}

// TestNamespaceAlias_over_an_existing_namespace: a cluster that had a
// namespace named orka-default before its agents had the alias (an
// upgrade). Before, that namespace's VMs and service accounts could no
// longer be listed or used, and nothing was logged. Now the alias stays
// off while the namespace exists (it answers by its own name), the peer
// logs why and what to do, and the alias comes back once it is deleted.
func TestNamespaceAlias_over_an_existing_namespace(t *testing.T) {
	const alias = "orka-default"
	var logs syncbuf.Buffer
	c := testcluster.New(t, 1, testcluster.Options{Prefix: "aliasup"})
	m := c.WaitLeader()
	cl := c.Client(m)
	if _, err := cl.CreateNamespace(kit.Ctx(t), alias); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateServiceAccount(kit.Ctx(t), alias, "builder"); err != nil {
		t.Fatal(err)
	}
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	// The upgrade: the peer starts again with the alias on.
	c.Stop(m)
	if err := c.RestartWith(m, func(cfg *peer.Config) {
		cfg.NamespaceAlias = alias
		cfg.Log = slog.New(slog.NewTextHandler(&logs, nil))
	}); err != nil {
		t.Fatal(err)
	}
	c.WaitLeader()
	c.WaitFor("the peer says the alias is off", 30*time.Second, func() error {
		if !strings.Contains(logs.String(), "the namespace alias is off") || !strings.Contains(logs.String(), "--namespace-alias") {
			return errors.New("not logged")
		}
		return nil
	})
	if sas, err := cl.ListServiceAccounts(kit.Ctx(t), alias); err != nil || len(sas) != 1 || sas[0].Name != "builder" {
		t.Fatalf("the namespace's service accounts: %+v %v", sas, err)
	}
	if imgs, err := cl.ListImages(kit.Ctx(t), alias); err != nil || len(imgs) != 0 {
		t.Fatalf("images of %s (its own, none): %+v %v", alias, imgs, err)
	}
	if err := cl.DeleteServiceAccount(kit.Ctx(t), alias, "builder"); err != nil {
		t.Fatal(err)
	}
	if err := cl.DeleteNamespace(kit.Ctx(t), alias); err != nil {
		t.Fatal(err)
	}
	if imgs, err := cl.ListImages(kit.Ctx(t), alias); err != nil || len(imgs) != 1 || imgs[0].Name != "tiny" {
		t.Fatalf("with the namespace gone, %s is the alias again: %+v %v", alias, imgs, err)
	}
}
