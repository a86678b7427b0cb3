package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/svc-project/svc/httpapi/kube"
	"github.com/svc-project/svc/testkit/testcluster"
)

// TestCLI_kubeconfig_reaches_the_kubernetes_door: the kubeconfig the CLI
// writes (0600, other entries kept, its context current; the peer's HTTPS
// endpoint and the cluster's CA, as client-go sends a token over TLS
// alone) is one client-go loads as it is and lists the VM with, through
// the Kubernetes-style API.
func TestCLI_kubeconfig_reaches_the_kubernetes_door(t *testing.T) {
	_, url, token := clusterWithVM(t, testcluster.Options{Prefix: "clikube"})
	file := filepath.Join(t.TempDir(), "kube", "config")
	other := "apiVersion: v1\nkind: Config\nclusters:\n- name: other\n  cluster:\n    server: https://other.example:6443\ncontexts:\n- name: other\n  context:\n    cluster: other\ncurrent-context: other\n"
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(other), 0o600); err != nil {
		t.Fatal(err)
	}
	checkCLI(t, url, token, "", []string{"config", "kubeconfig", file}, 0, `Wrote context "svc"`)
	// Written again, svc's entries are replaced, not added.
	checkCLI(t, url, token, "", []string{"config", "kubeconfig", file}, 0, `Wrote context "svc"`)
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "name: svc\n"); n != 3 {
		t.Fatalf("%d entries named svc, want its cluster, user and context once each:\n%s", n, raw)
	}
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig %v: %v", st, err)
	}
	loaded, err := clientcmd.LoadFromFile(file)
	if err != nil || loaded.CurrentContext != "svc" || loaded.Clusters["other"] == nil {
		t.Fatalf("kubeconfig: %+v %v", loaded, err)
	}
	// What it says it wrote is what it wrote: the HTTPS address, not the
	// HTTP one the CLI was given.
	out, err := runSvc(t, url, token, "", "config", "kubeconfig", file)
	if server := loaded.Clusters["svc"].Server; err != nil || !strings.HasPrefix(server, "https://") || !strings.Contains(out, "("+server+")") {
		t.Fatalf("it wrote %s and said %q (%v)", server, out, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", file)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: kube.OrkaGroup, Version: kube.Version, Resource: "virtualmachineinstances"}
	l, err := dc.Resource(gvr).Namespace("svc-default").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("VMIs through the kubeconfig: %+v %v", l, err)
	}
	checkCLI(t, url, "", "", []string{"config", "kubeconfig", filepath.Join(t.TempDir(), "none")}, 1, "no token")
}
