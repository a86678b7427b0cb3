package kit

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/httpapi/kube"
	"github.com/svc-project/svc/testkit/registrytest"
	"github.com/svc-project/svc/testkit/testcluster"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// KubeClients are the Go clients Orka's tools are built on, pointed at a
// peer: client-go's discovery and a controller-runtime client whose scheme
// has Orka's kinds and the core pods.
func KubeClients(t testing.TB, c *testcluster.Cluster, m *testcluster.Member, token string) (*discovery.DiscoveryClient, client.WithWatch) {
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

// WatchUntil watches list's objects named name in ns until done says an
// event ends the wait (its error, if any, fails the test).
func WatchUntil(t testing.TB, cl client.WithWatch, list client.ObjectList, ns, name string, wait time.Duration, done func(watch.Event) (bool, error), opts ...client.ListOption) {
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

// OrkaFlow is what orkaToolsFlow builds from: the image of the VMI, the
// bound of each wait, and what to do with the guest once it runs (at the
// address and SSH port its status gives).
type OrkaFlow struct {
	Image   string
	Wait    time.Duration
	Running func(host string, port int)
}

// OrkaToolsFlow runs the Packer plugin's flow with its clients against m,
// on orka-default (m's cluster has the alias), as a user: discovery, a VMI
// "builder" created and watched to Running (f.running then), saved as the
// image "built" through the images resource and watched to Ready, pushed to
// reg with its job followed as a pod to Succeeded, deleted.
func OrkaToolsFlow(t *testing.T, c *testcluster.Cluster, m *testcluster.Member, reg *registrytest.Server, f OrkaFlow) {
	t.Helper()
	const ons = "orka-default"
	admin := c.Client(m)
	if _, err := admin.SetRegistryCredential(Ctx(t), NS, api.RegistryCredentialRequest{Server: reg.Host, Username: reg.Username, Password: reg.Password, AllowInsecure: true}); err != nil {
		t.Fatal(err)
	}
	dc, cl := KubeClients(t, c, m, c.Token("packer", false))

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

	vmi := &kube.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "builder", Namespace: ons}, Spec: kube.VMISpec{Image: f.Image, CPU: 1}}
	if err := cl.Create(Ctx(t), vmi); err != nil {
		t.Fatal(err)
	}
	if vmi.ResourceVersion == "" || vmi.Status.Phase == "" {
		t.Fatalf("created: %+v", vmi)
	}
	var host string
	var port int
	WatchUntil(t, cl, &kube.VirtualMachineInstanceList{}, ons, "builder", f.Wait, func(ev watch.Event) (bool, error) {
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
	rec, err := admin.GetVM(Ctx(t), NS, "builder")
	if err != nil || rec.IP != host || rec.SSH != port {
		t.Fatalf("the VM %+v (%v) is not at %s:%d", rec, err, host, port)
	}
	if f.Running != nil {
		f.Running(host, port)
	}
	var vmis kube.VirtualMachineInstanceList
	if err := cl.List(Ctx(t), &vmis, client.InNamespace(ons)); err != nil || len(vmis.Items) != 1 || vmis.ResourceVersion == "" {
		t.Fatalf("list: %+v %v", vmis, err)
	}

	img := &kube.Image{
		ObjectMeta: metav1.ObjectMeta{Name: "built", Namespace: ons},
		Spec:       kube.ImageSpec{Source: "builder", SourceNamespace: ons, SourceType: "vm", Destination: "built"},
	}
	if err := cl.Create(Ctx(t), img); err != nil {
		t.Fatal(err)
	}
	WatchUntil(t, cl, &kube.ImageList{}, ons, "built", f.Wait, func(ev watch.Event) (bool, error) {
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
	job, err := pushCl.PushVM(Ctx(t), ons, "builder", reg.Host+"/team/built:v1")
	if err != nil {
		t.Fatal(err)
	}
	WatchUntil(t, cl, &corev1.PodList{}, ons, "", f.Wait, func(ev watch.Event) (bool, error) {
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

	if err := cl.Delete(Ctx(t), vmi); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the VMI gone", f.Wait, func() error {
		err := cl.Get(Ctx(t), client.ObjectKey{Namespace: ons, Name: "builder"}, &kube.VirtualMachineInstance{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("get after delete: %v", err)
		}
		return nil
	})
}
