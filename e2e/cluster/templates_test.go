package cluster

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/peer"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/testcluster"
)

// holderOf returns the member that holds image (the peer it was uploaded to).
func holderOf(t *testing.T, c *testcluster.Cluster, cl *api.Client, image string) *testcluster.Member {
	t.Helper()
	for _, n := range mustNodes(t, cl) {
		if slices.Contains(n.CachedImages, image) {
			return memberNamed(c, n.Name)
		}
	}
	t.Fatalf("no node holds %s", image)
	return nil
}

// waitWarm waits until the config's warmNodes are want.
func waitWarm(t *testing.T, c *testcluster.Cluster, cl *api.Client, config string, want ...string) api.VMConfig {
	t.Helper()
	return kit.WaitWarmFor(t, c, cl, 30*time.Second, config, want...)
}

// A warm config's node keeps a booted template; VMs of its shape start from
// it (startedFrom "template"), other shapes boot; a template whose memory
// file is cut short is dropped and the VM boots; turning warm off removes
// the template's files.
func TestTemplates_warm_config_restores_vms(t *testing.T) {
	c := testcluster.New(t, 2, testcluster.Options{Templates: 2, Capacity: raftfsm.Capacity{CPU: 16, MemoryBytes: 32 << 30}})
	cl := c.Client(c.Followers()[0])
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	holder := holderOf(t, c, cl, "tiny")
	cfg, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "ci", Image: "tiny", CPU: 1, Memory: 1, Warm: true})
	if err != nil || !cfg.Warm || cfg.WarmNodes == nil {
		t.Fatalf("create %+v %v", cfg, err)
	}
	waitWarm(t, c, cl, "ci", holder.Name)
	if n := kit.NodeByName(t, cl, holder.Name); n.Templates != 1 || n.TemplateBytes == 0 {
		t.Fatalf("the node record does not count its template: %d, %d bytes", n.Templates, n.TemplateBytes)
	}
	template := hypervisor.TemplatePrefix(holder.Name)
	memoryFiles := func() []string {
		files, _ := os.ReadDir(peer.VMDir(holder.DataDir))
		var out []string
		for _, f := range files {
			if filepath.Ext(f.Name()) == ".state" {
				out = append(out, f.Name())
			}
		}
		return out
	}
	if files := memoryFiles(); len(files) != 1 {
		t.Fatalf("memory files %v", files)
	}

	deploy := func(req api.DeployRequest, startedFrom string) api.VM {
		t.Helper()
		vm, err := cl.DeployVM(kit.Ctx(t), kit.NS, req)
		if err != nil {
			t.Fatal(err)
		}
		c.WaitFor(vm.Name+" started from "+startedFrom, 10*time.Second, func() error {
			got, err := cl.GetVM(kit.Ctx(t), kit.NS, vm.Name)
			if err != nil || got.StartedFrom != startedFrom {
				return fmt.Errorf("%+v %v", got.StartedFrom, err)
			}
			vm = got
			return nil
		})
		return vm
	}
	a := deploy(api.DeployRequest{VMConfig: "ci"}, "template")
	if a.Node != holder.Name {
		t.Fatalf("placed on %s, not the warm node %s", a.Node, holder.Name)
	}
	if spec, ok := holder.Fake.Spec(hypervisor.DomainName(holder.Name, kit.NS, a.Name)); !ok || spec.VNCPassword != a.VNCPassword || spec.Forwards[0].HostPort != a.SSH {
		t.Fatalf("restored domain %+v: not the VM's own ports and password", spec)
	}
	deploy(api.DeployRequest{Image: "tiny", CPU: kit.Intp(1), Memory: kit.Floatp(1), Node: holder.Name}, "template") // same shape, no config
	deploy(api.DeployRequest{Image: "tiny", CPU: kit.Intp(2), Memory: kit.Floatp(1), Node: holder.Name}, "boot")     // another shape

	// a memory file cut short: the deploy boots, the template is dropped
	for _, f := range memoryFiles() {
		if strings.HasPrefix(f, template) {
			if err := os.Truncate(filepath.Join(peer.VMDir(holder.DataDir), f), 3); err != nil {
				t.Fatal(err)
			}
		}
	}
	deploy(api.DeployRequest{VMConfig: "ci", Node: holder.Name}, "boot")
	waitWarm(t, c, cl, "ci")

	// warm off: the template's files go
	if _, err := cl.SetVMConfigWarm(kit.Ctx(t), kit.NS, "ci", true); err != nil {
		t.Fatal(err)
	}
	if got, err := cl.SetVMConfigWarm(kit.Ctx(t), kit.NS, "ci", false); err != nil || got.Warm {
		t.Fatalf("warm off: %+v %v", got, err)
	}
	c.WaitFor("the template's files removed", 10*time.Second, func() error {
		if files := memoryFiles(); len(files) != 0 {
			return fmt.Errorf("memory files %v", files)
		}
		return nil
	})
}

func TestTemplates_bad_input(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{Templates: 1})
	cl := c.Client(c.Members[0])
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	if _, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "plain", Image: "tiny"}); err != nil {
		t.Fatal(err)
	}
	// an image without content yet: a save held in its export
	release := make(chan struct{})
	defer close(release)
	c.Members[0].Fake.HoldExports(release)
	if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: "src", CPU: kit.Intp(1), Memory: kit.Floatp(1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.SaveVM(kit.Ctx(t), kit.NS, "src", api.SaveRequest{ImageName: "saving"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		call func() error
		code int
	}{
		{"warm on a registry reference", func() error {
			_, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "reg", Image: "127.0.0.1:1/a/b:1", Warm: true})
			return err
		}, http.StatusBadRequest},
		{"warm with gpu passthrough", func() error {
			_, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "gpu", Image: "tiny", GPUPassthrough: true, Warm: true})
			return err
		}, http.StatusBadRequest},
		{"warm bigger than every node", func() error {
			_, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "huge", Image: "tiny", Memory: 4096, Warm: true})
			return err
		}, http.StatusBadRequest},
		{"warm on an image not Ready", func() error {
			_, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "early", Image: "saving", Warm: true})
			return err
		}, http.StatusConflict},
		{"warm on an unknown config", func() error { _, err := cl.SetVMConfigWarm(kit.Ctx(t), kit.NS, "nope", true); return err }, http.StatusNotFound},
		{"a change without warm", func() error {
			return cl.Do(kit.Ctx(t), http.MethodPatch, "/api/v1/namespaces/"+kit.NS+"/vmconfigs/plain", map[string]any{}, nil)
		}, http.StatusBadRequest},
		{"a change of another field", func() error {
			return cl.Do(kit.Ctx(t), http.MethodPatch, "/api/v1/namespaces/"+kit.NS+"/vmconfigs/plain", map[string]any{"warm": true, "cpu": 2}, nil)
		}, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); api.CodeOf(err) != tc.code {
				t.Fatalf("got %v, want %d", err, tc.code)
			}
		})
	}
	if got, err := cl.GetVMConfig(kit.Ctx(t), kit.NS, "plain"); err != nil || got.Warm {
		t.Fatalf("a refused change changed the config: %+v %v", got, err)
	}
}

// A commit that moves a warm config's image makes its template a new
// shape: the node holding only the old content drops its template, and the
// node holding the new content (the committed VM's) builds one.
func TestTemplates_rebuilt_when_a_commit_moves_the_image(t *testing.T) {
	c := testcluster.New(t, 2, testcluster.Options{Templates: 2, Capacity: raftfsm.Capacity{CPU: 16, MemoryBytes: 32 << 30}})
	cl := c.Client(c.WaitLeader())
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	holder := holderOf(t, c, cl, "tiny")
	other := c.Members[0]
	if other == holder {
		other = c.Members[1]
	}
	if _, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "ci", Image: "tiny", CPU: 1, Memory: 1, Warm: true}); err != nil {
		t.Fatal(err)
	}
	waitWarm(t, c, cl, "ci", holder.Name)
	if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: "w", Node: other.Name, CPU: kit.Intp(2), Memory: kit.Floatp(1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CommitVM(kit.Ctx(t), kit.NS, "w", api.CommitRequest{}); err != nil {
		t.Fatal(err)
	}
	waitImage(t, c, cl, "tiny", api.ImageReady, 30*time.Second)
	waitWarm(t, c, cl, "ci", other.Name)
	c.WaitFor("the old template's files removed from "+holder.Name, 10*time.Second, func() error {
		entries, _ := os.ReadDir(peer.VMDir(holder.DataDir))
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), hypervisor.TemplatePrefix(holder.Name)) {
				return fmt.Errorf("left: %s", e.Name())
			}
		}
		return nil
	})
}
