package blobgc

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/fsmtest"
	"github.com/svc-project/svc/testkit/poll"
)

// ready is a replica caught up or not, counting the questions.
type ready struct {
	caught bool
	asked  atomic.Int32
}

func (r *ready) CaughtUp() bool { r.asked.Add(1); return r.caught }

// put stores a blob of content on this node and returns its digest.
func put(t *testing.T, images *imagestore.Store, content string) string {
	t.Helper()
	d, _, err := images.Put(context.Background(), strings.NewReader(content), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Which blobs one collection removes, and what it tells the cluster.
func TestCollector_Collect(t *testing.T) {
	a := fsmtest.New()
	now := time.Now().UTC().Truncate(time.Second)
	a.Must(t, raftfsm.TypeInit, raftfsm.TestInit("c1", now))
	images, err := imagestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var (
		orphan   = put(t, images, "no image references this")
		imaged   = put(t, images, "an image's content, held here")
		released = put(t, images, "an image's content, its cache here freed")
		unknown  = put(t, images, "not yet in the state")
		gone     = "sha256:" + strings.Repeat("ab", 32) // held here, says the state; not on disk
	)
	for i, c := range []struct {
		digest, holder string
	}{{imaged, "n1"}, {released, "n2"}, {gone, "n1"}} {
		a.Must(t, raftfsm.TypeImageCreate, raftfsm.ImageCreate{Image: raftfsm.Image{
			Name: []string{"img-a", "img-b", "img-c"}[i], Namespace: api.DefaultNamespace, Digest: c.digest, SizeBytes: 10, Format: "qcow2", State: raftfsm.ImageReady,
		}, Holder: c.holder})
	}
	// unknown is in the state's blobs but not referenced yet: a grace keeps it
	c := New(Config{Name: "n1", FSM: a.FSM, Images: images, Proposer: a, Ready: &ready{caught: true}, Grace: time.Hour, ReleaseGrace: 0})
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name, digest string
		kept         bool
	}{{"orphan within its grace", orphan, true}, {"held image", imaged, true}, {"freed cache", released, false}, {"unknown to the state", unknown, true}} {
		if images.Has(w.digest) != w.kept {
			t.Errorf("%s: kept %v, want %v", w.name, images.Has(w.digest), w.kept)
		}
	}
	if b, ok := a.FSM.Blob(gone); ok && slices.Contains(b.Holders, "n1") {
		t.Errorf("the record of a blob not on disk still names this node: %+v", b)
	}

	// Past the grace, the orphan goes too; the held image stays.
	c = New(Config{Name: "n1", FSM: a.FSM, Images: images, Proposer: a, Ready: &ready{caught: true}, Grace: 0, ReleaseGrace: 0})
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if images.Has(orphan) || !images.Has(imaged) {
		t.Fatalf("orphan kept %v, held image kept %v", images.Has(orphan), images.Has(imaged))
	}
}

// Run collects nothing until the replica has caught up.
func TestCollector_Run_waits_for_catch_up(t *testing.T) {
	a := fsmtest.New()
	a.Must(t, raftfsm.TypeInit, raftfsm.TestInit("c1", time.Now().UTC().Truncate(time.Second)))
	images, err := imagestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	orphan := put(t, images, "no image references this")
	run := func(r *ready, until func() bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c := New(Config{Name: "n1", FSM: a.FSM, Images: images, Proposer: a, Ready: r, Interval: time.Millisecond})
		done := make(chan struct{})
		go func() { c.Run(ctx); close(done) }()
		_ = poll.Until(ctx, 10*time.Second, poll.True(until)) // the caller checks what it awaited
		cancel()
		<-done
	}
	behind := &ready{}
	run(behind, func() bool { return behind.asked.Load() >= 5 })
	if behind.asked.Load() < 5 || !images.Has(orphan) {
		t.Fatalf("behind: asked %d times, orphan kept %v", behind.asked.Load(), images.Has(orphan))
	}
	run(&ready{caught: true}, func() bool { return !images.Has(orphan) })
	if images.Has(orphan) {
		t.Fatal("caught up: the orphan was not collected")
	}
}
