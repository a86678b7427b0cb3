package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/testkit/testcluster"
)

// watcher follows a watch of a namespace's VMs in the background.
type watcher struct {
	events chan api.WatchEvent
	done   chan error
	cancel context.CancelFunc
}

func watchVMs(cl *api.Client, namespace, rv string) *watcher {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{events: make(chan api.WatchEvent, 1000), done: make(chan error, 1), cancel: cancel}
	go func() {
		w.done <- cl.Watch(ctx, namespace, "vms", rv, func(ev api.WatchEvent) error {
			w.events <- ev
			return nil
		})
	}()
	return w
}

// next returns the next event about VM name of type typ (skipping others),
// and the last version seen.
func (w *watcher) next(t *testing.T, typ, name string) api.WatchEvent {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-w.events:
			var vm api.VM
			_ = json.Unmarshal(ev.Object, &vm)
			if ev.Type == typ && vm.Name == name {
				return ev
			}
		case err := <-w.done:
			t.Fatalf("the watch ended waiting for %s %s: %v", typ, name, err)
		case <-deadline:
			t.Fatalf("no %s event for %s", typ, name)
		}
	}
}

// A watch through a follower sees a deploy's ADDED and a delete's DELETED
// in order, resumes from its last version after the peer restarts (with
// what changed while it was down), and another namespace's watcher sees
// nothing of it; a version the peer no longer has is 410.
func TestWatch_through_a_follower_across_a_restart(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitLeader()
	f := c.Followers()[0]
	var other *testcluster.Member
	for _, m := range c.Members {
		if m != f && m != c.Leader() {
			other = m
		}
	}
	admin := c.Client(f)
	kit.TinyVM(t, admin, "seed", "")
	teamB := otherNamespaceClient(t, c, admin, f) // a service account of team-b
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	w := watchVMs(admin, kit.NS, "")
	defer w.cancel()
	w.next(t, "ADDED", "seed") // the list
	b := watchVMs(teamB, "team-b", "")
	defer b.cancel()
	if err := teamB.Watch(ctx, kit.NS, "vms", "", func(api.WatchEvent) error { return nil }); api.CodeOf(err) != http.StatusForbidden {
		t.Fatalf("team-b watches %s: %v", kit.NS, err)
	}

	// The writes go as a client following API.md sends them (sendWrite):
	// the test's three peers run beside the rest of CI.
	deploy := func(name string) error {
		_, err := admin.DeployVM(ctx, kit.NS, api.DeployRequest{Name: name, Image: "tiny", CPU: kit.Intp(1)})
		return err
	}
	if err := sendWrite(t, c, http.StatusConflict, func() error { return deploy("w1") }); err != nil {
		t.Fatal(err)
	}
	added := w.next(t, "ADDED", "w1")
	if err := sendWrite(t, c, http.StatusNotFound, func() error { return admin.DeleteVM(ctx, kit.NS, "w1") }); err != nil {
		t.Fatal(err)
	}
	deleted := w.next(t, "DELETED", "w1")
	if rv(t, deleted) <= rv(t, added) {
		t.Fatalf("DELETED at %s before ADDED at %s", deleted.ResourceVersion, added.ResourceVersion)
	}
	w.cancel()

	// The follower restarts; a VM is deleted while it is down; the watch
	// resumes from its last version on it and sees that, then more.
	c.Stop(f)
	if err := sendWrite(t, c, http.StatusNotFound, func() error { return c.Client(other).DeleteVM(ctx, kit.NS, "seed") }); err != nil {
		t.Fatal(err)
	}
	c.Restart(f)
	c.WaitCaughtUp(f)
	r := watchVMs(c.Client(f), kit.NS, deleted.ResourceVersion)
	defer r.cancel()
	r.next(t, "DELETED", "seed")
	if err := sendWrite(t, c, http.StatusConflict, func() error { return deploy("w2") }); err != nil {
		t.Fatal(err)
	}
	r.next(t, "ADDED", "w2")

	// team-b's watcher saw none of it (its list's BOOKMARK, an empty list,
	// is all it may have).
	for len(b.events) > 0 {
		if ev := <-b.events; ev.Type != "BOOKMARK" {
			t.Fatalf("another namespace's watcher got %+v", ev)
		}
	}
	// A version from before the peer's oldest is 410: list again.
	err := c.Client(f).Watch(ctx, kit.NS, "vms", "1", func(api.WatchEvent) error { return nil })
	if api.CodeOf(err) != http.StatusGone {
		t.Fatalf("a watch from version 1: %v", err)
	}
}

func rv(t *testing.T, ev api.WatchEvent) uint64 {
	t.Helper()
	var n uint64
	if err := json.Unmarshal([]byte(ev.ResourceVersion), &n); err != nil {
		t.Fatal(errors.New("resourceVersion " + ev.ResourceVersion))
	}
	return n
}
