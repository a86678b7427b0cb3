package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/node/leader"
	"github.com/svc-project/svc/testkit/testcluster"
)

// A cordoned node gets no VM (a deploy pinned to it says why), shows as
// such, keeps its VMs, and takes VMs again once uncordoned.
func TestOperate_cordon(t *testing.T) {
	c := testcluster.New(t, 2, testcluster.Options{})
	c.WaitLeader()
	admin := c.Client(c.Members[1])
	target := c.Members[0].Name
	kit.TinyVM(t, admin, "before", target)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := admin.CordonNode(ctx, kit.NS, target)
	if err != nil || n.Schedulable {
		t.Fatalf("cordon: %+v %v", n, err)
	}
	_, err = admin.DeployVM(ctx, kit.NS, api.DeployRequest{Name: "pinned", Image: "tiny", CPU: kit.Intp(1), Node: target})
	if api.CodeOf(err) != http.StatusConflict || !strings.Contains(err.Error(), "cordoned") {
		t.Fatalf("a deploy pinned to a cordoned node: %v", err)
	}
	for i := range 3 {
		vm, err := admin.DeployVM(ctx, kit.NS, api.DeployRequest{Name: fmt.Sprintf("free-%d", i), Image: "tiny", CPU: kit.Intp(1)})
		if err != nil || vm.Node == target {
			t.Fatalf("an unpinned deploy: %v on %s", err, vm.Node)
		}
	}
	nodes, err := admin.ListNodes(ctx, kit.NS, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if (n.Name == target) == n.Schedulable {
			t.Fatalf("node %s schedulable %v", n.Name, n.Schedulable)
		}
	}
	if vm, err := admin.GetVM(ctx, kit.NS, "before"); err != nil || vm.Status != "Running" {
		t.Fatalf("the cordoned node's VM: %+v %v", vm, err)
	}
	if n, err := admin.UncordonNode(ctx, kit.NS, target); err != nil || !n.Schedulable {
		t.Fatalf("uncordon: %+v %v", n, err)
	}
	if _, err := admin.DeployVM(ctx, kit.NS, api.DeployRequest{Name: "pinned", Image: "tiny", CPU: kit.Intp(1), Node: target}); err != nil {
		t.Fatalf("a pinned deploy after uncordon: %v", err)
	}
	// Only an admin cordons.
	user := api.NewClient("http://"+c.Members[0].Peer.APIAddr(), c.Token("alice", false))
	if _, err := user.CordonNode(ctx, kit.NS, target); api.CodeOf(err) != http.StatusForbidden {
		t.Fatalf("a user cordons: %v", err)
	}
}

// 20 deploys racing through every peer against a quota of 3 VMs create
// exactly 3; the others are refused naming the quota and the use.
func TestOperate_quota_racing_deploys(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitLeader()
	admin := c.Client(c.Members[0])
	kit.TinyVM(t, admin, "seed", "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := admin.DeleteVM(ctx, kit.NS, "seed"); err != nil {
		t.Fatal(err)
	}
	q, err := admin.SetQuota(ctx, kit.NS, api.Quota{VMs: 3})
	if err != nil || q.Quota == nil || q.Quota.VMs != 3 {
		t.Fatalf("set quota: %+v %v", q, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, refused := 0, 0
	for i := range 20 {
		cl := c.Client(c.Members[i%3])
		wg.Go(func() {
			_, err := cl.DeployVM(ctx, kit.NS, api.DeployRequest{Name: fmt.Sprintf("race-%d", i), Image: "tiny", CPU: kit.Intp(1), Memory: ptr(0.25)})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created++
			case api.CodeOf(err) == http.StatusForbidden && strings.Contains(err.Error(), "quota of VMs") && strings.Contains(err.Error(), "3 in use"):
				refused++
			default:
				t.Errorf("deploy %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	vms, err := admin.ListVMs(ctx, kit.NS)
	if err != nil || created != 3 || refused != 17 || len(vms) != 3 {
		t.Fatalf("created %d, refused %d, %d VMs listed (%v)", created, refused, len(vms), err)
	}
	q, err = admin.GetQuota(ctx, kit.NS)
	if err != nil || q.Used.VMs != 3 || q.Used.CPU != 3 {
		t.Fatalf("use: %+v %v", q, err)
	}
	if got, err := admin.GetNamespace(ctx, kit.NS); err != nil || got.Used == nil || got.Used.VMs != 3 || got.Quota == nil || got.Quota.VMs != 3 {
		t.Fatalf("namespace record %+v %v", got, err)
	}
	for _, bad := range []api.Quota{{CPU: -1}, {Memory: -2}, {VMs: 1 << 30}} {
		if _, err := admin.SetQuota(ctx, kit.NS, bad); api.CodeOf(err) != http.StatusBadRequest {
			t.Errorf("quota %+v: %v", bad, err)
		}
	}
	// A body the quota does not know (a typo of a field, a key given
	// twice) is refused, not read as "no bound".
	for _, body := range []string{`{"x":1}`, `{"vms":3,"memroy":1}`, `{"vms":3,"vms":0}`} {
		if err := admin.Do(ctx, http.MethodPut, "/api/v1/namespaces/"+kit.NS+"/quota", json.RawMessage(body), nil); api.CodeOf(err) != http.StatusBadRequest {
			t.Errorf("quota %s: %v", body, err)
		}
	}
	if q, err := admin.GetQuota(ctx, kit.NS); err != nil || q.Quota == nil || q.Quota.VMs != 3 {
		t.Fatalf("the refused bodies changed the quota: %+v %v", q, err)
	}
	// No bound left: the next deploy passes.
	if _, err := admin.SetQuota(ctx, kit.NS, api.Quota{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.DeployVM(ctx, kit.NS, api.DeployRequest{Name: "after", Image: "tiny", CPU: kit.Intp(1), Memory: ptr(0.25)}); err != nil {
		t.Fatalf("a deploy with the quota removed: %v", err)
	}
}

// A VM with a 5 s time-to-live is deleted, its domain removed, within the
// documented delay, also when the leader is killed in between; extend moves
// an expiry.
func TestOperate_ttl_across_a_leader_kill(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	l := c.WaitLeader()
	var via *testcluster.Member
	for _, m := range c.Members {
		if m != l {
			via = m
		}
	}
	cl := c.Client(via)
	kit.TinyVM(t, cl, "seed", "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	vm, err := cl.DeployVM(ctx, kit.NS, api.DeployRequest{Name: "short", Image: "tiny", CPU: kit.Intp(1), TTL: "5s", Node: via.Name})
	if err != nil || vm.ExpiresAt == nil {
		t.Fatalf("deploy with a ttl: %+v %v", vm, err)
	}
	if d := vm.ExpiresAt.Sub(vm.DeployDate); d != 5*time.Second {
		t.Fatalf("expires %s after its deploy", d)
	}
	c.Crash(l)
	// The documented bound: the expiry, a leader election and one pass.
	deadline := time.Until(*vm.ExpiresAt) + 10*time.Second + leader.ExpiryInterval
	c.WaitFor("the expired VM deleted by the next leader", deadline, func() error {
		if _, err := cl.GetVM(ctx, kit.NS, "short"); api.CodeOf(err) != http.StatusNotFound {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	c.WaitFor("its domain removed", 10*time.Second, func() error {
		doms, err := via.Fake.List(ctx)
		if err != nil {
			return err
		}
		for _, d := range doms {
			if strings.HasSuffix(d.Name, ".short") {
				return fmt.Errorf("domain %s", d.Name)
			}
		}
		return nil
	})
	// Extend: from the expiry; a VM without one is refused.
	long, err := cl.DeployVM(ctx, kit.NS, api.DeployRequest{Name: "long", Image: "tiny", CPU: kit.Intp(1), TTL: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	ext, err := cl.ExtendVM(ctx, kit.NS, "long", "30m")
	if err != nil || ext.ExpiresAt == nil || ext.ExpiresAt.Sub(*long.ExpiresAt) != 30*time.Minute {
		t.Fatalf("extend: %+v %v", ext.ExpiresAt, err)
	}
	if _, err := cl.ExtendVM(ctx, kit.NS, "seed", "1h"); api.CodeOf(err) != http.StatusConflict {
		t.Fatalf("extend a VM without a ttl: %v", err)
	}
	for _, bad := range []string{"", "soon", "-1h", "9000h"} {
		if _, err := cl.ExtendVM(ctx, kit.NS, "long", bad); api.CodeOf(err) != http.StatusBadRequest {
			t.Errorf("extend by %q: %v", bad, err)
		}
		if bad == "" {
			continue // no ttl: a VM that never expires
		}
		if _, err := cl.DeployVM(ctx, kit.NS, api.DeployRequest{Name: "bad", Image: "tiny", CPU: kit.Intp(1), TTL: bad}); api.CodeOf(err) != http.StatusBadRequest {
			t.Errorf("deploy with ttl %q: %v", bad, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }
