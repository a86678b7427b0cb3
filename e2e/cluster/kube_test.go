package cluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/httpapi/kube"
	"github.com/svc-project/svc/peer"
	"github.com/svc-project/svc/testkit/registrytest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// TestKube_orka_tools_flow: what Orka's Packer plugin does, with its
// clients, on orka-default (the alias), through a follower: discovery, a
// VMI created and watched to Running, saved as an image watched to Ready,
// pushed to a registry with the push job followed as a pod to Succeeded,
// and deleted.
func TestKube_orka_tools_flow(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	c := testcluster.New(t, 2, testcluster.Options{Configure: func(_ int, cfg *peer.Config) { cfg.NamespaceAlias = "orka-default" }})
	c.WaitLeader()
	admin := c.Client(c.Members[0])
	kit.Upload(t, admin, "tiny", kit.TinyImage(t))
	kit.OrkaToolsFlow(t, c, c.Followers()[0], reg, kit.OrkaFlow{Image: "tiny", Wait: time.Minute})
}

// manyLabels is a labelSelector of n requirements.
func manyLabels(n int) string {
	reqs := make([]string, n)
	for i := range reqs {
		reqs[i] = fmt.Sprintf("k%d%%3D%d", i, i)
	}
	return strings.Join(reqs, ",")
}

// TestKube_refusals: the door's bad input answers as a Kubernetes server
// does, in Status bodies: unknown kinds and versions 404, unknown fields
// of a create 400 naming them, an unsupported fieldSelector 400, a watch
// from a version this peer no longer has 410.
func TestKube_refusals(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	c.WaitLeader()
	m := c.Members[0]
	kit.Upload(t, c.Client(m), "tiny", kit.TinyImage(t))
	// Restarted, the peer resumes watches from its index at the restart.
	c.Stop(m)
	c.Restart(m)
	c.WaitCaughtUp(m)
	cl := c.Client(m)
	base := "http://" + m.Peer.APIAddr()
	token := c.Token("admin", true)
	call := func(method, path, body string) (int, api.Status, http.Header) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st api.Status
		_ = json.NewDecoder(resp.Body).Decode(&st)
		return resp.StatusCode, st, resp.Header
	}
	const vmis = "/apis/orka.macstadium.com/v1/namespaces/svc-default/virtualmachineinstances"
	for _, tc := range []struct {
		name, method, path, body string
		code                     int
		says                     string
	}{
		{name: "unknown kind", method: "GET", path: "/apis/orka.macstadium.com/v1/namespaces/svc-default/widgets", code: 404, says: "widgets"},
		{name: "unknown version", method: "GET", path: "/apis/orka.macstadium.com/v2/namespaces/svc-default/virtualmachineinstances", code: 404, says: "v2"},
		{name: "unknown group", method: "GET", path: "/apis/example.com/v1", code: 404, says: "example.com"},
		{name: "unknown spec field", method: "POST", path: vmis, body: `{"metadata":{"name":"x"},"spec":{"image":"tiny","cpu":1,"colour":"red","gpus":2}}`, code: 400, says: `unknown field "spec.colour", unknown field "spec.gpus"`},
		{name: "another kind's body", method: "POST", path: vmis, body: `{"kind":"Image","metadata":{"name":"x"}}`, code: 400, says: "Image"},
		{name: "unsupported fieldSelector", method: "GET", path: vmis + "?fieldSelector=spec.image%3Dtiny", code: 400, says: "spec.image"},
		{name: "ancient resourceVersion", method: "GET", path: vmis + "?watch=true&resourceVersion=1", code: 410, says: "too old"},
		{name: "no token", method: "GET", path: vmis, code: 401},
		{name: "update", method: "PUT", path: vmis + "/x", body: `{}`, code: 405},
		// A watch holds its selector: a long one, or one of many
		// requirements, held a megabyte of the peer per watch.
		{name: "a long labelSelector", method: "GET", path: vmis + "?watch=true&labelSelector=a%3D" + strings.Repeat("b", 5000), code: 400, says: "at most 4096"},
		{name: "a labelSelector of many requirements", method: "GET", path: vmis + "?labelSelector=" + manyLabels(40), code: 400, says: "40 requirements, at most 32"},
		{name: "a field named twice", method: "POST", path: vmis, body: `{"metadata":{"name":"x"},"spec":{"image":"tiny","cpu":1,"image":"other"}}`, code: 400, says: `duplicate field "spec.image"`},
		{name: "a dry run of a create", method: "POST", path: vmis + "?dryRun=All", body: `{"metadata":{"name":"x"},"spec":{"image":"tiny","cpu":1}}`, code: 400, says: "does not support dry runs"},
		{name: "a dry run of a delete", method: "DELETE", path: vmis + "/x?dryRun=All", code: 400, says: "does not support dry runs"},
		{name: "a dry run in DeleteOptions", method: "DELETE", path: vmis + "/x", body: `{"dryRun":["All"]}`, code: 400, says: "does not support dry runs"},
		{name: "a watch from a version of the future", method: "GET", path: vmis + "?watch=true&resourceVersion=99999999", code: 504, says: "Too large resource version: 99999999"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "no token" {
				resp, err := http.Get(base + tc.path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tc.code {
					t.Fatalf("%d, want %d", resp.StatusCode, tc.code)
				}
				return
			}
			code, st, _ := call(tc.method, tc.path, tc.body)
			if code != tc.code || st.Kind != "Status" || st.Code != tc.code || !strings.Contains(st.Message, tc.says) {
				t.Fatalf("%d %+v, want %d saying %q", code, st, tc.code, tc.says)
			}
		})
	}
	if vms, _ := cl.ListVMs(kit.Ctx(t), kit.NS); len(vms) != 0 {
		t.Fatalf("a refused create left %+v", vms)
	}
	// With fieldValidation=Warn the same create is taken, with a warning per field.
	code, _, h := call("POST", vmis+"?fieldValidation=Warn", `{"metadata":{"name":"warned"},"spec":{"image":"tiny","cpu":1,"colour":"red"}}`)
	if code != http.StatusCreated || !strings.Contains(strings.Join(h.Values("Warning"), " "), "spec.colour") {
		t.Fatalf("create with fieldValidation=Warn: %d, warnings %q", code, h.Values("Warning"))
	}
}

// TestKube_delete_preconditions_and_slow_bodies: a delete whose
// preconditions.resourceVersion is one the object changed after is 409
// (before, it deleted), one it did not change after deletes; a body that
// trickles in is 408 at the body deadline, as on /api/v1 (before, a
// create sent a byte every 5 s held its connection past 51 s).
func TestKube_delete_preconditions_and_slow_bodies(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{Prefix: "kubepre", Configure: func(_ int, cfg *peer.Config) {
		cfg.APILimits.BodyTimeout = 2 * time.Second
	}})
	m := c.WaitLeader()
	cl := c.Client(m)
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: "pre", CPU: kit.Intp(1)}); err != nil {
		t.Fatal(err)
	}
	base := "http://" + m.Peer.APIAddr() + "/apis/orka.macstadium.com/v1/namespaces/svc-default/virtualmachineinstances/"
	token := c.Token("admin", true)
	do := func(method, url, body string) (int, string) {
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, b.String()
	}
	version := func() string {
		code, body := do("GET", base+"pre", "")
		var o kube.VirtualMachineInstance
		if code != 200 || json.Unmarshal([]byte(body), &o) != nil || o.ResourceVersion == "" {
			t.Fatalf("GET: %d %s", code, body)
		}
		return o.ResourceVersion
	}
	stale := version()
	if _, err := cl.ExecVM(kit.Ctx(t), kit.NS, "pre", "stop"); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the VM stopped", 10*time.Second, func() error {
		if vm, err := cl.GetVM(kit.Ctx(t), kit.NS, "pre"); err != nil || vm.Status != api.StatusStopped {
			return fmt.Errorf("%+v %v", vm.Status, err)
		}
		return nil
	})
	precondition := func(rv string) string { return `{"preconditions":{"resourceVersion":"` + rv + `"}}` }
	if code, body := do("DELETE", base+"pre", precondition(stale)); code != http.StatusConflict || !strings.Contains(body, "modified") {
		t.Fatalf("a delete with a stale resourceVersion: %d %s, want 409", code, body)
	}
	if code, body := do("DELETE", base+"pre", precondition("notanumber")); code != http.StatusConflict {
		t.Fatalf("a delete with a resourceVersion that is none: %d %s, want 409", code, body)
	}
	if _, err := cl.GetVM(kit.Ctx(t), kit.NS, "pre"); err != nil {
		t.Fatalf("a refused delete deleted: %v", err)
	}
	if code, body := do("DELETE", base+"pre", precondition(version())); code != http.StatusOK {
		t.Fatalf("a delete with the object's resourceVersion: %d %s", code, body)
	}

	// A create whose body trickles in.
	conn, err := net.Dial("tcp", m.Peer.APIAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /apis/orka.macstadium.com/v1/namespaces/svc-default/virtualmachineinstances HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{", token)
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a trickling body within %s: %v", time.Since(start).Round(time.Second), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("a trickling body: %d after %s, want 408", resp.StatusCode, time.Since(start))
	}
	t.Logf("a trickling body: %d after %s", resp.StatusCode, time.Since(start).Round(time.Millisecond))
}
