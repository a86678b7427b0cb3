package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/testkit/testcluster"
)

// Blobs are removed only by the reference-aware collector: an old blob no
// image, ISO or VM references goes, a referenced one stays however old, and
// a blob a peer lost stops being recorded as held there.
func TestBlobGC_removes_only_unreferenced_old_blobs(t *testing.T) {
	c := testcluster.New(t, 2, testcluster.Options{})
	c.WaitLeader()
	a := c.Members[0]
	img := kit.Upload(t, c.Client(a), "tiny", kit.TinyImage(t))
	store := a.Peer.Images()
	orphan, _, err := store.Put(context.Background(), bytes.NewReader([]byte("nobody's")), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	young, _, err := store.Put(context.Background(), bytes.NewReader([]byte("just arrived")), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, d := range []string{orphan, img.Digest} {
		if err := os.Chtimes(store.Path(d), old, old); err != nil {
			t.Fatal(err)
		}
	}
	c.WaitFor("the old orphan collected", 10*time.Second, func() error {
		if store.Has(orphan) {
			return fmt.Errorf("still there")
		}
		return nil
	})
	if !store.Has(img.Digest) || !store.Has(young) {
		t.Fatalf("collected a referenced (%v) or young (%v) blob", !store.Has(img.Digest), !store.Has(young))
	}
	// A blob lost behind the peer's back is no longer recorded as held there.
	if err := os.Remove(store.Path(img.Digest)); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the lost blob's holder record dropped", 10*time.Second, func() error {
		if b, ok := a.Peer.FSM().Blob(img.Digest); ok && slices.Contains(b.Holders, a.Name) {
			return fmt.Errorf("holders %v", b.Holders)
		}
		return nil
	})
}
