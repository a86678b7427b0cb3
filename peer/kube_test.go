package peer_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/httpapi/kube"
	"github.com/svc-project/svc/peer"
	"github.com/svc-project/svc/testkit/registrytest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// kubeClients are the Go clients Orka's tools are built on, pointed at a
// peer: client-go's discovery and a controller-runtime client whose scheme
// has Orka's kinds and the core pods.
func kubeClients(t testing.TB, c *testcluster.Cluster, m *testcluster.Member, token string) (*discovery.DiscoveryClient, client.WithWatch) {
	t.Helper()
	cfg := &rest.Config{Host: "http://" + m.Peer.APIAddr(), BearerToken: token, Timeout: time.Minute}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The client's calls are bounded by their contexts, not by the HTTP
	// client's Timeout: that bounds a whole request, and so cut every
	// watch at a minute (under load a real VM's save outlasted it, and the
	// watch "closed").
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 0
	// The client logs through controller-runtime's logger, which prints a
	// warning and a stack in every test that never set one: its log is
	// not what these tests check.
	ctrllog.SetLogger(logr.Discard())
	sch := runtime.NewScheme()
	if err := kube.AddToScheme(sch, kube.OrkaGroup); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	cl, err := client.NewWithWatch(cfg, client.Options{Scheme: sch})
	if err != nil {
		t.Fatal(err)
	}
	return dc, cl
}

// watchUntil watches list's objects named name in ns until done says an
// event ends the wait (its error, if any, fails the test).
func watchUntil(t testing.TB, cl client.WithWatch, list client.ObjectList, ns, name string, wait time.Duration, done func(watch.Event) (bool, error), opts ...client.ListOption) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	opts = append(opts, client.InNamespace(ns))
	if name != "" {
		opts = append(opts, client.MatchingFields{"metadata.name": name})
	}
	w, err := cl.Watch(ctx, list, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// What the watch last said: at a timeout, whether the object was
	// stuck or its last change never came.
	last := "no event"
	for {
		select {
		case <-ctx.Done():
			t.Fatalf("watching %s %s: no end within %s; the last event: %s", ns, name, wait, last)
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watching %s %s: the watch closed; the last event: %s", ns, name, last)
			}
			if b, err := json.Marshal(ev.Object); err == nil {
				last = fmt.Sprintf("%s %.2000s", ev.Type, b)
			}
			end, err := done(ev)
			if err != nil {
				t.Fatal(err)
			}
			if end {
				return
			}
		}
	}
}

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
	upload(t, admin, "tiny", tinyImage(t))
	orkaToolsFlow(t, c, c.Followers()[0], reg, orkaFlow{image: "tiny", wait: time.Minute})
}

// orkaFlow is what orkaToolsFlow builds from: the image of the VMI, the
// bound of each wait, and what to do with the guest once it runs (at the
// address and SSH port its status gives).
type orkaFlow struct {
	image   string
	wait    time.Duration
	running func(host string, port int)
}

// orkaToolsFlow runs the Packer plugin's flow with its clients against m,
// on orka-default (m's cluster has the alias), as a user: discovery, a VMI
// "builder" created and watched to Running (f.running then), saved as the
// image "built" through the images resource and watched to Ready, pushed to
// reg with its job followed as a pod to Succeeded, deleted.
func orkaToolsFlow(t *testing.T, c *testcluster.Cluster, m *testcluster.Member, reg *registrytest.Server, f orkaFlow) {
	t.Helper()
	const ons = "orka-default"
	admin := c.Client(m)
	if _, err := admin.SetRegistryCredential(ctx(t), ns, api.RegistryCredentialRequest{Server: reg.Host, Username: reg.Username, Password: reg.Password, AllowInsecure: true}); err != nil {
		t.Fatal(err)
	}
	dc, cl := kubeClients(t, c, m, c.Token("packer", false))

	groups, resources, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(groups, func(g *metav1.APIGroup) bool { return g.Name == kube.OrkaGroup }) {
		t.Fatalf("groups: %+v", groups)
	}
	found := map[string][]string{}
	for _, l := range resources {
		if l.GroupVersion == kube.OrkaGroup+"/v1" {
			for _, r := range l.APIResources {
				found[r.Name] = r.Verbs
			}
		}
	}
	for want, verbs := range map[string][]string{
		"virtualmachineinstances": {"get", "list", "watch", "create", "delete"},
		"images":                  {"get", "list", "watch", "create", "delete"},
		"virtualmachineconfigs":   {"get", "list", "create", "delete"}, // no watch: 405
		"orkanodes":               {"get", "list", "watch"},
	} {
		if !slices.Equal(found[want], verbs) {
			t.Fatalf("discovery: %s with verbs %v, want %v", want, found[want], verbs)
		}
	}
	if v, err := dc.ServerVersion(); err != nil || v.Major != "1" {
		t.Fatalf("version: %+v %v", v, err)
	}

	vmi := &kube.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: ons}, Spec: kube.VMISpec{Image: f.image, CPU: 1}}
	if err := cl.Create(ctx(t), vmi); err != nil {
		t.Fatal(err)
	}
	if vmi.ResourceVersion == "" || vmi.Status.Phase == "" {
		t.Fatalf("created: %+v", vmi)
	}
	var host string
	var port int
	watchUntil(t, cl, &kube.VirtualMachineInstanceList{}, ons, "builder", f.wait, func(ev watch.Event) (bool, error) {
		got, ok := ev.Object.(*kube.VirtualMachineInstance)
		if !ok {
			return false, fmt.Errorf("a %T event: %+v", ev.Object, ev.Object)
		}
		switch got.Status.Phase {
		case "Running":
			if got.Status.SSHPort == nil || got.Status.IP == "" {
				return false, fmt.Errorf("running with no address: %+v", got.Status)
			}
			host, port = got.Status.IP, *got.Status.SSHPort
			return true, nil
		case "Failed":
			return false, fmt.Errorf("failed: %s", got.Status.ErrorMessage)
		}
		return false, nil
	})
	rec, err := admin.GetVM(ctx(t), ns, "builder")
	if err != nil || rec.IP != host || rec.SSH != port {
		t.Fatalf("the VM %+v (%v) is not at %s:%d", rec, err, host, port)
	}
	if f.running != nil {
		f.running(host, port)
	}
	var vmis kube.VirtualMachineInstanceList
	if err := cl.List(ctx(t), &vmis, client.InNamespace(ons)); err != nil || len(vmis.Items) != 1 || vmis.ResourceVersion == "" {
		t.Fatalf("list: %+v %v", vmis, err)
	}

	img := &kube.Image{
		ObjectMeta: metav1.ObjectMeta{Name: "built", Namespace: ons},
		Spec:       kube.ImageSpec{Source: "builder", SourceNamespace: ons, SourceType: "vm", Destination: "built"},
	}
	if err := cl.Create(ctx(t), img); err != nil {
		t.Fatal(err)
	}
	watchUntil(t, cl, &kube.ImageList{}, ons, "built", f.wait, func(ev watch.Event) (bool, error) {
		got := ev.Object.(*kube.Image)
		switch got.Status.State {
		case "Ready":
			return true, nil
		case "Failed":
			return false, fmt.Errorf("the save failed: %s", got.Status.ErrorMessage)
		}
		return false, nil
	})

	// The push as the plugin makes it, then its job as a pod.
	pushCl := api.NewClient("http://"+m.Peer.APIAddr(), c.Token("packer", false))
	job, err := pushCl.PushVM(ctx(t), ons, "builder", reg.Host+"/team/built:v1")
	if err != nil {
		t.Fatal(err)
	}
	watchUntil(t, cl, &corev1.PodList{}, ons, "", f.wait, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("the push's pod was deleted")
		}
		p := ev.Object.(*corev1.Pod)
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			return true, nil
		case corev1.PodFailed:
			return false, fmt.Errorf("push failed: %s", p.Status.Message)
		}
		return false, nil
	}, client.MatchingLabels{"orka.macstadium.com/job.type": "registry-push", "batch.kubernetes.io/job-name": job.JobName})

	if err := cl.Delete(ctx(t), vmi); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the VMI gone", f.wait, func() error {
		err := cl.Get(ctx(t), client.ObjectKey{Namespace: ons, Name: "builder"}, &kube.VirtualMachineInstance{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("get after delete: %v", err)
		}
		return nil
	})
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
	upload(t, c.Client(m), "tiny", tinyImage(t))
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
	if vms, _ := cl.ListVMs(ctx(t), ns); len(vms) != 0 {
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
	upload(t, cl, "tiny", tinyImage(t))
	if _, err := cl.DeployVM(ctx(t), ns, api.DeployRequest{Image: "tiny", Name: "pre", CPU: intp(1)}); err != nil {
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
	if _, err := cl.ExecVM(ctx(t), ns, "pre", "stop"); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the VM stopped", 10*time.Second, func() error {
		if vm, err := cl.GetVM(ctx(t), ns, "pre"); err != nil || vm.Status != api.StatusStopped {
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
	if _, err := cl.GetVM(ctx(t), ns, "pre"); err != nil {
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
